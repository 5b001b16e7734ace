// Runs one model with ONNX Runtime (npm onnxruntime-node) on several sets of
// float32 inputs in one session (one process: tests/realmodels/buckets.py
// evaluates a model at every length) and writes each run's raw outputs.
// usage: node ort_runs.js SPEC.json
// SPEC: {"model": path, "runs": [{"outdir": dir,
//        "inputs": [{"name", "dims", "file"}]}]}
// Writes outdir/output_I.bin and outdir/outputs.json ([{name, dims}]) per run.
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  // One thread and no graph rewrites: the plainest reference ORT can give.
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled"});
  for (const run of spec.runs) {
    const feeds = {};
    for (const inp of run.inputs) {
      const copy = new Uint8Array(fs.readFileSync(inp.file));  // aligned
      feeds[inp.name] = new ort.Tensor("float32",
          new Float32Array(copy.buffer, 0, copy.byteLength / 4), inp.dims);
    }
    const results = await session.run(feeds);
    const meta = session.outputNames.map((name, i) => {
      const t = results[name];
      fs.writeFileSync(path.join(run.outdir, `output_${i}.bin`),
                       Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      return {name, dims: t.dims};
    });
    fs.writeFileSync(path.join(run.outdir, "outputs.json"), JSON.stringify(meta));
  }
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
