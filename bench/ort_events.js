#!/usr/bin/env node
// ort_events.js - the ONNX Runtime side of bench/buckets.py: the model with
// a dynamic particle axis run event by event at each event's longest jet
// (at least PMIN: a kNN needs k + 1 points), the way CMSSW runs ParticleNet
// with a dynamic axis. The jets are the same files buckets_time.c reads.
//
//   node ort_events.js SPEC.json
//
// SPEC: {"model", "pmax", "pmin", "reps", "events": int64 file, "lengths":
//        int64 file, "inputs": [{"name", "channels", "file"}] (float32 [J, C,
//        pmax]), "out": file (first output of every jet)}
// Session: one intra-op and one inter-op thread, all graph optimizations,
// sequential execution. The tensors of every event are made before timing;
// the timed call is `await session.run(feeds)`. Prints one JSON line: the
// median over reps passes of the CPU time per event (ns), empty events
// counted (not run).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function int64s(path) {
  const b = fs.readFileSync(path);
  return Array.from(new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)), Number);
}

function cpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const events = int64s(spec.events), lengths = int64s(spec.lengths);
  const P = spec.pmax;
  const arrays = spec.inputs.map((s) => {
    const b = fs.readFileSync(s.file);
    return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  });
  const feedsOf = [];
  let first = 0;
  for (const n of events) {
    if (n === 0) {
      feedsOf.push(null);
      continue;
    }
    let L = spec.pmin;
    for (let j = first; j < first + n; j++) L = Math.max(L, lengths[j]);
    const feeds = {};
    spec.inputs.forEach((s, i) => {
      const C = s.channels, data = new Float32Array(n * C * L);
      for (let j = 0; j < n; j++)
        for (let c = 0; c < C; c++)
          data.set(arrays[i].subarray(((first + j) * C + c) * P, ((first + j) * C + c) * P + L),
                   (j * C + c) * L);
      feeds[s.name] = new ort.Tensor('float32', data, [n, C, L]);
    });
    feedsOf.push(feeds);
    first += n;
  }
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential'});
  const per = [];
  let outs = [];
  for (let r = 0; r < spec.reps; r++) {
    let t = 0;
    outs = [];
    for (const feeds of feedsOf) {
      if (!feeds)
        continue;
      const t0 = cpuNs();
      const res = await session.run(feeds);
      t += cpuNs() - t0;
      outs.push(res[session.outputNames[0]].data);
    }
    per.push(t / Math.max(events.length, 1));
  }
  per.sort((a, b) => a - b);
  const total = outs.reduce((a, o) => a + o.length, 0), all = new Float32Array(total);
  let at = 0;
  for (const o of outs) {
    all.set(o, at);
    at += o.length;
  }
  fs.writeFileSync(spec.out, Buffer.from(all.buffer));
  console.log(JSON.stringify({ort_ns_per_event: per[Math.floor(per.length / 2)]}));
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
