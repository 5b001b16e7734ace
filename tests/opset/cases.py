"""ai.onnx opsets 18-21 (tests/realmodels/run.py --cases tests/opset/cases.py):
one small model per changed schema, built with onnx.helper at the newer
opset (Debian's onnx 1.12 has no schemas for them, so the checker is not
run), compared with ONNX Runtime 1.30."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from registry import Cases, const, opset_model, vi, x_in

_cases = Cases()
RUN, ERRORS = _cases.RUN, _cases.ERRORS
run, error = _cases.run, _cases.error
F = TensorProto.FLOAT

model = opset_model


@run
def relu_18():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", 5])], [vi("y", ["N", 5])])
    return m, {"x": x_in((3, 5))}


@run
def reduce_axes_input_18():
    """Reduce* take axes as input 1 from opset 18 (and keepdims, noop)."""
    nodes = [helper.make_node("ReduceMax", ["x", "a1"], ["r1"], keepdims=0),
             helper.make_node("ReduceMean", ["x", "a2"], ["r2"]),
             helper.make_node("ReduceProd", ["x", "a1"], ["r3"]),
             helper.make_node("ReduceL2", ["x"], ["r4"], keepdims=0),
             helper.make_node("ReduceSumSquare", ["x", "none"], ["r5"], noop_with_empty_axes=1),
             helper.make_node("ReduceLogSumExp", ["x", "a2"], ["r6"], keepdims=0),
             helper.make_node("ReduceMin", ["x", "a1"], ["r7"]),
             helper.make_node("ReduceL1", ["x", "a2"], ["r8"])]
    outs = [vi("r1", ["N", 4]), vi("r2", ["N", 1, 1]), vi("r3", ["N", 1, 4]), vi("r4", []),
            vi("r5", ["N", 3, 4]), vi("r6", ["N"]), vi("r7", ["N", 1, 4]), vi("r8", ["N", 1, 1])]
    m = model(nodes, [vi("x", ["N", 3, 4])], outs,
              [const("a1", np.array([1], np.int64)), const("a2", np.array([-1, 1], np.int64)),
               const("none", np.array([], np.int64))])
    return m, {"x": x_in((2, 3, 4))}


@run
def reduce_max_20():
    m = model([helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=0)],
              [vi("x", ["N", 6])], [vi("y", ["N"])], [const("a", np.array([1], np.int64))],
              opset=20)
    return m, {"x": x_in((4, 6))}


@run
def split_num_outputs_18():
    """Split-18 num_outputs: 7 into 3, 3, 1."""
    m = model([helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
              [vi("x", ["N", 7])], [vi("a", ["N", 3]), vi("b", ["N", 3]), vi("c", ["N", 1])])
    return m, {"x": x_in((2, 7))}


@run
def pad_axes_18():
    """Pad-18 axes input: pads for axis -1 only."""
    m = model([helper.make_node("Pad", ["x", "p", "v", "ax"], ["y"])],
              [vi("x", ["N", 3, 4])], [vi("y", ["N", 3, 7])],
              [const("p", np.array([1, 2], np.int64)), const("v", np.array(0.5, np.float32)),
               const("ax", np.array([-1], np.int64))])
    return m, {"x": x_in((2, 3, 4))}


@run
def pad_wrap_19():
    m = model([helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")],
              [vi("x", ["N", 3, 4])], [vi("y", ["N", 5, 9])],
              [const("p", np.array([0, 1, 2, 0, 1, 3], np.int64))], opset=19)
    return m, {"x": x_in((2, 3, 4))}


@run
def resize_axes_18():
    """Resize-18 axes: sizes for the spatial axes only."""
    m = model([helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear", axes=[2, 3])],
              [vi("x", ["N", 2, 4, 4])], [vi("y", ["N", 2, 8, 6])],
              [const("s", np.array([8, 6], np.int64))])
    return m, {"x": x_in((2, 2, 4, 4))}


@run
def resize_keep_aspect_18():
    """keep_aspect_ratio_policy=not_larger: one scale for both axes."""
    m = model([helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest",
                                axes=[2, 3], keep_aspect_ratio_policy="not_larger")],
              [vi("x", ["N", 1, 4, 6])], [vi("y", ["N", 1, 6, 9])],
              [const("s", np.array([7, 9], np.int64))])
    return m, {"x": x_in((1, 1, 4, 6))}


@run
def mish_18():
    m = model([helper.make_node("Mish", ["x"], ["y"])], [vi("x", ["N", 8])], [vi("y", ["N", 8])])
    return m, {"x": x_in((3, 8)) * 4}


@run
def gelu_20():
    m = model([helper.make_node("Gelu", ["x"], ["a"]),
               helper.make_node("Gelu", ["x"], ["b"], approximate="tanh")],
              [vi("x", ["N", 8])], [vi("a", ["N", 8]), vi("b", ["N", 8])], opset=20)
    return m, {"x": x_in((3, 8)) * 3}


@run
def cast_saturate_19():
    m = model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32, saturate=1)],
              [vi("x", ["N", 4])], [vi("y", ["N", 4], TensorProto.INT32)], opset=19)
    return m, {"x": x_in((2, 4)) * 10}


@run
def shape_ops_21():
    """The opset-21 type-only updates in one chain: Shape, ConstantOfShape,
    Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity, Size, IsNaN."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Add", ["x", "ones"], ["a"]),
        helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Unsqueeze", ["t", "ax"], ["u"]),
        helper.make_node("Squeeze", ["u", "ax"], ["q"]),
        helper.make_node("Flatten", ["q"], ["f"], axis=1),
        helper.make_node("Reshape", ["f", "rs"], ["r"]),
        helper.make_node("Identity", ["r"], ["y"]),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("IsNaN", ["x"], ["nan"]),
    ]
    m = model(nodes, [vi("x", ["N", 2, 3])],
              [vi("y", ["N", 3, 2]), vi("n", [], TensorProto.INT64),
               vi("nan", ["N", 2, 3], TensorProto.BOOL)],
              [const("ax", np.array([1], np.int64)), const("rs", np.array([0, 3, 2], np.int64))],
              opset=21)
    x = x_in((2, 2, 3))
    x[0, 1, 1] = np.nan
    return m, {"x": x}


@run
def if_loop_21():
    """If-21 with a shape-decided condition, Loop-21 with a trip count."""
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                               [vi("t", None)])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [],
                               [vi("e", None)])
    body = helper.make_graph([helper.make_node("Add", ["acc", "x"], ["acc2"]),
                              helper.make_node("Identity", ["c"], ["c2"])], "body",
                             [vi("i", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL),
                              vi("acc", ["N", 4])],
                             [vi("c2", [], TensorProto.BOOL), vi("acc2", ["N", 4])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Size", ["s"], ["r"]),
             helper.make_node("Equal", ["r", "two"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Loop", ["trip", "", "y"], ["z"], body=body)]
    m = model(nodes, [vi("x", ["N", 4])], [vi("z", ["N", 4])],
              [const("two", np.array(2, np.int64)), const("trip", np.array(3, np.int64))],
              opset=21)
    return m, {"x": x_in((2, 4))}


@run
def groupnorm_21():
    """GroupNormalization-21: scale and bias per channel."""
    r = np.random.default_rng(10)
    m = model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2,
                                epsilon=1e-3)],
              [vi("x", ["N", 4, 3, 2])], [vi("y", ["N", 4, 3, 2])],
              [const("s", r.standard_normal(4).astype(np.float32)),
               const("b", r.standard_normal(4).astype(np.float32))], opset=21)
    return m, {"x": x_in((2, 4, 3, 2)) * 3 + 1}


@run
def groupnorm_18():
    """GroupNormalization-18: scale and bias per group."""
    r = np.random.default_rng(11)
    m = model([helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)],
              [vi("x", ["N", 6, 5])], [vi("y", ["N", 6, 5])],
              [const("s", r.standard_normal(3).astype(np.float32)),
               const("b", r.standard_normal(3).astype(np.float32))], opset=18)
    return m, {"x": x_in((2, 6, 5))}


@run
def bitwise_18():
    """BitwiseAnd/Or/Xor (broadcast) and BitwiseNot on int32 and uint8, one
    chain folded at compile time from shapes."""
    i32, u8 = TensorProto.INT32, TensorProto.UINT8
    nodes = [helper.make_node("BitwiseAnd", ["a", "b"], ["and"]),
             helper.make_node("BitwiseOr", ["a", "k"], ["or"]),
             helper.make_node("BitwiseXor", ["u", "v"], ["xor"]),
             helper.make_node("BitwiseNot", ["u"], ["not"]),
             helper.make_node("Shape", ["a"], ["s"]),
             helper.make_node("BitwiseXor", ["s", "mask"], ["sx"]),
             helper.make_node("BitwiseNot", ["sx"], ["sn"])]
    m = model(nodes, [vi("a", ["N", 4], i32), vi("b", ["N", 4], i32), vi("u", ["N", 3], u8),
                      vi("v", ["N", 3], u8)],
              [vi("and", ["N", 4], i32), vi("or", ["N", 4], i32), vi("xor", ["N", 3], u8),
               vi("not", ["N", 3], u8), vi("sn", [2], TensorProto.INT64)],
              [const("k", np.array([1, 2, 4, -8], np.int32)),
               const("mask", np.array([5, 3], np.int64))])
    r = np.random.default_rng(9)
    return m, {"a": r.integers(-1000, 1000, (2, 4), dtype=np.int32),
               "b": r.integers(-1000, 1000, (2, 4), dtype=np.int32),
               "u": r.integers(0, 255, (2, 3), dtype=np.uint8),
               "v": r.integers(0, 255, (2, 3), dtype=np.uint8)}


@run
def reduce_max_min_bool_20():
    """ReduceMax and ReduceMin on bool (opset 20): any and all along an axis."""
    B = TensorProto.BOOL
    nodes = [helper.make_node("ReduceMax", ["x", "a1"], ["any"], keepdims=0),
             helper.make_node("ReduceMin", ["x", "a1"], ["all"], keepdims=1),
             helper.make_node("ReduceMin", ["x", "a2"], ["all2"], keepdims=0)]
    m = model(nodes, [vi("x", ["N", 3, 4], B)],
              [vi("any", ["N", 4], B), vi("all", ["N", 1, 4], B), vi("all2", ["N"], B)],
              [const("a1", np.array([1], np.int64)), const("a2", np.array([1, 2], np.int64))],
              opset=20)
    x = np.random.default_rng(3).random((3, 3, 4)) > 0.3
    x[1] = True   # one sample all true, one all false
    x[2] = False
    return m, {"x": x}


@run
def lpnorm_float64():
    """LpNormalization on float64 (p 2 on the last axis, p 1 on axis 1; a zero line)."""
    D = TensorProto.DOUBLE
    nodes = [helper.make_node("LpNormalization", ["x"], ["y2"], axis=-1, p=2),
             helper.make_node("LpNormalization", ["x"], ["y1"], axis=1, p=1)]
    m = model(nodes, [vi("x", ["N", 3, 5], D)], [vi("y2", ["N", 3, 5], D), vi("y1", ["N", 3, 5], D)])
    x = np.random.default_rng(4).standard_normal((2, 3, 5))
    x[0, :, 1] = 0
    x[1, 2, :] = 0
    return m, {"x": x}


@run
def scatter_reduction_max_min_18():
    """ScatterElements and ScatterND with reduction max and min (opset 18);
    repeated indices reduce several updates into one element."""
    idx = np.array([[0, 2, 2], [3, 3, 1]], np.int64)
    nd = np.array([[1], [0], [1]], np.int64)
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["emax"], axis=1,
                              reduction="max"),
             helper.make_node("ScatterElements", ["x", "i", "u"], ["emin"], axis=1,
                              reduction="min"),
             helper.make_node("ScatterND", ["x", "j", "v"], ["nmax"], reduction="max"),
             helper.make_node("ScatterND", ["x", "j", "v"], ["nmin"], reduction="min")]
    m = model(nodes, [vi("x", [2, 4]), vi("u", [2, 3]), vi("v", [3, 4])],
              [vi(y, [2, 4]) for y in ("emax", "emin", "nmax", "nmin")],
              [const("i", idx), const("j", nd)])
    return m, {"x": x_in((2, 4)), "u": x_in((2, 3), 1), "v": x_in((3, 4), 2)}
