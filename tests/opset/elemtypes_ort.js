// The ONNX Runtime side of tests/opset/elemtypes.py: runs many small models in
// one node process (one process per model would cost ~0.3 s each), each as
// tests/realmodels/ort_ref.js runs one.
// usage: node elemtypes_ort.js LIST.json
// LIST: [SPEC, ...] as ort_ref.js takes them ({"model", "outdir", "inputs"}).
// For each SPEC writes outdir/output_I.bin and outdir/outputs.json, or
// outdir/ort_error.txt when ONNX Runtime refuses the model (no kernel for
// the type, say): that pair has no reference.
"use strict";
const fs = require("fs");
const path = require("path");
const {runSpec} = require("../realmodels/ort_ref.js");

async function main() {
  for (const spec of JSON.parse(fs.readFileSync(process.argv[2], "utf8"))) {
    try {
      await runSpec({...spec, quiet: true});
    } catch (e) {
      fs.writeFileSync(path.join(spec.outdir, "ort_error.txt"), String(e).split("\n")[0]);
    }
  }
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
