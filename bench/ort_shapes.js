#!/usr/bin/env node
// Copied into kiln from ../shared/bench-models/ort_shapes.js with
// make_models.py; onnxruntime-node comes from NODE_PATH (scripts/install-ort.sh).
// Run an ONNX model once with onnxruntime-node (graph optimizations disabled)
// and print the shape of every graph output as JSON.  make_models.py uses it
// on a copy of each model in which every intermediate tensor is a graph
// output, to get exact shapes for FLOP counting (ONNX 1.12 shape inference
// cannot resolve Einsum or some Expand/Reshape chains).
//
//   node ort_shapes.js <model.onnx> <inputs.json>
// inputs.json: [{name, dtype: "float32"|"int64", shape: [...], file: "/abs/x.bin"}]
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const cands = [process.env.ORT_NODE_DIR, 'onnxruntime-node'];
  for (const c of cands) {
    if (!c) continue;
    try { return require(c); } catch (e) { /* try next */ }
  }
  throw new Error('onnxruntime-node not found (set ORT_NODE_DIR)');
}

function readTensor(ort, spec) {
  const buf = fs.readFileSync(spec.file);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  if (spec.dtype === 'float32') return new ort.Tensor('float32', new Float32Array(ab), spec.shape);
  if (spec.dtype === 'int64') return new ort.Tensor('int64', new BigInt64Array(ab), spec.shape);
  throw new Error('unsupported dtype ' + spec.dtype);
}

async function main() {
  const [modelPath, inputsJson] = process.argv.slice(2);
  const ort = loadOrt();
  const specs = JSON.parse(fs.readFileSync(inputsJson, 'utf8'));
  const sess = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled',
  });
  const feeds = {};
  for (const s of specs) feeds[s.name] = readTensor(ort, s);
  const out = await sess.run(feeds);
  const shapes = {};
  for (const [k, v] of Object.entries(out)) shapes[k] = Array.from(v.dims, Number);
  process.stdout.write(JSON.stringify(shapes));
}

main().catch((e) => { console.error(e); process.exit(1); });
