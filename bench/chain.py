#!/usr/bin/python3
"""A chain of N nodes (N/2 MatMul+Tanh pairs, 16x16 weights), batch axis N,
for measuring compile time against graph size (docs/compile.md):

    bench/chain.py 16000 c16000.onnx
    /usr/bin/time kiln compile c16000.onnx --batch 1,8,32 -o out
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

n, path = int(sys.argv[1]), sys.argv[2]
D = 16
rng = np.random.default_rng(7)
nodes, inits, prev = [], [], "x"
for i in range(n // 2):
    inits.append(numpy_helper.from_array((rng.standard_normal((D, D)) * 0.3).astype(np.float32),
                                         "w%d" % i))
    nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["m%d" % i], name="mm%d" % i))
    nodes.append(helper.make_node("Tanh", ["m%d" % i], ["t%d" % i], name="th%d" % i))
    prev = "t%d" % i
g = helper.make_graph(nodes, "chain",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", D])],
                      initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
with open(path, "wb") as f:
    f.write(m.SerializeToString())
