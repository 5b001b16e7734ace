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
from onnx_extra import EXPERIMENTAL, LATER_ATTRS

known = {(d, op.decode(), v) for d, op, v, _, _ in rows}
for op, since, attrs in LATER_ATTRS + [(x["name"], x["since"], x["attrs"])
                                     for x in EXPERIMENTAL]:
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
