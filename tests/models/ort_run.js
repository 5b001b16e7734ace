// Runs an ONNX model with ONNX Runtime (npm package onnxruntime-node) on raw
// float32 inputs and writes its outputs as raw little-endian files: the
// reference side of kiln's end-to-end tests (see make_refs.py).
// usage: node ort_run.js MODEL OUTDIR NAME=FILE:d0,d1,... [NAME=FILE:dims ...]
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

async function main() {
  const [model, outdir, ...specs] = process.argv.slice(2);
  const feeds = {};
  for (const spec of specs) {
    const [name, rest] = spec.split("=");
    const [file, dims] = rest.split(":");
    const buf = fs.readFileSync(file);
    const data = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    feeds[name] = new ort.Tensor("float32", Float32Array.from(data),
                                 dims ? dims.split(",").map(Number) : []);
  }
  // One thread and no graph rewrites: the plainest reference ORT can give.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled"});
  const results = await session.run(feeds);
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    fs.writeFileSync(path.join(outdir, `output_${i}.bin`), Buffer.from(t.data.buffer));
    fs.writeFileSync(path.join(outdir, `output_${i}.dims`), t.dims.join(","));
  });
}
main().catch((e) => { console.error(e); process.exit(1); });
