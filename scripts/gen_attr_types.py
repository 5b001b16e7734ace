#!/usr/bin/python3
"""Writes compiler/attr_types.def: the type of every attribute of every ONNX
operator schema (ai.onnx and ai.onnx.ml, every version) from the installed
python3-onnx, sorted as compiler/attr_types.c searches it (strcmp order of
domain, op type, then since version, then attribute name).

usage: scripts/gen_attr_types.py > compiler/attr_types.def
"""
import onnx
import onnx.defs

rows = []
for s in onnx.defs.get_all_schemas_with_history():
    if s.domain not in ("", "ai.onnx.ml"):
        continue
    for name, a in s.attributes.items():
        rows.append((s.domain.encode(), s.name.encode(), s.since_version, name.encode(),
                     a.type.name))
# Schemas of ai.onnx opsets 18-21 (ONNX 1.13-1.16) that onnx 1.12 does not
# have, for the operators kiln compiles at those versions (from ONNX's
# docs/Changelog.md).
POOL = {"auto_pad": "STRING", "ceil_mode": "INT", "dilations": "INTS", "kernel_shape": "INTS",
        "pads": "INTS", "strides": "INTS"}
RESIZE = {"antialias": "INT", "axes": "INTS", "coordinate_transformation_mode": "STRING",
          "cubic_coeff_a": "FLOAT", "exclude_outside": "INT", "extrapolation_value": "FLOAT",
          "keep_aspect_ratio_policy": "STRING", "mode": "STRING", "nearest_mode": "STRING"}
LATER = [
    ("AffineGrid", 20, {"align_corners": "INT"}),
    ("AveragePool", 19, dict(POOL, count_include_pad="INT")),
    ("Cast", 19, {"saturate": "INT", "to": "INT"}),
    ("Cast", 21, {"saturate": "INT", "to": "INT"}),
    ("CastLike", 19, {"saturate": "INT"}),
    ("CastLike", 21, {"saturate": "INT"}),
    ("CenterCropPad", 18, {"axes": "INTS"}),
    ("Col2Im", 18, {"dilations": "INTS", "pads": "INTS", "strides": "INTS"}),
    ("DFT", 20, {"inverse": "INT", "onesided": "INT"}),
    ("DeformConv", 19, {"dilations": "INTS", "group": "INT", "kernel_shape": "INTS",
                        "offset_group": "INT", "pads": "INTS", "strides": "INTS"}),
    ("DequantizeLinear", 19, {"axis": "INT"}),
    ("DequantizeLinear", 21, {"axis": "INT", "block_size": "INT"}),
    ("LpPool", 18, dict(POOL, p="INT")),
    ("QuantizeLinear", 19, {"axis": "INT", "saturate": "INT"}),
    ("QuantizeLinear", 21, {"axis": "INT", "block_size": "INT", "output_dtype": "INT",
                            "saturate": "INT"}),
    ("Resize", 18, RESIZE),
    ("Resize", 19, RESIZE),
]
known = {(d, op.decode(), v) for d, op, v, _, _ in rows}
for op, since, attrs in LATER:
    assert (b"", op, since) not in known
    for name, typ in attrs.items():
        rows.append((b"", op.encode(), since, name.encode(), typ))
rows.sort()
print("/* Generated from the operator schemas of onnx %s and the script's table of ai.onnx"
      % onnx.__version__)
print(" * opsets 18-21 by scripts/gen_attr_types.py;")
print(" * do not edit. ATTR(domain, op_type, since_version, attribute, AttrType) */")
for dom, op, since, name, typ in rows:
    print('ATTR("%s", "%s", %d, "%s", AT_%s)' % (dom.decode(), op.decode(), since, name.decode(), typ))
