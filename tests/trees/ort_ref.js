// Runs models with ONNX Runtime (npm onnxruntime-node) on raw little-endian
// inputs of any numeric type and writes each output's raw bytes: the
// reference side of tests/trees (make_cases.py). One process for every job,
// as node's start-up dominates.
// usage: node ort_ref.js JOBS.json
//   JOBS.json: [{"model": M, "outdir": D, "inputs": [{"name", "file", "type", "dims"}]}]
//   type: float32, float64, int32 or int64; outputs go to D/output_I.bin
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

const arrays = {float32: Float32Array, float64: Float64Array, int32: Int32Array,
                int64: BigInt64Array};

async function run(job) {
  const feeds = {};
  for (const i of job.inputs) {
    const buf = fs.readFileSync(i.file);
    const data = new arrays[i.type](buf.buffer.slice(buf.byteOffset,
                                                     buf.byteOffset + buf.byteLength));
    feeds[i.name] = new ort.Tensor(i.type, data, i.dims);
  }
  const session = await ort.InferenceSession.create(job.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled"});
  const results = await session.run(feeds);
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    fs.writeFileSync(path.join(job.outdir, `output_${i}.bin`),
                     Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  });
}

async function main() {
  for (const job of JSON.parse(fs.readFileSync(process.argv[2])))
    await run(job);
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
