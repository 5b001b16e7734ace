#!/usr/bin/python3
"""Reference outputs for kiln's end-to-end tests, from ONNX Runtime.

For each model below, writes a case folder in the ONNX backend-test layout
(model.onnx, test_data_set_K/input_I.pb, output_J.pb) that `kiln verify`
reads: inputs are fixed-seed random floats at a few batch sizes, outputs are
what ONNX Runtime 1.x (npm package onnxruntime-node, run by ort_run.js)
computes for them. The folders are committed, so the tests need neither
ONNX Runtime nor Node; rerun this only when a model changes:

    (cd /tmp && npm install --ignore-scripts onnxruntime-node)
    NODE_PATH=/tmp/node_modules /usr/bin/python3 tests/models/make_refs.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = {
    "jet_tagger": os.path.join(ROOT, "examples", "jet_tagger", "model.onnx"),
    "mlp": os.path.join(ROOT, "tests", "fixtures", "mlp.onnx"),
    "cnn": os.path.join(ROOT, "tests", "fixtures", "cnn.onnx"),
    "encoder": os.path.join(ROOT, "tests", "fixtures", "encoder.onnx"),
}
BATCHES = (1, 3, 8)


def main():
    for name, src in MODELS.items():
        case = os.path.join(HERE, name)
        shutil.rmtree(case, ignore_errors=True)
        os.makedirs(case)
        shutil.copy(src, os.path.join(case, "model.onnx"))
        graph = onnx.load(src).graph
        inits = {t.name for t in graph.initializer}
        inputs = [vi for vi in graph.input if vi.name not in inits]
        rng = np.random.default_rng(7)
        for k, batch in enumerate(BATCHES):
            ds = os.path.join(case, "test_data_set_%d" % k)
            os.makedirs(ds)
            with tempfile.TemporaryDirectory() as tmp:
                specs = []
                for i, vi in enumerate(inputs):
                    dims = [d.dim_value if d.HasField("dim_value") else batch
                            for d in vi.type.tensor_type.shape.dim]
                    x = rng.standard_normal(dims).astype(np.float32)
                    onnx.save_tensor(numpy_helper.from_array(x, vi.name),
                                     os.path.join(ds, "input_%d.pb" % i))
                    raw = os.path.join(tmp, "in%d.bin" % i)
                    x.tofile(raw)
                    specs.append("%s=%s:%s" % (vi.name, raw, ",".join(map(str, dims))))
                subprocess.run(["node", os.path.join(HERE, "ort_run.js"), src, tmp] + specs,
                               check=True)
                for j, vo in enumerate(graph.output):
                    dims = [int(d) for d in open(os.path.join(tmp, "output_%d.dims" % j)).read()
                            .split(",") if d]
                    y = np.fromfile(os.path.join(tmp, "output_%d.bin" % j),
                                    dtype=np.float32).reshape(dims)
                    onnx.save_tensor(numpy_helper.from_array(y, vo.name),
                                     os.path.join(ds, "output_%d.pb" % j))
        print("wrote", case)


if __name__ == "__main__":
    sys.exit(main())
