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


# ---- AffineGrid -------------------------------------------------------------

def affine_grid(theta_shape, x_shape, align_corners, sample=False, seed=0):
    """theta [N, 2, 3] or [N, 3, 4]; size = Shape(x) (x [N, C, spatial...]);
    with sample, GridSample(x, grid) too (a spatial transformer)."""
    nodes = [helper.make_node("Shape", ["x"], ["size"]),
             helper.make_node("AffineGrid", ["theta", "size"], ["grid"],
                              align_corners=align_corners)]
    outs = [vi("grid", None)]
    if sample:
        nodes.append(helper.make_node("GridSample", ["x", "grid"], ["y"],
                                      align_corners=align_corners))
        outs.append(vi("y", None))
    m = model(nodes, [vi("theta", ["N", *theta_shape[1:]]), vi("x", ["N", *x_shape[1:]])], outs,
              opset=20)
    r = np.random.default_rng(seed)
    theta = (np.eye(theta_shape[1], theta_shape[2]) +
             0.3 * r.standard_normal(theta_shape)).astype(np.float32)
    return m, {"theta": theta, "x": x_in(x_shape, seed + 1)}


@run
def affine_grid_2d_20():
    return affine_grid((2, 2, 3), (2, 3, 5, 7), 0, sample=True)


@run
def affine_grid_2d_align_corners_20():
    return affine_grid((3, 2, 3), (3, 1, 4, 6), 1, sample=True)


@run
def affine_grid_3d_20():
    return affine_grid((2, 3, 4), (2, 1, 3, 4, 5), 0)


@run
def affine_grid_3d_align_corners_20():
    return affine_grid((1, 3, 4), (1, 2, 4, 2, 3), 1)


# ---- DFT-20: dft_length and axis as inputs ---------------------------------

def dft20(x_shape, inputs, inits, attrs, seed=0):
    node = helper.make_node("DFT", ["x", *inputs], ["y"], **attrs)
    m = model([node], [vi("x", ["N", *x_shape[1:]])], [vi("y", None)], inits, opset=20)
    return m, {"x": x_in(x_shape, seed)}


@run
def dft_20_default_axis():
    """No axis input: axis -2, the one before the real/imaginary dim; complex input."""
    return dft20((2, 3, 6, 2), [], [], {})


@run
def dft_20_axis_input_real_onesided():
    return dft20((2, 7, 4, 1), ["", "ax"], [const("ax", np.array(1, np.int64))],
                 dict(onesided=1))


@run
def dft_20_length_and_negative_axis_inverse():
    """dft_length 8 (zero padding of 5), axis -3, inverse."""
    return dft20((3, 5, 2, 2), ["len", "ax"], [const("len", np.array(8, np.int64)),
                                               const("ax", np.array(-3, np.int64))],
                 dict(inverse=1))


# ---- DeformConv (2-D, as ONNX Runtime) -------------------------------------

def deform_conv(x_shape, w_shape, out_hw, attrs, bias=False, mask=False, seed=0):
    """Offsets of a few pixels (some taps land outside the image)."""
    og = attrs.get("offset_group", 1)
    taps = w_shape[2] * w_shape[3]
    names = ["x", "w", "off", "b" if bias else "", "m" if mask else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], **attrs)
    inputs = [vi("x", ["N", *x_shape[1:]]), vi("off", ["N", og * 2 * taps, *out_hw])]
    if mask:
        inputs.append(vi("m", ["N", og * taps, *out_hw]))
    r = np.random.default_rng(seed)
    inits = [const("w", r.standard_normal(w_shape).astype(np.float32))]
    if bias:
        inits.append(const("b", r.standard_normal(w_shape[0]).astype(np.float32)))
    m = model([node], inputs, [vi("y", None)], inits, opset=19)
    feeds = {"x": x_in(x_shape, seed + 1),
             "off": (1.5 * r.standard_normal((x_shape[0], og * 2 * taps, *out_hw))).astype(
                 np.float32)}
    if mask:
        feeds["m"] = r.uniform(0, 1, (x_shape[0], og * taps, *out_hw)).astype(np.float32)
    return m, feeds


@run
def deform_conv_plain_19():
    return deform_conv((2, 3, 6, 5), (4, 3, 3, 3), (4, 3), {})


@run
def deform_conv_bias_mask_pads_strides_19():
    return deform_conv((2, 2, 7, 8), (3, 2, 2, 3), (4, 4),
                       dict(pads=[1, 0, 0, 1], strides=[2, 2]), bias=True, mask=True)


@run
def deform_conv_groups_offset_groups_dilations_19():
    """group 2, offset_group 2 over 4 channels, dilation [2, 1]."""
    return deform_conv((3, 4, 8, 6), (6, 2, 2, 2), (6, 5),
                       dict(group=2, offset_group=2, dilations=[2, 1]), bias=True, mask=True)


@error("compile: (DeformConv, ai.onnx opset 19): offset must be [1, 8, 2, 2]")
def deform_conv_offset_shape_refused():
    node = helper.make_node("DeformConv", ["x", "w", "off"], ["y"])
    return model([node], [vi("x", [1, 2, 3, 3]), vi("off", [1, 6, 2, 2])], [vi("y", None)],
                 [const("w", np.ones((1, 2, 2, 2), np.float32))], opset=19)


# ---- Resize-19 half_pixel_symmetric -----------------------------------------

def resize_scales(x_shape, scales, attrs, opset=19):
    node = helper.make_node("Resize", ["x", "", "sc"], ["y"], **attrs)
    m = model([node], [vi("x", ["N", *x_shape[1:]])], [vi("y", None)],
              [const("sc", np.array(scales, np.float32))], opset)
    return m, {"x": x_in(x_shape)}


@run
def resize_half_pixel_symmetric_linear_19():
    """Scales whose output sizes are not whole (5 * 1.7 = 8.5 -> 8)."""
    return resize_scales((2, 2, 5, 6), [1, 1, 1.7, 0.6],
                         dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"))


@run
def resize_half_pixel_symmetric_cubic_19():
    return resize_scales((1, 3, 7, 4), [1, 1, 0.7, 2.3],
                         dict(mode="cubic", coordinate_transformation_mode="half_pixel_symmetric"))


@run
def resize_half_pixel_symmetric_nearest_19():
    return resize_scales((2, 1, 6, 9), [1, 1, 1.45, 0.55],
                         dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric"))


# ---- Resize-18 antialias -----------------------------------------------------

@run
def resize_antialias_linear_down_18():
    """2-D shrink by 0.6 and 0.35: the triangle filter widened to 1/scale."""
    return resize_scales((2, 2, 9, 13), [1, 1, 0.6, 0.35], dict(mode="linear", antialias=1),
                         opset=18)


@run
def resize_antialias_cubic_exclude_outside_18():
    return resize_scales((1, 3, 11, 8), [1, 1, 0.45, 0.7],
                         dict(mode="cubic", antialias=1, exclude_outside=1), opset=18)


@run
def resize_antialias_cubic_sizes_align_corners_19():
    """sizes (shrink one axis, grow the other), align_corners, cubic_coeff_a -0.5."""
    node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="cubic", antialias=1,
                            cubic_coeff_a=-0.5, coordinate_transformation_mode="align_corners")
    m = model([node], [vi("x", ["N", 2, 10, 5])], [vi("y", None)],
              [const("sz", np.array([2, 2, 4, 9], np.int64))], opset=19)
    return m, {"x": x_in((2, 2, 10, 5))}


@run
def resize_antialias_linear_3d_asymmetric_18():
    return resize_scales((1, 1, 7, 9, 6), [1, 1, 0.5, 1.5, 0.3],
                         dict(mode="linear", antialias=1,
                              coordinate_transformation_mode="asymmetric"), opset=18)


@run
def resize_antialias_tiny_scale_cubic_18():
    """Shrinking 300 -> 3 (scale 0.01): a cubic filter of 400 taps, wider than
    the kernel's table (computed per tap)."""
    return resize_scales((1, 2, 4, 300), [1, 1, 1, 0.01], dict(mode="cubic", antialias=1),
                         opset=18)


@run
def resize_antialias_tiny_scale_linear_exclude_outside_18():
    """Shrinking both axes strongly (0.02 and 0.03) with exclude_outside."""
    return resize_scales((1, 1, 150, 200), [1, 1, 0.02, 0.03],
                         dict(mode="linear", antialias=1, exclude_outside=1), opset=18)


# ---- float8 (opset 19): Cast and CastLike, exact -----------------------------

F8 = {"e4m3fn": 17, "e4m3fnuz": 18, "e5m2": 19, "e5m2fnuz": 20}


def f8_inputs(n_random, seed=0):
    """Values across float8's range: random magnitudes from 2^-20 to 2^20,
    the largest finite values and just beyond, ties, zeros, infinities, NaN."""
    r = np.random.default_rng(seed)
    v = r.standard_normal(n_random) * 2.0 ** r.integers(-20, 20, n_random)
    special = [0, -0.0, np.inf, -np.inf, np.nan, 240, 248, 250, 256, 448, 464, 472, 480, 490,
               496, 500, 512, 57344, 59392, 61440, 63000, 65536, 1e30, 2.0 ** -9, 2.0 ** -10,
               3 * 2.0 ** -11, 2.0 ** -16, 2.0 ** -17, 2.0 ** -18, 1.0625, 1.1875, -1.0625]
    return np.concatenate([v, special, np.negative(special)]).astype(np.float32)


@run
def cast_float8_every_format_19():
    """float32 -> each float8 format (saturate 1 and 0) -> float32, times 2^16
    so that one float8 step near 0 exceeds verify's atol as well."""
    nodes, outs = [], []
    for name, to in F8.items():
        for sat in (1, 0):
            q, y = f"q_{name}_{sat}", f"y_{name}_{sat}"
            nodes += [helper.make_node("Cast", ["x"], [q], to=to, saturate=sat),
                      helper.make_node("Cast", [q], [y + "_f"], to=TensorProto.FLOAT),
                      helper.make_node("Mul", [y + "_f", "big"], [y])]
            outs.append(vi(y, None))
    x = f8_inputs(400).reshape(2, -1)
    m = model(nodes, [vi("x", ["N", x.shape[1]])], outs,
              [const("big", np.array(65536, np.float32))], opset=19)
    return m, {"x": x}


@run
def cast_float8_from_to_integers_and_double_21():
    """int32 and float64 into float8 (E5M2 saturating, E4M3FN not), float8
    into int32 through Reshape and CastLike (opset 21)."""
    nodes = [helper.make_node("Cast", ["i"], ["qi"], to=F8["e5m2"], saturate=1),
             helper.make_node("Cast", ["d"], ["qd"], to=F8["e4m3fn"], saturate=0),
             helper.make_node("Reshape", ["qi", "shape"], ["qr"]),
             helper.make_node("Cast", ["qr"], ["yi"], to=TensorProto.INT32),
             helper.make_node("CastLike", ["qd", "x"], ["yd"])]
    r = np.random.default_rng(4)
    m = model(nodes, [vi("i", ["N", 6], TensorProto.INT32), vi("d", ["N", 5], TensorProto.DOUBLE),
                      vi("x", ["N", 5])],
              [vi("yi", None, TensorProto.INT32), vi("yd", None)],
              [const("shape", np.array([-1, 3, 2], np.int64))], opset=21)
    return m, {"i": r.integers(-70000, 70000, (3, 6), dtype=np.int32),
               "d": r.standard_normal((3, 5)) * 100, "x": x_in((3, 5))}


@run
def castlike_float8_initializer_19():
    """CastLike to a float8 initializer's type (E4M3FNUZ), saturate 0, and back."""
    target = TensorProto(name="t", data_type=F8["e4m3fnuz"], dims=[1], raw_data=bytes([0x38]))
    nodes = [helper.make_node("CastLike", ["x", "t"], ["q"], saturate=0),
             helper.make_node("CastLike", ["q", "x"], ["y0"]),
             helper.make_node("Mul", ["y0", "big"], ["y"])]
    m = model(nodes, [vi("x", ["N", 16])], [vi("y", None)],
              [target, const("big", np.array(65536, np.float32))], opset=19)
    return m, {"x": (x_in((3, 16), 7) * 100).astype(np.float32)}


@error("compile: (Add, ai.onnx opset 19): input q is float8e4m3fn; float8 values are only "
       "converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved")
def add_on_float8_refused():
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=F8["e4m3fn"]),
             helper.make_node("Add", ["q", "q"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    return model(nodes, [vi("x", ["N", 4])], [vi("y", None)], opset=19)


# ---- ImageScaler (experimental; ONNX removed it at opset 10) ------------------
# Classic image models exported before ONNX 1.5 carry it; ONNX Runtime runs
# it at opsets 1 to 9 and refuses it from 10 on, as kiln does.

def image_scaler(shape, attrs, opset, elem=F):
    n = helper.make_node("ImageScaler", ["x"], ["y"], name="scaler", **attrs)
    m = model([n], [vi("x", list(shape), elem)], [vi("y", list(shape), elem)], opset=opset)
    m.ir_version = 4 if opset < 9 else 6
    return m


@run
def image_scaler_8():
    """scale and a bias per channel, batch 2, at opset 8."""
    m = image_scaler((2, 3, 4, 5), dict(bias=[1.0, -2.5, 0.125], scale=0.0078125), 8)
    return m, {"x": x_in((2, 3, 4, 5)) * 255}


@run
def image_scaler_1_default_scale():
    """No scale (1.0) at opset 1, one channel, a non-square image."""
    m = image_scaler((1, 1, 3, 7), dict(bias=[-0.5]), 1)
    return m, {"x": x_in((1, 1, 3, 7))}


@run
def image_scaler_9():
    """At opset 9 (the last before ONNX removed it), batch 3."""
    m = image_scaler((3, 2, 2, 2), dict(bias=[0.1, -0.2], scale=3.0), 9)
    return m, {"x": x_in((3, 2, 2, 2))}


@error('compile: node 0 "scaler" (ImageScaler, ai.onnx opset 8): bias has 2 values; the input '
       'has 3 channels')
def image_scaler_bias_length_refused():
    return image_scaler((1, 3, 2, 2), dict(bias=[1.0, 2.0], scale=1.0), 8)


@error('check: (ImageScaler, ai.onnx opset 10): ImageScaler-10 is deprecated')
def image_scaler_10_refused():
    return image_scaler((1, 3, 2, 2), dict(bias=[1.0, 2.0, 3.0], scale=1.0), 10)
