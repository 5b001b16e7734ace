#!/usr/bin/python3
"""A 5-node float32 elementwise chain on [N, 256, 1024] (docs/optimizer.md,
the ewchain pass): (x - mean) / std + bias, Tanh, * scale, with [1024]
constants. Timed with and without the pass, one core, alternating:

    bench/ewchain.py build/ewchain.onnx
    taskset -c 1 bench/run.sh build/ewchain.onnx 1 200
    KILN_FLAGS=--no-pass=ewchain taskset -c 1 bench/run.sh build/ewchain.onnx 1 200
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
C = 1024
inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in (
    ("mean", rng.standard_normal(C)), ("std", rng.random(C) + 0.5),
    ("bias", rng.standard_normal(C)), ("scale", rng.standard_normal(C)))]
N = helper.make_node
nodes = [N("Sub", ["x", "mean"], ["a"], name="sub"), N("Div", ["a", "std"], ["b"], name="div"),
         N("Add", ["b", "bias"], ["c"], name="add"), N("Tanh", ["c"], ["t"], name="tanh"),
         N("Mul", ["t", "scale"], ["y"], name="mul")]
g = helper.make_graph(nodes, "ewchain",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 256, C])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 256, C])],
                      initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
with open(sys.argv[1], "wb") as f:
    f.write(m.SerializeToString())
