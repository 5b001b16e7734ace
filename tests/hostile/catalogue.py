#!/usr/bin/python3
"""The hostile-model catalogue (issue 14): absurd sizes, overflowing shape
arithmetic, mistyped attributes and oversized graphs.

usage: catalogue.py KILN OUTDIR [CASE...]

Every case is a small model built here with onnx.helper. Each is run through
`kiln info --batch 1,4 --plan` and `kiln compile --batch 1,4`, and must end as
the case says:
  - error: exit 2 and stderr exactly one line "kiln: error: ..." that
    contains every given fragment (the node's name and op, what is wrong);
  - ok: exit 0 (a documented success: docs/limits.md).
Never a crash, a sanitizer report, a hang or exit 0 with a wrong size.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KILN, OUT = sys.argv[1:3]
ONLY = set(sys.argv[3:])
F, I64 = TensorProto.FLOAT, TensorProto.INT64
BIG = 1 << 40
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def const(name, values, dt=np.int64):
    return numpy_helper.from_array(np.array(values, dt), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def unary(op, in_shape, out_shape=None, name="n0", extra_inputs=(), inits=(), **attrs):
    node = helper.make_node(op, ["X"] + list(extra_inputs), ["Y"], name=name, **attrs)
    return model([node], [vi("X", in_shape)], [vi("Y", out_shape)], inits)


CASES = {}


def case(name, want, *fragments, args=(), commands=("info", "compile")):
    def register(build):
        CASES[name] = (build, want, fragments, list(args), commands)
        return build
    return register


# ---- finding 2: shape arithmetic that overflowed int64 ----------------------
@case("reshape_product", "error", '"n0" (Reshape', "overflow")
def _():
    return unary("Reshape", ["N", 4], extra_inputs=["S"],
                 inits=[const("S", [1 << 62, 1 << 62, -1])])


@case("reshape_product_known", "error", '"n0" (Reshape')
def _():
    return unary("Reshape", ["N", 4], extra_inputs=["S"], inits=[const("S", [1 << 32, 1 << 32, 8])])


@case("slice_int64_min", "ok")
def _():
    return unary("Slice", ["N", 4], extra_inputs=["st", "en", "ax", "sp"],
                 inits=[const("st", [INT64_MIN]), const("en", [INT64_MAX]), const("ax", [1]),
                        const("sp", [1])])


@case("slice_int64_min_step", "ok")
def _():
    return unary("Slice", ["N", 4], extra_inputs=["st", "en", "ax", "sp"],
                 inits=[const("st", [INT64_MAX]), const("en", [INT64_MIN]), const("ax", [1]),
                        const("sp", [INT64_MIN])])


@case("slice_int64_min_reverse", "ok")
def _():
    return unary("Slice", ["N", 4], extra_inputs=["st", "en", "ax", "sp"],
                 inits=[const("st", [INT64_MAX]), const("en", [INT64_MIN]), const("ax", [1]),
                        const("sp", [-1])])


@case("tile", "error", '"n0" (Tile')
def _():
    return unary("Tile", ["N", 4], extra_inputs=["R"], inits=[const("R", [1, 1 << 62])])


@case("tile_product", "error", '"n0" (Tile')
def _():
    return unary("Tile", ["N", 4, 4], extra_inputs=["R"], inits=[const("R", [1, 1 << 31, 1 << 31])])


@case("conv_pads", "error", '"n0" (Conv')
def _():
    return unary("Conv", ["N", 1, 4, 4], extra_inputs=["W"],
                 inits=[const("W", np.ones((1, 1, 3, 3)), np.float32)], pads=[BIG] * 4)


@case("conv_pads_int64_max", "error", '"n0" (Conv')
def _():
    return unary("Conv", ["N", 1, 4, 4], extra_inputs=["W"],
                 inits=[const("W", np.ones((1, 1, 3, 3)), np.float32)], pads=[INT64_MAX] * 4)


@case("conv_dilation", "error", '"n0" (Conv')
def _():
    return unary("Conv", ["N", 1, 4, 4], extra_inputs=["W"],
                 inits=[const("W", np.ones((1, 1, 3, 3)), np.float32)], dilations=[1 << 62, 1 << 62])


@case("input_2p40_squared", "error", "X", "elements")
def _():
    return unary("Relu", [BIG, BIG])


@case("input_batch_2p40", "error", "X")
def _():
    return unary("Relu", ["N", BIG, BIG])


@case("pad_huge", "error", '"n0" (Pad')
def _():
    return unary("Pad", ["N", 4], extra_inputs=["P"], inits=[const("P", [0, 1 << 62, 0, 1 << 62])])


@case("concat_sum", "error", 'graph input "X"', "--max-elements")
def _():
    n = helper.make_node("Concat", ["X", "X", "X", "X"], ["Y"], name="n0", axis=1)
    return model([n], [vi("X", ["N", 1 << 61])], [vi("Y", None)])


@case("expand_huge", "error", '"n0" (Expand')
def _():
    return unary("Expand", ["N", 1], extra_inputs=["S"], inits=[const("S", [1 << 40, 1 << 40])])


@case("constant_of_shape_32gib", "error", '"n0" (ConstantOfShape', "--max-arena")
def _():
    n = helper.make_node("ConstantOfShape", ["S"], ["C"], name="n0")
    a = helper.make_node("Add", ["X", "C"], ["Y"], name="n1")
    return model([n, a], [vi("X", ["N", 1])], [vi("Y", None)], [const("S", [1, 1 << 33])])


@case("range_huge", "error", '"n0" (Range')
def _():
    n = helper.make_node("Range", ["a", "b", "c"], ["R"], name="n0")
    c = helper.make_node("Cast", ["R"], ["R2"], to=F, name="n1")
    a = helper.make_node("Add", ["X", "R2"], ["Y"], name="n2")
    return model([n, c, a], [vi("X", ["N", 1])], [vi("Y", None)],
                 [const("a", INT64_MIN), const("b", INT64_MAX), const("c", 1)])


@case("matmul_huge", "error", '"n0" (MatMul')
def _():
    n = helper.make_node("MatMul", ["X", "W"], ["Y"], name="n0")
    return model([n], [vi("X", ["N", 1 << 31, 1]), vi("W", [1, 1 << 31])], [vi("Y", None)])


# ---- finding 4: attributes of the wrong type --------------------------------
@case("leakyrelu_alpha_ints", "error", '"n0" (LeakyRelu', "alpha")
def _():
    return unary("LeakyRelu", ["N", 4], alpha=[1, 2])


@case("leakyrelu_alpha_string", "error", '"n0" (LeakyRelu', "alpha")
def _():
    return unary("LeakyRelu", ["N", 4], alpha="x")


@case("conv_kernel_shape_float", "error", '"n0" (Conv', "kernel_shape")
def _():
    return unary("Conv", ["N", 1, 4, 4], extra_inputs=["W"],
                 inits=[const("W", np.ones((1, 1, 3, 3)), np.float32)], kernel_shape=[3.0, 3.0])


@case("softmax_axis_float", "error", '"n0" (Softmax', "axis")
def _():
    return unary("Softmax", ["N", 4], axis=1.0)


@case("transpose_perm_int", "error", '"n0" (Transpose', "perm")
def _():
    return unary("Transpose", ["N", 4], perm=1)


@case("cast_to_string", "error", '"n0" (Cast', "to")
def _():
    return unary("Cast", ["N", 4], to="float")


# Schema versions of opsets 18-21 (scripts/onnx_extra.py's LATER_ATTRS: onnx
# 1.12 does not know them)
def unary18(op, opset, in_shape=("N", 4), extra_inputs=(), inits=(), **attrs):
    node = helper.make_node(op, ["X"] + list(extra_inputs), ["Y"], name="n0", **attrs)
    return model([node], [vi("X", list(in_shape))], [vi("Y", None)], inits, opset=opset)


@case("gelu20_approximate_int", "error", '"n0" (Gelu', '"approximate" is an int', "Gelu-20 takes a string")
def _():
    return unary18("Gelu", 20, approximate=1)


@case("reducemax20_keepdims_float", "error", '"n0" (ReduceMax', '"keepdims"', "ReduceMax-20 takes an int")
def _():
    return unary18("ReduceMax", 20, keepdims=1.0)


@case("groupnorm21_epsilon_ints", "error", '"n0" (GroupNormalization', '"epsilon"',
      "GroupNormalization-21 takes a float")
def _():
    return unary18("GroupNormalization", 21, ["N", 4, 3], ["s", "b"],
                   [const("s", np.ones(2), np.float32), const("b", np.zeros(2), np.float32)],
                   num_groups=2, epsilon=[1, 2])


@case("split18_num_outputs_string", "error", '"n0" (Split', '"num_outputs"', "Split-18 takes an int")
def _():
    return unary18("Split", 18, num_outputs="2")


@case("resize19_mode_int", "error", '"n0" (Resize', '"mode"', "Resize-19 takes a string")
def _():
    return unary18("Resize", 19, ["N", 1, 4, 4], ["", "sc"],
                   [const("sc", [1, 1, 2, 2], np.float32)], mode=1)


@case("shape21_start_float", "error", '"n0" (Shape', '"start"', "Shape-21 takes an int")
def _():
    return unary18("Shape", 21, start=1.5)


@case("transpose21_perm_int", "error", '"n0" (Transpose', '"perm"', "Transpose-21 takes a list of ints")
def _():
    return unary18("Transpose", 21, perm=1)


@case("pad19_mode_ints", "error", '"n0" (Pad', '"mode"', "Pad-19 takes a string")
def _():
    return unary18("Pad", 19, extra_inputs=["p"], inits=[const("p", [0, 1, 0, 1])], mode=[1])


@case("cast19_saturate_string", "error", '"n0" (Cast', '"saturate"', "Cast-19 takes an int")
def _():
    return unary18("Cast", 19, to=TensorProto.FLOAT16, saturate="yes")


# Attribute values an op's record resolves (ops/<family>.c, *_params) and so
# refuses at inference, before any emitter: `kiln info` fails as compile does.
# A string holding a NUL is refused (it would pass for its prefix).
@case("gelu20_approximate_erf", "error", '"n0" (Gelu', 'approximate must be "none" or "tanh"')
def _():
    return unary18("Gelu", 20, approximate="erf")


@case("bitshift_direction_up", "error", '"n0" (BitShift', 'direction must be "LEFT" or "RIGHT"')
def _():
    node = helper.make_node("BitShift", ["X", "S"], ["Y"], name="n0", direction="UP")
    u8 = TensorProto.UINT8
    return model([node], [vi("X", ["N", 4], u8), vi("S", ["N", 4], u8)], [vi("Y", None, u8)])


@case("depthtospace_mode_nul", "error", '"n0" (DepthToSpace', '"mode" holds a NUL byte')
def _():
    return unary("DepthToSpace", ["N", 4, 2, 2], blocksize=2, mode=b"CRD\0x")


@case("pad_mode_nul", "error", '"n0" (Pad', '"mode" holds a NUL byte')
def _():
    return unary("Pad", ["N", 4], extra_inputs=["p"], inits=[const("p", [0, 1, 0, 1])],
                 mode=b"edge\0junk")


@case("scatter_reduction_max", "error", '"n0" (ScatterND', 'reduction "maximum" is not supported')
def _():
    node = helper.make_node("ScatterND", ["X", "I", "U"], ["Y"], name="n0", reduction="maximum")
    return model([node], [vi("X", [4]), vi("I", [2, 1], I64), vi("U", [2])], [vi("Y", None)],
                 opset=18)


@case("scatter_reduction_nul", "error", '"n0" (ScatterElements', '"reduction" holds a NUL byte')
def _():
    node = helper.make_node("ScatterElements", ["X", "I", "U"], ["Y"], name="n0",
                            reduction=b"add\0x")
    return model([node], [vi("X", ["N", 4]), vi("I", ["N", 2], I64), vi("U", ["N", 2])],
                 [vi("Y", None)], opset=16)


@case("nllloss_reduction_nul", "error", '"n0" (NegativeLogLikelihoodLoss',
      '"reduction" holds a NUL byte')
def _():
    node = helper.make_node("NegativeLogLikelihoodLoss", ["X", "T"], ["Y"], name="n0",
                            reduction=b"none\0x")
    return model([node], [vi("X", ["N", 3]), vi("T", ["N"], I64)], [vi("Y", None)])


@case("averagepool19_ceil_mode_float", "error", '"n0" (AveragePool', '"ceil_mode"',
      "AveragePool-19 takes an int")
def _():
    return unary18("AveragePool", 19, ["N", 1, 4, 4], kernel_shape=[2, 2], ceil_mode=0.0)


# ---- finding 5: absurd sizes ------------------------------------------------
def chain(op, count):
    nodes = [helper.make_node(op, ["X" if i == 0 else "t%d" % (i - 1)],
                              ["Y" if i == count - 1 else "t%d" % i], name="c%d" % i)
             for i in range(count)]
    return model(nodes, [vi("X", ["N", 4])], [vi("Y", ["N", 4])])


@case("many_nodes", "error", 'graph "g" has 200001 nodes', "--max-nodes", commands=("info",))
def _():
    return chain("Relu", 200001)


@case("many_nodes_flag", "error", 'graph "g" has 2000 nodes', "--max-nodes", args=["--max-nodes=1999"])
def _():
    return chain("Neg", 2000)


@case("many_nodes_raised", "ok", args=["--max-nodes=2000"], commands=("info",))
def _():
    return chain("Neg", 2000)


def nested_if(levels):
    """If inside If, levels deep: the innermost then-branch negates X.

    Built from the top down, each branch graph filled in place: building it
    from the inside out with onnx.helper copies every inner graph at every
    level (2000 levels took 220 s of Python; this takes milliseconds)."""
    m = helper.make_model(helper.make_graph([], "g", [vi("C", [], TensorProto.BOOL), vi("X", ["N", 4])],
                                            [vi("Y", ["N", 4])]),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    g = m.graph
    for k in range(1, levels + 1):
        out = "Y" if k == 1 else "y%d" % (k - 1)
        node = g.node.add()
        node.CopyFrom(helper.make_node("If", ["C"], [out], name="if%d" % k))
        other = node.attribute.add()
        other.name, other.type = "else_branch", onnx.AttributeProto.GRAPH
        other.g.CopyFrom(helper.make_graph(
            [helper.make_node("Identity", ["X"], ["z%d" % k], name="id%d" % k)],
            "e%d" % k, [], [vi("z%d" % k, ["N", 4])]))
        then = node.attribute.add()
        then.name, then.type = "then_branch", onnx.AttributeProto.GRAPH
        g = then.g
        g.name = "b%d" % k
        g.output.append(vi("y%d" % k, ["N", 4]))
    g.node.append(helper.make_node("Neg", ["X"], ["y%d" % levels], name="neg"))
    return m.SerializeToString()


@case("nesting_depth", "error", '"if21" (If', "nested 21 deep", "--max-depth")
def _():
    return nested_if(21)


@case("nesting_depth_flag", "error", '"if6" (If', "nested 6 deep", "--max-depth", args=["--max-depth=5"])
def _():
    return nested_if(6)


@case("nesting_depth_raised", "ok", args=["--max-depth=21"])
def _():
    return nested_if(21)


@case("nesting_depth_wire", "error", "nested deeper than", "--max-depth")
def _():
    return nested_if(2000)


@case("c_size", "error", "(Softmax", "--max-c-size", args=["--max-c-size=1"], commands=("compile",))
def _():
    return chain("Softmax", 6000)


@case("elements_flag", "error", 'graph input "X"', "--max-elements", args=["--max-elements=1000"])
def _():
    return unary("Relu", ["N", 1001])


@case("arena_flag", "error", '"n0" (Relu', "--max-arena", args=["--max-arena=1"])
def _():
    # T is read twice, so it has a buffer (a chain of single reads would be
    # computed in one loop with no arena at all: passes/ewchain.c).
    n0 = helper.make_node("Relu", ["X"], ["T"], name="n0")
    n1 = helper.make_node("Relu", ["T"], ["U"], name="n1")
    n2 = helper.make_node("Add", ["U", "T"], ["Y"], name="n2")
    return model([n0, n1, n2], [vi("X", ["N", 1 << 19])], [vi("Y", ["N", 1 << 19])])


@case("context_flag", "error", "kiln_run context", "--max-arena", args=["--max-arena=4"],
      commands=("compile",))
def _():
    return unary("Relu", ["N", 1 << 18])


# ---- found by tests/fuzz ----------------------------------------------------
@case("einsum_output_byte", "error", '"n0" (Einsum', "bad character")
def _():
    n = helper.make_node("Einsum", ["X"], ["Y"], name="n0", equation=b"ij->\x8c")
    return model([n], [vi("X", ["N", 4])], [vi("Y", None)], opset=12)


@case("einsum_output_axes", "error", '"n0" (Einsum', "axes")
def _():
    n = helper.make_node("Einsum", ["X"], ["Y"], name="n0", equation="ij->iiiiiiiiiiiiiiij")
    return model([n], [vi("X", ["N", 4])], [vi("Y", None)], opset=12)


@case("scatternd_index_depth", "error", '"n0" (ScatterND', "last dim 126")
def _():
    n = helper.make_node("ScatterND", ["D", "I", "U"], ["Y"], name="n0")
    return model([n], [vi("D", [4, 4, 4]), vi("I", [2, 126], TensorProto.INT64),
                       vi("U", [2, 4, 4])], [vi("Y", None)], opset=16)


@case("scatter_elements_rank", "error", '"n0" (ScatterElements', "same rank")
def _():
    n = helper.make_node("ScatterElements", ["D", "I", "U"], ["Y"], name="n0", axis=0)
    return model([n], [vi("D", [4, 4]), vi("I", [2, 2, 2], TensorProto.INT64),
                       vi("U", [2, 2, 2])], [vi("Y", None)], opset=16)


@case("absent_required_input", "error", '"n0" (Clip', "input 0 is required")
def _():
    n = helper.make_node("Clip", ["", "", ""], ["Y"], name="n0")
    return model([n], [vi("X", [3])], [vi("Y", None)], opset=13)


@case("einsum_string_without_data", "error", '"n0" (Einsum')
def _():
    """An equation attribute typed STRING with no s field (protobuf-c leaves
    its data NULL; found by the 2-hour emit fuzz run)."""
    n = helper.make_node("Einsum", ["X", "X"], ["Y"], name="n0")
    a = n.attribute.add()
    a.name, a.type = "equation", 3  # AttributeProto.STRING
    return model([n], [vi("X", [2, 2])], [vi("Y", None)], opset=12)


# ---- LpNormalization and MaxRoiPool: attributes and ranks ----------------
@case("lpnorm_p_zero", "error", '"n0" (LpNormalization', "p must be 1 or 2, got 0")
def _():
    return unary("LpNormalization", ["N", 4], p=0)


@case("lpnorm_p_huge", "error", '"n0" (LpNormalization', "p must be 1 or 2, got 9223372036854775807")
def _():
    return unary("LpNormalization", ["N", 4], p=INT64_MAX)


@case("lpnorm_p_float", "error", '"n0" (LpNormalization', '"p"')
def _():
    return unary("LpNormalization", ["N", 4], p=2.0)


@case("lpnorm_axis_range", "error", '"n0" (LpNormalization', "axis -3 is out of range for rank 2")
def _():
    return unary("LpNormalization", ["N", 4], axis=-3)


@case("lpnorm_scalar", "error", '"n0" (LpNormalization', "rank 1 or more")
def _():
    return unary("LpNormalization", [])


@case("lpnorm_int", "error", '"n0" (LpNormalization', "float type")
def _():
    node = helper.make_node("LpNormalization", ["X"], ["Y"], name="n0")
    return model([node], [vi("X", ["N", 4], I64)], [vi("Y", None, I64)])


def roipool(x_shape=("N", 3, 8, 8), rois_shape=(2, 5), rois_dt=F, **attrs):
    node = helper.make_node("MaxRoiPool", ["X", "R"], ["Y"], name="n0", **attrs)
    return model([node], [vi("X", list(x_shape)), vi("R", list(rois_shape), rois_dt)],
                 [vi("Y", None)])


@case("roipool_no_pooled_shape", "error", '"n0" (MaxRoiPool', "pooled_shape is required")
def _():
    return roipool()


@case("roipool_pooled_one_value", "error", '"n0" (MaxRoiPool', "pooled_shape must be (height, width), got 1 values")
def _():
    return roipool(pooled_shape=[7])


@case("roipool_pooled_zero", "error", '"n0" (MaxRoiPool', "pooled_shape must be >= 1, got (0, 2)")
def _():
    return roipool(pooled_shape=[0, 2])


@case("roipool_pooled_negative", "error", '"n0" (MaxRoiPool', "pooled_shape must be >= 1")
def _():
    return roipool(pooled_shape=[2, INT64_MIN])


@case("roipool_pooled_huge", "error", '"n0" (MaxRoiPool', 'output 0 "Y"')
def _():
    return roipool(pooled_shape=[BIG, BIG])


@case("roipool_pooled_float", "error", '"n0" (MaxRoiPool', '"pooled_shape"')
def _():
    return roipool(pooled_shape=[2.0, 2.0])


@case("roipool_scale_zero", "error", '"n0" (MaxRoiPool', "spatial_scale must be a finite number > 0, got 0")
def _():
    return roipool(pooled_shape=[2, 2], spatial_scale=0.0)


@case("roipool_scale_nan", "error", '"n0" (MaxRoiPool', "spatial_scale must be a finite number > 0, got nan")
def _():
    return roipool(pooled_shape=[2, 2], spatial_scale=float("nan"))


@case("roipool_scale_inf", "error", '"n0" (MaxRoiPool', "spatial_scale must be a finite number > 0, got inf")
def _():
    return roipool(pooled_shape=[2, 2], spatial_scale=float("inf"))


@case("roipool_x_rank3", "error", '"n0" (MaxRoiPool', 'input 0 "X" must be 4-D (N, C, H, W), got rank 3')
def _():
    return roipool(x_shape=("N", 3, 8), pooled_shape=[2, 2])


@case("roipool_rois_4_columns", "error", '"n0" (MaxRoiPool', "rois must be [num_rois, 5]")
def _():
    return roipool(rois_shape=(2, 4), pooled_shape=[2, 2])


@case("roipool_rois_rank1", "error", '"n0" (MaxRoiPool', 'input 1 "R" must be [num_rois, 5], got rank 1')
def _():
    return roipool(rois_shape=(5,), pooled_shape=[2, 2])


@case("roipool_rois_int", "error", '"n0" (MaxRoiPool', "X and rois must be the same float type")
def _():
    return roipool(rois_dt=I64, pooled_shape=[2, 2])


# ---- kiln's own fused ops and kiln.* attributes: never from a model (issue 28) ----
# The optimizer's fused ops (KilnAttention, KilnEdgeConv, KilnKnn) live in a
# domain no model can name, and their parameters and the other passes'
# marks are kiln.* attributes a model must not set: each is refused.
def attention_marked(**attrs):
    """A Softmax carrying the attribute the fused attention once was, with
    the fused node's inputs (Q, K, V)."""
    node = helper.make_node("Softmax", ["Q", "K", "V"], ["Y"], name="n0", **attrs)
    return model([node], [vi(x, ["N", 2, 4, 8]) for x in "QKV"], [vi("Y", ["N", 2, 4, 8])])


@case("kiln_attr_attention", "error", '"n0" (Softmax', '"kiln.attention"', "reserved")
def _():
    return attention_marked(**{"kiln.attention": 1, "kiln.perm_q": [0, 1, 2, 3]})


@case("kiln_attr_residual", "error", '"n0" (Conv', '"kiln.residual"', "reserved")
def _():
    node = helper.make_node("Conv", ["X", "W", "", "R"], ["Y"], name="n0",
                            **{"kiln.residual": 1})
    return model([node], [vi("X", ["N", 1, 4, 4]), vi("R", ["N", 1, 4, 4])],
                 [vi("Y", ["N", 1, 4, 4])], [const("W", np.ones((1, 1, 1, 1)), np.float32)])


@case("kiln_domain_op", "error", '"n0" (KilnAttention', 'domain "kiln" is not an ONNX operator set')
def _():
    node = helper.make_node("KilnAttention", ["Q", "K", "V"], ["Y"], name="n0", domain="kiln")
    g = helper.make_graph([node], "g", [vi(x, ["N", 2, 4, 8]) for x in "QKV"],
                          [vi("Y", ["N", 2, 4, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid("kiln", 1)])
    m.ir_version = 8
    return m.SerializeToString()


@case("kiln_op_in_onnx", "error", '"n0" (KilnKnn', "ai.onnx has no operator KilnKnn")
def _():
    return unary("KilnKnn", ["N", 3, 16], extra_inputs=["k"], inits=[const("k", [4])])


STAGE_LINE = re.compile(r"^kiln: [^:]+: [0-9]+\.[0-9]+ s( \([0-9]+\.[0-9]+ s so far\))?$")


def run_case(name):
    build, want, fragments, args, commands = CASES[name]
    path = os.path.join(OUT, name + ".onnx")
    with open(path, "wb") as f:
        f.write(build())
    bad = []
    cmds = {"info": ["info", path, "--batch", "1,4", "--plan"],
            "compile": ["compile", path, "--batch", "1,4", "-o", os.path.join(OUT, name + ".out")]}
    for cmd in (cmds[c] + args for c in commands):
        try:
            r = subprocess.run([KILN] + cmd, capture_output=True, timeout=120)
        except subprocess.TimeoutExpired:
            bad.append("%s: kiln %s: timed out" % (name, cmd[0]))
            continue
        err = r.stderr.decode(errors="replace")
        # A compile that takes over 2 s (a loaded machine) reports its stages
        # ("kiln: STAGE: 1.23 s (2.34 s so far)"); those are not the error.
        lines = [ln for ln in err.splitlines() if not STAGE_LINE.match(ln)]
        if want == "ok":
            if r.returncode != 0:
                bad.append("%s: kiln %s exits %d (want 0): %s" % (name, cmd[0], r.returncode, err[:600]))
        elif (r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("kiln: error: ")
              or not all(f in lines[0] for f in fragments)):
            bad.append("%s: kiln %s exits %d, stderr %r; want exit 2 and one error line with %s"
                       % (name, cmd[0], r.returncode, err[:600], fragments))
    return bad


os.makedirs(OUT, exist_ok=True)
failures = []
for name in CASES:
    if ONLY and name not in ONLY:
        continue
    got = run_case(name)
    print("%s %s" % ("FAIL" if got else "ok  ", name))
    for line in got:
        print("  " + line)
    failures += got
print("hostile catalogue: %d cases, %d failures" % (len(ONLY or CASES), len(failures)))
sys.exit(1 if failures else 0)
