"""The ONNX operator schemas kiln knows beyond the installed onnx package
(Debian's onnx 1.12, opsets up to 17), in one place for the three generators
of the compiler's operator tables:

    scripts/gen-ops-def.py   > compiler/ops.def         (versions and arity)
    scripts/gen-op-types.py  > compiler/op-types.def    (element types, kiln ops)
    scripts/gen_attr_types.py > compiler/attr_types.def (attribute types)

LATER_ATTRS holds the attributes of every opset 18-21 schema version kiln
accepts that has attributes (a version without, such as Identity-19, has no
row).
"""

# ai.onnx opsets 18-21 (ONNX 1.13-1.16), which Debian's onnx 1.12 does not
# have: every schema version added in them, from ONNX's docs/Changelog.md, as
# (name, since_version, min_in, max_in, min_out, max_out); None for an arity
# is "as in the previous version" (a change of types or attributes only).
LATER_OPSET = 21
LATER = [
    # opset 18
    ("BitwiseAnd", 18, 2, 2, 1, 1), ("BitwiseNot", 18, 1, 1, 1, 1),
    ("BitwiseOr", 18, 2, 2, 1, 1), ("BitwiseXor", 18, 2, 2, 1, 1),
    ("CenterCropPad", 18, 2, 2, 1, 1), ("Col2Im", 18, 3, 3, 1, 1),
    ("GroupNormalization", 18, 3, 3, 1, 1), ("LpPool", 18, None, None, None, None),
    ("Mish", 18, 1, 1, 1, 1), ("OptionalGetElement", 18, 1, 1, 1, 1),
    ("OptionalHasElement", 18, 0, 1, 1, 1), ("Pad", 18, 2, 4, 1, 1),
    ("ReduceL1", 18, 1, 2, 1, 1), ("ReduceL2", 18, 1, 2, 1, 1),
    ("ReduceLogSum", 18, 1, 2, 1, 1), ("ReduceLogSumExp", 18, 1, 2, 1, 1),
    ("ReduceMax", 18, 1, 2, 1, 1), ("ReduceMean", 18, 1, 2, 1, 1),
    ("ReduceMin", 18, 1, 2, 1, 1), ("ReduceProd", 18, 1, 2, 1, 1),
    ("ReduceSumSquare", 18, 1, 2, 1, 1), ("Resize", 18, None, None, None, None),
    ("ScatterElements", 18, None, None, None, None), ("ScatterND", 18, None, None, None, None),
    ("Split", 18, None, None, None, None),
    # opset 19
    ("AveragePool", 19, None, None, None, None), ("Cast", 19, None, None, None, None),
    ("CastLike", 19, None, None, None, None), ("Constant", 19, None, None, None, None),
    ("DeformConv", 19, 3, 5, 1, 1), ("DequantizeLinear", 19, None, None, None, None),
    ("Equal", 19, None, None, None, None), ("Identity", 19, None, None, None, None),
    ("If", 19, None, None, None, None), ("Loop", 19, None, None, None, None),
    ("Pad", 19, None, None, None, None), ("QuantizeLinear", 19, None, None, None, None),
    ("Reshape", 19, None, None, None, None), ("Resize", 19, None, None, None, None),
    ("Scan", 19, None, None, None, None), ("Shape", 19, None, None, None, None),
    ("Size", 19, None, None, None, None),
    # opset 20
    ("AffineGrid", 20, 2, 2, 1, 1), ("ConstantOfShape", 20, None, None, None, None),
    ("DFT", 20, 1, 3, 1, 1), ("Gelu", 20, 1, 1, 1, 1),
    ("GridSample", 20, None, None, None, None), ("ImageDecoder", 20, 1, 1, 1, 1),
    ("IsInf", 20, None, None, None, None), ("IsNaN", 20, None, None, None, None),
    ("ReduceMax", 20, None, None, None, None), ("ReduceMin", 20, None, None, None, None),
    ("RegexFullMatch", 20, 1, 1, 1, 1), ("StringConcat", 20, 2, 2, 1, 1),
    ("StringSplit", 20, 1, 1, 2, 2),
    # opset 21
    ("Cast", 21, None, None, None, None), ("CastLike", 21, None, None, None, None),
    ("Constant", 21, None, None, None, None), ("ConstantOfShape", 21, None, None, None, None),
    ("DequantizeLinear", 21, None, None, None, None), ("Flatten", 21, None, None, None, None),
    ("GroupNormalization", 21, None, None, None, None), ("Identity", 21, None, None, None, None),
    ("If", 21, None, None, None, None), ("Loop", 21, None, None, None, None),
    ("Pad", 21, None, None, None, None), ("QLinearMatMul", 21, None, None, None, None),
    ("QuantizeLinear", 21, None, None, None, None), ("Reshape", 21, None, None, None, None),
    ("Scan", 21, None, None, None, None), ("Shape", 21, None, None, None, None),
    ("Size", 21, None, None, None, None), ("Squeeze", 21, None, None, None, None),
    ("Transpose", 21, None, None, None, None), ("Unsqueeze", 21, None, None, None, None),
]


# Operators added in ai.onnx opsets 18-21 (see gen-ops-def.py), which onnx 1.12
# does not know: their main type parameter, from ONNX's docs/Operators.md.
FLOATS = "float32 float64 float16 bfloat16"
INTS = "int8 int16 int32 int64 uint8 uint16 uint32 uint64"
ALL = f"{FLOATS} {INTS} bool string complex64 complex128"
LATER_TYPES = {
    "AffineGrid": FLOATS, "BitwiseAnd": INTS, "BitwiseNot": INTS, "BitwiseOr": INTS,
    "BitwiseXor": INTS, "CenterCropPad": ALL, "Col2Im": ALL, "DeformConv": "float32 float64 float16",
    "Gelu": FLOATS, "GroupNormalization": FLOATS, "ImageDecoder": "uint8",
    "Mish": "float32 float64 float16", "RegexFullMatch": "string", "StringConcat": "string",
    "StringSplit": "string",
}


# The attributes of the ai.onnx opsets 18-21 schemas (ONNX 1.13-1.16) that
# onnx 1.12 does not have, for the operators kiln compiles at those versions
# (from ONNX's docs/Changelog.md); tests/hostile/catalogue.py mistypes
# attributes of several of them.
POOL = {"auto_pad": "STRING", "ceil_mode": "INT", "dilations": "INTS", "kernel_shape": "INTS",
        "pads": "INTS", "strides": "INTS"}
RESIZE = {"antialias": "INT", "axes": "INTS", "coordinate_transformation_mode": "STRING",
          "cubic_coeff_a": "FLOAT", "exclude_outside": "INT", "extrapolation_value": "FLOAT",
          "keep_aspect_ratio_policy": "STRING", "mode": "STRING", "nearest_mode": "STRING"}
CONSTANT = {"sparse_value": "SPARSE_TENSOR", "value": "TENSOR", "value_float": "FLOAT",
            "value_floats": "FLOATS", "value_int": "INT", "value_ints": "INTS",
            "value_string": "STRING", "value_strings": "STRINGS"}
REDUCE = {"keepdims": "INT", "noop_with_empty_axes": "INT"}
SCAN = {"body": "GRAPH", "num_scan_inputs": "INT", "scan_input_axes": "INTS",
        "scan_input_directions": "INTS", "scan_output_axes": "INTS",
        "scan_output_directions": "INTS"}
BRANCHES = {"else_branch": "GRAPH", "then_branch": "GRAPH"}
LATER_ATTRS = [
    ("AffineGrid", 20, {"align_corners": "INT"}),
    ("AveragePool", 19, dict(POOL, count_include_pad="INT")),
    ("Cast", 19, {"saturate": "INT", "to": "INT"}),
    ("Cast", 21, {"saturate": "INT", "to": "INT"}),
    ("CastLike", 19, {"saturate": "INT"}),
    ("CastLike", 21, {"saturate": "INT"}),
    ("CenterCropPad", 18, {"axes": "INTS"}),
    ("Col2Im", 18, {"dilations": "INTS", "pads": "INTS", "strides": "INTS"}),
    ("Constant", 19, CONSTANT),
    ("Constant", 21, CONSTANT),
    ("ConstantOfShape", 20, {"value": "TENSOR"}),
    ("ConstantOfShape", 21, {"value": "TENSOR"}),
    ("DFT", 20, {"inverse": "INT", "onesided": "INT"}),
    ("DeformConv", 19, {"dilations": "INTS", "group": "INT", "kernel_shape": "INTS",
                        "offset_group": "INT", "pads": "INTS", "strides": "INTS"}),
    ("DequantizeLinear", 19, {"axis": "INT"}),
    ("DequantizeLinear", 21, {"axis": "INT", "block_size": "INT"}),
    ("Flatten", 21, {"axis": "INT"}),
    ("Gelu", 20, {"approximate": "STRING"}),
    ("GridSample", 20, {"align_corners": "INT", "mode": "STRING", "padding_mode": "STRING"}),
    ("GroupNormalization", 18, {"epsilon": "FLOAT", "num_groups": "INT"}),
    ("GroupNormalization", 21, {"epsilon": "FLOAT", "num_groups": "INT", "stash_type": "INT"}),
    ("If", 19, BRANCHES),
    ("If", 21, BRANCHES),
    ("ImageDecoder", 20, {"pixel_format": "STRING"}),
    ("IsInf", 20, {"detect_negative": "INT", "detect_positive": "INT"}),
    ("Loop", 19, {"body": "GRAPH"}),
    ("Loop", 21, {"body": "GRAPH"}),
    ("LpPool", 18, dict(POOL, p="INT")),
    ("Pad", 18, {"mode": "STRING"}),
    ("Pad", 19, {"mode": "STRING"}),
    ("Pad", 21, {"mode": "STRING"}),
    ("QuantizeLinear", 19, {"axis": "INT", "saturate": "INT"}),
    ("QuantizeLinear", 21, {"axis": "INT", "block_size": "INT", "output_dtype": "INT",
                            "saturate": "INT"}),
    ("ReduceL1", 18, REDUCE),
    ("ReduceL2", 18, REDUCE),
    ("ReduceLogSum", 18, REDUCE),
    ("ReduceLogSumExp", 18, REDUCE),
    ("ReduceMax", 18, REDUCE),
    ("ReduceMax", 20, REDUCE),
    ("ReduceMean", 18, REDUCE),
    ("ReduceMin", 18, REDUCE),
    ("ReduceMin", 20, REDUCE),
    ("ReduceProd", 18, REDUCE),
    ("ReduceSumSquare", 18, REDUCE),
    ("RegexFullMatch", 20, {"pattern": "STRING"}),
    ("Reshape", 19, {"allowzero": "INT"}),
    ("Reshape", 21, {"allowzero": "INT"}),
    ("Resize", 18, RESIZE),
    ("Resize", 19, RESIZE),
    ("Scan", 19, SCAN),
    ("Scan", 21, SCAN),
    ("ScatterElements", 18, {"axis": "INT", "reduction": "STRING"}),
    ("ScatterND", 18, {"reduction": "STRING"}),
    ("Shape", 19, {"end": "INT", "start": "INT"}),
    ("Shape", 21, {"end": "INT", "start": "INT"}),
    ("Split", 18, {"axis": "INT", "num_outputs": "INT"}),
    ("StringSplit", 20, {"delimiter": "STRING", "maxsplit": "INT"}),
    ("Transpose", 21, {"perm": "INTS"}),
]


# Experimental operators ONNX removed before 1.12 (ONNX 1.5 dropped its
# experimental set) that classic exports still carry and ONNX Runtime still
# runs up to the opset named by "removed" (a deprecated version from there on,
# as ONNX marks a removed op). One row adds the op to all three tables.
EXPERIMENTAL = [
    # y = scale * x + bias[c] on [N, C, ...] (Caffe-style preprocessing in
    # classic image models); ONNX Runtime runs it at opsets 1-9.
    {"name": "ImageScaler", "since": 1, "removed": 10, "arity": (1, 1, 1, 1),
     "types": "float32 float64 float16", "attrs": {"bias": "FLOATS", "scale": "FLOAT"}},
]
