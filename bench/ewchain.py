#!/usr/bin/python3
"""A 5-node float32 elementwise chain on [N, 256, 1024] (docs/optimizer.md,
the ewchain pass): (x - mean) / std + bias, Tanh, * scale, with [1024]
constants; with `rows`, a 3-node one on [N, 16] (x + b, Sigmoid, * s), the
shape of a jet tagger's features. Timed with and without the pass, one
core, alternating:

    bench/ewchain.py build/ewchain.onnx [rows]
    taskset -c 1 bench/run.sh build/ewchain.onnx 1 500
    KILN_FLAGS=--no-pass=ewchain taskset -c 1 bench/run.sh build/ewchain.onnx 1 500
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
rows = sys.argv[2:] == ["rows"]
C = 16 if rows else 1024
shape = ["N", C] if rows else ["N", 256, C]
names = ("b", "s") if rows else ("mean", "std", "bias", "scale")
inits = [numpy_helper.from_array((rng.random(C) + 0.5 if k == "std" else rng.standard_normal(C))
                                 .astype(np.float32), k) for k in names]
N = helper.make_node
if rows:
    nodes = [N("Add", ["x", "b"], ["a"], name="add"), N("Sigmoid", ["a"], ["g"], name="sig"),
             N("Mul", ["g", "s"], ["y"], name="mul")]
else:
    nodes = [N("Sub", ["x", "mean"], ["a"], name="sub"), N("Div", ["a", "std"], ["b"], name="div"),
             N("Add", ["b", "bias"], ["c"], name="add"), N("Tanh", ["c"], ["t"], name="tanh"),
             N("Mul", ["t", "scale"], ["y"], name="mul")]
g = helper.make_graph(nodes, "ewchain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                      initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
with open(sys.argv[1], "wb") as f:
    f.write(m.SerializeToString())
