// The ONNX Runtime side of tests/opset/elemtypes.py: runs many small models in
// one node process (one process per model would cost ~0.3 s each).
// usage: node types_ort.js LIST.json
// LIST: [{"model", "outdir", "inputs": [{"name", "type", "dims", "file"}]}]
// For each entry writes outdir/output_I.bin and outdir/outputs.json, or
// outdir/ort_error.txt when ONNX Runtime refuses the model (no kernel for
// the type, say): that pair has no reference.
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

async function one(spec) {
  const feeds = {};
  for (const inp of spec.inputs) {
    const copy = new Uint8Array(fs.readFileSync(inp.file));  // aligned
    const T = ARRAYS[inp.type];
    feeds[inp.name] = new ort.Tensor(inp.type,
        new T(copy.buffer, 0, copy.byteLength / T.BYTES_PER_ELEMENT), inp.dims);
  }
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "disabled",
    logSeverityLevel: 3});
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

async function main() {
  for (const spec of JSON.parse(fs.readFileSync(process.argv[2], "utf8"))) {
    try {
      await one(spec);
    } catch (e) {
      fs.writeFileSync(path.join(spec.outdir, "ort_error.txt"), String(e).split("\n")[0]);
    }
  }
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
