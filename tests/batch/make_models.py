#!/usr/bin/python3
# Writes the models the batch-stitching tests compile (tests/batch/run.sh).
# Committed output, so the tests need no Python; regenerate with
#
#   /usr/bin/python3 tests/batch/make_models.py [OUTDIR]
#
# Deterministic: fixed seed, no timestamps.
#   rows.onnx   batch independent, every row on axis 0: x [N,8] float and
#               ids [N,3] int64 in, a per-feature scale [5] without a batch
#               axis; Gemm, Relu, Gather (an embedding), ReduceMean over a
#               non-batch axis, Concat, Gemm, Softmax(-1), Mul by scale.
#               Outputs y [N,5] float and argmax [N] int64.
#   seq.onnx    batch independent, batch on axis 1 (compile with
#               --batch-dim x=1): x [4,N,6] -> Transpose -> MatMul -> Tanh;
#               outputs y [N,4,3] and back [4,N,3], so no chunk runs in place.
#   mixes.onnx  Softmax over axis 0: mixes rows of the batch.
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
rng = np.random.default_rng(6)


def w(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.5, name)


def save(graph, name):
    m = helper.make_model(graph, producer_name="kiln-batch-tests",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name))


# rows.onnx
nodes = [
    helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="dense1"),
    helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
    helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed", axis=0),
    helper.make_node("ReduceMean", ["emb"], ["pooled"], name="pool", axes=[1], keepdims=0),
    helper.make_node("Concat", ["a1", "pooled"], ["cat"], name="cat", axis=1),
    helper.make_node("Gemm", ["cat", "w2", "b2"], ["logits"], name="dense2"),
    helper.make_node("Softmax", ["logits"], ["p"], name="softmax", axis=-1),
    helper.make_node("Mul", ["p", "scale"], ["y"], name="rescale"),
    helper.make_node("ArgMax", ["logits"], ["argmax"], name="argmax", axis=1, keepdims=0),
]
g = helper.make_graph(
    nodes, "rows",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
     helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 3]),
     helper.make_tensor_value_info("scale", TensorProto.FLOAT, [5])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5]),
     helper.make_tensor_value_info("argmax", TensorProto.INT64, ["N"])],
    [w("w1", (8, 16)), w("b1", (16,)), w("table", (10, 4)), w("w2", (20, 5)), w("b2", (5,))])
save(g, "rows.onnx")

# seq.onnx
nodes = [
    helper.make_node("Transpose", ["x"], ["xt"], name="to_rows", perm=[1, 0, 2]),
    helper.make_node("MatMul", ["xt", "w"], ["h"], name="project"),
    helper.make_node("Tanh", ["h"], ["y"], name="tanh"),
    helper.make_node("Transpose", ["y"], ["back"], name="to_seq", perm=[1, 0, 2]),
]
g = helper.make_graph(
    nodes, "seq",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, "N", 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 3]),
     helper.make_tensor_value_info("back", TensorProto.FLOAT, [4, "N", 3])],
    [w("w", (6, 3))])
save(g, "seq.onnx")

# mixes.onnx
nodes = [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("Softmax", ["r"], ["y"], name="over_batch", axis=0),
]
g = helper.make_graph(
    nodes, "mixes",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [])
save(g, "mixes.onnx")
