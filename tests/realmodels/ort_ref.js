// Runs a model with ONNX Runtime (npm onnxruntime-node) on raw inputs of any
// numeric or bool type and writes the raw outputs: the reference side of
// tests/realmodels/run.py, which turns them into ONNX test-data folders.
// usage: node ort_ref.js SPEC.json
// SPEC: {"model": path, "outdir": dir,
//        "inputs": [{"name", "type" (ORT type name), "dims", "file"}],
//        "optimization": ORT's graphOptimizationLevel (optional, default
//        "disabled"; "all" lets ORT fuse QDQ chains into its integer kernels)}
// Writes outdir/output_I.bin and outdir/outputs.json ([{name, type, dims}]).
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array,
  float16: Uint16Array,  // bit patterns
};

// Runs one SPEC (an object); also used by tests/opset/elemtypes_ort.js, which
// runs many in one process. spec.quiet: ORT logs errors only.
async function runSpec(spec) {
  const feeds = {};
  for (const inp of spec.inputs) {
    const buf = fs.readFileSync(inp.file);
    const T = ARRAYS[inp.type];
    const copy = new Uint8Array(buf);  // aligned
    const data = new T(copy.buffer, 0, copy.byteLength / T.BYTES_PER_ELEMENT);
    feeds[inp.name] = new ort.Tensor(inp.type, data, inp.dims);
  }
  // One thread and, unless the spec asks, no graph rewrites: the plainest
  // reference ORT can give.
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1,
    graphOptimizationLevel: spec.optimization || "disabled",
    ...(spec.quiet ? {logSeverityLevel: 3} : {})});
  const results = await session.run(feeds);
  const meta = session.outputNames.map((name, i) => {
    const t = results[name];
    const bytes = t.type === "bool" ? Buffer.from(Uint8Array.from(t.data, (b) => (b ? 1 : 0)))
                                    : Buffer.from(t.data.buffer, t.data.byteOffset,
                                                  t.data.byteLength);
    fs.writeFileSync(path.join(spec.outdir, `output_${i}.bin`), bytes);
    return {name, type: t.type, dims: t.dims};
  });
  fs.writeFileSync(path.join(spec.outdir, "outputs.json"), JSON.stringify(meta));
}
module.exports = {runSpec};
if (require.main === module) {
  runSpec(JSON.parse(fs.readFileSync(process.argv[2], "utf8")))
      .catch((e) => { console.error(String(e)); process.exit(1); });
}
