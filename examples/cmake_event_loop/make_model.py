#!/usr/bin/python3
"""Writes examples/cmake_event_loop/regressor.onnx: a second small per-jet
network beside examples/jet_tagger/model.onnx (16 features per jet in, 2
regressed values out: an energy correction and its resolution), two Gemm
layers with Relu and Softplus, from a fixed seed so the file is the same
on every run. The example compiles both models under the same NAME.

usage: /usr/bin/python3 examples/cmake_event_loop/make_model.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(12)
w1 = numpy_helper.from_array((rng.standard_normal((16, 32)) * 0.25).astype(np.float32), "w1")
b1 = numpy_helper.from_array((rng.standard_normal(32) * 0.1).astype(np.float32), "b1")
w2 = numpy_helper.from_array((rng.standard_normal((32, 2)) * 0.25).astype(np.float32), "w2")
b2 = numpy_helper.from_array(np.array([1.0, 0.1], dtype=np.float32), "b2")
nodes = [
    helper.make_node("Gemm", ["jets", "w1", "b1"], ["h"], name="hidden"),
    helper.make_node("Relu", ["h"], ["hr"], name="relu"),
    helper.make_node("Gemm", ["hr", "w2", "b2"], ["o"], name="out"),
    helper.make_node("Softplus", ["o"], ["corr"], name="softplus"),
]
graph = helper.make_graph(
    nodes, "jet_regressor",
    [helper.make_tensor_value_info("jets", TensorProto.FLOAT, ["njets", 16])],
    [helper.make_tensor_value_info("corr", TensorProto.FLOAT, ["njets", 2])],
    [w1, b1, w2, b2])
model = helper.make_model(graph, producer_name="kiln-examples",
                          opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressor.onnx")
with open(path, "wb") as f:
    f.write(model.SerializeToString())
print(path)
