#!/usr/bin/python3
"""Writes examples/jet_tagger/model.onnx: a small jet-tagging network of the
kind CMS runs per event (16 features per jet in, 5 class probabilities out,
any number of jets per event). Dense layers with BatchNorm and SELU, then
Softmax; about 40 KB of weights, drawn from a fixed seed so the file is the
same on every run. Only ops of kiln's first compile slice are used.

usage: /usr/bin/python3 examples/jet_tagger/make_model.py
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(2026)
nodes, inits = [], []


def add(name, array):
    inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
    return name


def weight(name, *shape, scale=1.0):
    return add(name, rng.standard_normal(shape) * scale)


prev, width = "jets", 16
for i, out in enumerate((64, 64, 32)):
    w = weight("dense%d.weight" % i, out, width, scale=(1.0 / width) ** 0.5)
    b = weight("dense%d.bias" % i, out, scale=0.1)
    nodes.append(helper.make_node("Gemm", [prev, w, b], ["dense%d" % i], name="dense%d" % i,
                                  transB=1))
    bn = [add("bn%d.scale" % i, 1 + 0.1 * rng.standard_normal(out)),
          weight("bn%d.bias" % i, out, scale=0.1),
          weight("bn%d.mean" % i, out, scale=0.1),
          add("bn%d.var" % i, 0.5 + np.abs(0.1 * rng.standard_normal(out)))]
    nodes.append(helper.make_node("BatchNormalization", ["dense%d" % i] + bn, ["bn%d" % i],
                                  name="bn%d" % i, epsilon=1e-3))
    nodes.append(helper.make_node("Selu", ["bn%d" % i], ["selu%d" % i], name="selu%d" % i))
    prev, width = "selu%d" % i, out
w = weight("head.weight", 5, width, scale=(1.0 / width) ** 0.5)
b = weight("head.bias", 5, scale=0.1)
nodes.append(helper.make_node("Gemm", [prev, w, b], ["logits"], name="head", transB=1))
nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1))

graph = helper.make_graph(
    nodes, "jet_tagger",
    [helper.make_tensor_value_info("jets", TensorProto.FLOAT, ["njets", 16])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["njets", 5])],
    initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="kiln-examples")
model.ir_version = 8
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.onnx")
with open(out, "wb") as f:
    f.write(model.SerializeToString())
print("wrote", out)
