#!/usr/bin/env node
// ort_time.js - one timing run of ONNX Runtime (onnxruntime-node, from
// NODE_PATH: scripts/install-ort.sh) for bench/compare.sh, the peer of
// kiln_time.c: same input files, same warm-up and stopping rule, outputs
// written for the same comparison.
//
//   node ort_time.js MODEL SPEC.json MIN_TIME MIN_CALLS SLOW
//
// SPEC.json: {"batch": B, "inputs": [{"name", "dtype": "float32"|"int64", "shape", "file"}],
//             "outputs": [{"name", "file"}]}
// Session: one intra-op and one inter-op thread, all graph optimizations,
// sequential execution (ORT's defaults otherwise: CPU arena, memory pattern).
// The timed call is `await session.run(feeds)`, binding included (the
// _probe_add row of the table measures that per-call floor).
// Prints one JSON object like kiln_time's (CPU time: process.cpuUsage(), all
// the process's threads, microsecond resolution); rss_before is read after the
// input tensors exist and before the session is created.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function tensor(spec) {
  const buf = fs.readFileSync(spec.file);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const n = spec.shape.reduce((a, b) => a * b, 1);
  let data;
  if (spec.dtype === 'float32') data = new Float32Array(ab);
  else if (spec.dtype === 'int64') data = new BigInt64Array(ab);
  else throw new Error(`${spec.file}: unsupported dtype ${spec.dtype}`);
  if (data.length !== n) throw new Error(`${spec.file}: ${data.length} elements, expected ${n}`);
  return new ort.Tensor(spec.dtype, data, spec.shape);
}

function hwm() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch (e) {
    return 0;
  }
}

async function main() {
  const [model, specFile, minTimeS, minCallsS, slowS] = process.argv.slice(2);
  const spec = JSON.parse(fs.readFileSync(specFile, 'utf8'));
  const minNs = Number(minTimeS) * 1e9, minCalls = Number(minCallsS);
  const feeds = {};
  for (const s of spec.inputs) feeds[s.name] = tensor(s);
  const rssBefore = process.memoryUsage.rss();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const now = () => Number(process.hrtime.bigint());
  let out, warm = 0, start = now();
  do {
    out = await session.run(feeds);
    warm++;
  } while (now() - start < 0.2 * minNs);
  const t = [];
  const est = (now() - start) / warm;
  const calls = est > Number(slowS) * 1e9 ? 1 : minCalls; // as kiln_time: one call is enough then
  const cpu0 = process.cpuUsage();
  start = now();
  const tc = [];
  while (t.length < calls || now() - start < minNs) {
    const s = now(), c = process.cpuUsage();
    out = await session.run(feeds);
    const dc = process.cpuUsage(c);
    t.push(now() - s);
    tc.push((dc.user + dc.system) * 1000);
  }
  const wallMean = (now() - start) / t.length;
  const cpu = process.cpuUsage(cpu0);
  const rssAfter = process.memoryUsage.rss();
  t.sort((a, b) => a - b);
  tc.sort((a, b) => a - b);
  for (const o of spec.outputs) {
    const v = out[o.name];
    if (!v) throw new Error(`no output ${o.name}`);
    fs.writeFileSync(o.file, Buffer.from(v.data.buffer, v.data.byteOffset, v.data.byteLength));
  }
  const n = t.length;
  process.stdout.write(JSON.stringify({
    engine: 'ort', batch: spec.batch, calls: n, warmup_calls: warm,
    median_ns: t[Math.floor(n / 2)], p10_ns: t[Math.floor(n / 10)],
    p90_ns: t[Math.floor(n * 9 / 10)], min_ns: t[0],
    mean_ns: wallMean, cpu_median_ns: tc[Math.floor(n / 2)], cpu_mean_ns: (cpu.user + cpu.system) * 1000 / n,
    rss_before: rssBefore, rss_after: rssAfter, hwm: hwm(),
  }) + '\n');
}

main().catch((e) => { console.error(`ort_time: ${e.message || e}`); process.exit(3); });
