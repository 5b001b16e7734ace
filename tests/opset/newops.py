"""Operators new in (or changed by) ai.onnx opsets 18-21 beyond the schema
updates of cases.py (tests/realmodels/run.py --cases tests/opset/newops.py):
LpPool, AveragePool dilations, CenterCropPad, Col2Im, AffineGrid, DFT-20,
... Each model is built with onnx.helper at its opset (Debian's onnx 1.12
does not know them, so the checker is not run) and compared with ONNX
Runtime 1.30; several cases per op (attributes, odd shapes, strides,
batch > 1)."""
import numpy as np
from onnx import TensorProto, helper

from registry import Cases, const, opset_model, vi, x_in

_cases = Cases()
RUN, ERRORS = _cases.RUN, _cases.ERRORS
run, error = _cases.run, _cases.error
F = TensorProto.FLOAT
I64 = TensorProto.INT64

model = opset_model


def single(op, x_shape, attrs, opset, inits=(), extra_inputs=(), seed=0, scale=1.0):
    """One node op(x, *extra_inputs) -> y; the output shape left to kiln and
    ORT (declared with symbolic dims)."""
    node = helper.make_node(op, ["x", *extra_inputs], ["y"], **attrs)
    m = model([node], [vi("x", ["N", *x_shape[1:]])], [vi("y", None)], inits, opset)
    return m, {"x": x_in(x_shape, seed) * scale}


# ---- LpPool, GlobalLpPool, AveragePool dilations -------------------------

@run
def lppool_2d_p2_11():
    return single("LpPool", (2, 3, 7, 6), dict(kernel_shape=[3, 2], strides=[2, 1]), 11)


@run
def lppool_1d_p1_pads_18():
    return single("LpPool", (3, 2, 9), dict(kernel_shape=[3], p=1, pads=[1, 2], strides=[2]), 18)


@run
def lppool_2d_p3_dilated_ceil_18():
    return single("LpPool", (2, 2, 8, 7), dict(kernel_shape=[2, 3], p=3, dilations=[2, 1],
                                               strides=[2, 2], ceil_mode=1), 18)


@run
def lppool_3d_same_upper_18():
    return single("LpPool", (1, 2, 5, 4, 6), dict(kernel_shape=[2, 2, 3], auto_pad="SAME_UPPER",
                                                  strides=[2, 1, 2]), 18)


@run
def global_lppool_2():
    m = model([helper.make_node("GlobalLpPool", ["x"], ["a"]),
               helper.make_node("GlobalLpPool", ["x"], ["b"], p=3)],
              [vi("x", ["N", 3, 4, 5])], [vi("a", None), vi("b", None)], opset=2)
    return m, {"x": x_in((2, 3, 4, 5))}


@run
def averagepool_dilations_19():
    return single("AveragePool", (2, 3, 9, 8), dict(kernel_shape=[3, 2], dilations=[2, 3],
                                                    strides=[1, 2], pads=[1, 0, 2, 1]), 19)


@run
def averagepool_dilations_pad_counted_19():
    return single("AveragePool", (1, 2, 10), dict(kernel_shape=[3], dilations=[2], pads=[2, 2],
                                                  count_include_pad=1), 19)


@run
def averagepool_dilations_3d_19():
    return single("AveragePool", (2, 1, 6, 5, 7), dict(kernel_shape=[2, 2, 2],
                                                       dilations=[2, 1, 3]), 19)


@error('compile: node 0 "" (LpPool, ai.onnx opset 18): p must be a whole number >= 1, got 0')
def lppool_p_zero_refused():
    return single("LpPool", (1, 1, 4, 4), dict(kernel_shape=[2, 2], p=0), 18)[0]


# ---- CenterCropPad --------------------------------------------------------

@run
def center_crop_pad_crop_and_pad_18():
    """axes [1, 2]: 9 -> 4 (odd difference: the window starts 2 in), 5 -> 8."""
    return single("CenterCropPad", (3, 9, 5), dict(axes=[1, 2]), 18,
                  [const("s", np.array([4, 8], np.int64))], ["s"])


@run
def center_crop_pad_negative_axes_int_18():
    """axes [-1, -3] on int32, 7 -> 10 (pad 1 before, 2 after), 6 -> 3."""
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[-1, -3])
    m = model([node], [vi("x", ["N", 6, 4, 7], TensorProto.INT32)],
              [vi("y", None, TensorProto.INT32)], [const("s", np.array([10, 3], np.int64))])
    r = np.random.default_rng(3)
    return m, {"x": r.integers(-100, 100, (2, 6, 4, 7), dtype=np.int32)}


@run
def center_crop_pad_all_axes_18():
    """No axes: every axis, the batch one kept at its size."""
    return single("CenterCropPad", (2, 5, 6), {}, 18,
                  [const("s", np.array([2, 8, 3], np.int64))], ["s"])


# ---- Col2Im -----------------------------------------------------------------

def col2im(x_shape, image, block, attrs, seed=0):
    node = helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], **attrs)
    m = model([node], [vi("x", ["N", *x_shape[1:]])], [vi("y", None)],
              [const("img", np.array(image, np.int64)), const("blk", np.array(block, np.int64))])
    return m, {"x": x_in(x_shape, seed)}


@run
def col2im_2d_18():
    """5x5 image, 1x5 blocks, stride 1: the ONNX example's geometry, 2 channels."""
    return col2im((2, 10, 5), [5, 5], [1, 5], {})


@run
def col2im_2d_strided_dilated_padded_18():
    """7x6 image, 2x3 blocks, stride [2, 1], dilation [1, 2], pads [1, 0, 0, 2]:
    (7+1-2)//2+1 = 4 by (6+2-5)//1+1 = 4 positions."""
    return col2im((3, 2 * 6, 16), [7, 6], [2, 3],
                  dict(strides=[2, 1], dilations=[1, 2], pads=[1, 0, 0, 2]))


@run
def col2im_1d_18():
    return col2im((2, 3 * 3, 4), [9], [3], dict(strides=[2]))


@run
def col2im_3d_18():
    """4x3x5 image, 2x2x2 blocks: 3 * 2 * 4 positions."""
    return col2im((1, 8, 24), [4, 3, 5], [2, 2, 2], {})


@error("compile: (Col2Im, ai.onnx opset 18): input is [1, 10, 6]; it must be [N, C * 5, 5]")
def col2im_wrong_block_count_refused():
    return col2im((1, 10, 6), [5, 5], [1, 5], {})[0]


@error('compile: (LpPool, ai.onnx opset 18): attribute "p" is a float; LpPool-18 takes an int')
def lppool_float_p_refused():
    return single("LpPool", (1, 1, 4, 4), dict(kernel_shape=[2, 2], p=2.0), 18)[0]
