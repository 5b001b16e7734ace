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
#   ok_*.onnx, mix_*.onnx  small models for the verdicts of `kiln info --plan`.
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


# Verdict models: tests/batch/run.sh checks `kiln info --plan` says
# "batch independent: yes" for ok_*.onnx and names the node for mix_*.onnx.
def verdict(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="kiln-batch-tests",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


F = TensorProto.FLOAT
I64 = TensorProto.INT64
x3 = helper.make_tensor_value_info("x", F, ["N", 2, 3])
x2 = helper.make_tensor_value_info("x", F, ["N", 4])


def out(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def ints(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


# Shape arithmetic on the batch feeds Reshape: allowed (a shape input).
verdict("ok_shape_reshape", [
    helper.make_node("Transpose", ["x"], ["t"], name="t", perm=[0, 2, 1]),
    helper.make_node("Shape", ["t"], ["s"], name="shape"),
    helper.make_node("Gather", ["s", "zero"], ["n"], name="batch_of", axis=0),
    helper.make_node("Concat", ["n", "six"], ["target"], name="target", axis=0),
    helper.make_node("Reshape", ["t", "target"], ["y"], name="flatten"),
    helper.make_node("ReduceSum", ["y", "one"], ["z"], name="sum_features", keepdims=0),
], [x3], [out("z", ["N"])], [ints("zero", [0]), ints("six", [6]), ints("one", [1])])
# Conv, BatchNormalization (inference), pooling, Flatten, Gemm.
verdict("ok_conv", [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "g", "bb", "mu", "var"], ["n"], name="bn"),
    helper.make_node("MaxPool", ["n"], ["p"], name="pool", kernel_shape=[2, 2]),
    helper.make_node("GlobalAveragePool", ["p"], ["gp"], name="gap"),
    helper.make_node("Flatten", ["gp"], ["f"], name="flat"),
    helper.make_node("Gemm", ["f", "wd"], ["y"], name="dense", transB=1),
], [helper.make_tensor_value_info("x", F, ["N", 1, 4, 4])], [out("y", ["N", 2])],
    [w("w", (3, 1, 3, 3)), w("b", (3,)), w("g", (3,)), w("bb", (3,)), w("mu", (3,)),
     numpy_helper.from_array(np.ones(3, np.float32), "var"), w("wd", (2, 3))])
verdict("mix_reduce", [
    helper.make_node("ReduceMean", ["x"], ["y"], name="mean_over_jets", axes=[0], keepdims=1),
], [x2], [out("y", [1, 4])])
verdict("mix_matmul", [
    helper.make_node("Transpose", ["x"], ["t"], name="t"),
    helper.make_node("MatMul", ["t", "x"], ["y"], name="gram"),
], [x2], [out("y", [4, 4])])
verdict("mix_concat", [
    helper.make_node("Concat", ["x", "x"], ["y"], name="twice", axis=0),
], [x2], [out("y", ["M", 4])])
verdict("mix_reshape", [
    helper.make_node("Reshape", ["x", "shape"], ["y"], name="columns"),
], [x2], [out("y", [4, "N"])], [ints("shape", [4, -1])])
verdict("mix_size", [
    helper.make_node("Size", ["x"], ["s"], name="size"),
    helper.make_node("Cast", ["s"], ["sf"], name="cast", to=F),
    helper.make_node("Div", ["x", "sf"], ["y"], name="per_batch"),
], [x2], [out("y", ["N", 4])])
verdict("mix_shape_out", [
    helper.make_node("Relu", ["x"], ["r"], name="relu"),
    helper.make_node("Shape", ["r"], ["y"], name="shape"),
], [x2], [out("y", [2], I64)])
verdict("mix_unknown", [
    helper.make_node("Compress", ["x", "keep"], ["y"], name="pick", axis=1),
], [x2], [out("y", ["N", 3])],
    [numpy_helper.from_array(np.array([True, False, True, True]), "keep")])
# Ops that work within each sample: Det of [N, 3, 3], MeanVarianceNormalization
# over axes that leave N alone, DFT along axis 1.
verdict("ok_per_sample", [
    helper.make_node("MeanVarianceNormalization", ["x"], ["m"], name="mvn", axes=[1, 2]),
    helper.make_node("Det", ["m"], ["d"], name="det"),
    helper.make_node("Unsqueeze", ["d", "axes"], ["s"], name="signal"),
    helper.make_node("DFT", ["s"], ["y"], name="dft", axis=1),
], [helper.make_tensor_value_info("x", F, ["N", 3, 3])], [out("y", ["N", 1, 2])],
    [ints("axes", [1, 2])], opset=17)
verdict("mix_mvn", [
    helper.make_node("MeanVarianceNormalization", ["x"], ["y"], name="mvn"),
], [helper.make_tensor_value_info("x", F, ["N", 2, 3, 3])], [out("y", ["N", 2, 3, 3])])
verdict("ok_lpnorm", [
    helper.make_node("LpNormalization", ["x"], ["y"], name="lp", axis=1, p=1),
], [x3], [out("y", ["N", 2, 3])])
verdict("mix_lpnorm", [
    helper.make_node("LpNormalization", ["x"], ["y"], name="lp_over_jets", axis=0),
], [x2], [out("y", ["N", 4])])
verdict("mix_roipool", [
    helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], name="roi_pool", pooled_shape=[2, 2]),
], [helper.make_tensor_value_info("x", F, ["N", 2, 6, 6]),
    helper.make_tensor_value_info("rois", F, [3, 5])], [out("y", [3, 2, 2, 2])])
# A MatMul by a constant selection matrix becomes KilnSelect (passes/onehot.c),
# a gather of x's columns: with the batch on that axis (--batch 2 --batch-dim
# x=1, so x [4, 2] matches the [2, 3] matrix) it picks samples.
verdict("mix_select", [
    helper.make_node("MatMul", ["x", "pick"], ["y"], name="select_samples"),
], [helper.make_tensor_value_info("x", F, [4, "N"])], [out("y", [4, 3])],
    [numpy_helper.from_array(np.array([[1, 0, 1], [0, 1, 0]], np.float32), "pick")])


# nibbles.onnx (opset 21): 4-bit and float8 graph inputs and outputs, 3
# elements per sample, so n rows of int4 end mid-byte for odd n and chunks
# start mid-byte: q int4 [N,3] and x float [N,3] in; y = DQ(q) + x float,
# yq = Q(y) uint4 [N,3], y8 = Cast(x) float8e4m3fn [N,3] out.
# nibbles_seq.onnx: the batch on axis 1 (--batch-dim q=1): q int4 [3,N] in,
# its Transpose qt int4 [N,3] and DQ(q) float [3,N] out.
# onnx 1.12 has no INT4/UINT4 (22, 21): raw enum values, no checker.
INT4, UINT4, E4M3FN = 22, 21, 17


def save21(graph, name):
    m = helper.make_model(graph, producer_name="kiln-batch-tests",
                          opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, os.path.join(OUT, name))


def scalar(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


g = helper.make_graph([
    helper.make_node("DequantizeLinear", ["q", "s"], ["qf"], name="dq"),
    helper.make_node("Add", ["qf", "x"], ["y"], name="add"),
    helper.make_node("QuantizeLinear", ["y", "s2"], ["yq"], name="q", output_dtype=UINT4),
    helper.make_node("Cast", ["x"], ["y8"], name="to_f8", to=E4M3FN),
], "nibbles",
    [helper.make_tensor_value_info("q", INT4, ["N", 3]),
     helper.make_tensor_value_info("x", F, ["N", 3])],
    [helper.make_tensor_value_info("y", F, ["N", 3]),
     helper.make_tensor_value_info("yq", UINT4, ["N", 3]),
     helper.make_tensor_value_info("y8", E4M3FN, ["N", 3])],
    [scalar("s", 0.5), scalar("s2", 0.75)])
save21(g, "nibbles.onnx")
g = helper.make_graph([
    helper.make_node("Transpose", ["q"], ["qt"], name="rows", perm=[1, 0]),
    helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq"),
], "nibbles_seq",
    [helper.make_tensor_value_info("q", INT4, [3, "N"])],
    [helper.make_tensor_value_info("qt", INT4, ["N", 3]),
     helper.make_tensor_value_info("y", F, [3, "N"])],
    [scalar("s", 0.5)])
save21(g, "nibbles_seq.onnx")
