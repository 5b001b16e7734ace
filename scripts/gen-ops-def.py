#!/usr/bin/python3
# Generates compiler/ops.def, kiln's X-macro table of known ONNX operators, from
# the operator schemas of the installed onnx Python package, so the compiler's op
# registry (names, domains, schema versions, input/output arity) never drifts from
# the ONNX release it targets.  Output goes to stdout and is fully sorted, so
# rerunning against the same onnx version gives a byte-identical file:
#
#   /usr/bin/python3 scripts/gen-ops-def.py > compiler/ops.def
#
# Domains covered: ai.onnx (""), ai.onnx.ml and ai.onnx.preview.training (the
# backend test suite uses Adam/Adagrad/Momentum/Gradient from the latter).
# Opsets newer than the installed onnx package come from the LATER table below.
import onnx
import onnx.defs

DOMAINS = {  # ONNX domain name -> (DOMAIN token, ident prefix)
    "": ("ONNX", ""),
    "ai.onnx.ml": ("ML", "ML_"),
    "ai.onnx.preview.training": ("TRAINING", "TR_"),
}
DOMAIN_ORDER = ["", "ai.onnx.ml", "ai.onnx.preview.training"]
UNBOUNDED = 2**31 - 1  # ONNX's "variadic, no limit"; kiln caps node arity at 65535


def arity(n):
    return 65535 if n == UNBOUNDED else n


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


class Schema:  # the fields of onnx.defs.OpSchema used here
    def __init__(self, domain, name, since, min_in, max_in, min_out, max_out, deprecated=False):
        self.domain, self.name, self.since_version = domain, name, since
        self.min_input, self.max_input = min_in, max_in
        self.min_output, self.max_output = min_out, max_out
        self.deprecated = deprecated


schemas = [Schema(s.domain, s.name, s.since_version, s.min_input, s.max_input, s.min_output,
                  s.max_output, s.deprecated)
           for s in onnx.defs.get_all_schemas_with_history() if s.domain in DOMAINS]
known = {(s.name, s.since_version) for s in schemas if s.domain == ""}
for name, since, *ar in LATER:
    if (name, since) in known:
        continue  # a newer onnx package has it already
    if ar[0] is None:
        prev = max((s for s in schemas if s.domain == "" and s.name == name),
                   key=lambda s: s.since_version)
        ar = [prev.min_input, prev.max_input, prev.min_output, prev.max_output]
    schemas.append(Schema("", name, since, *ar))
schemas.sort(key=lambda s: (DOMAIN_ORDER.index(s.domain), s.name, s.since_version))

ops = []  # (ident, OpType, DOMAIN token), in output order, one per operator
for s in schemas:
    token, prefix = DOMAINS[s.domain]
    row = (prefix + s.name, s.name, token)
    if not ops or ops[-1] != row:
        ops.append(row)
idents = [o[0] for o in ops]
assert len(set(idents)) == len(idents), "duplicate op idents"
assert all(i.isidentifier() and i.isascii() for i in idents), "op name is not a C identifier"

opset_max = {}
for s in schemas:
    token = DOMAINS[s.domain][0]
    opset_max[token] = max(opset_max.get(token, 0), s.since_version)
opset_max["ONNX"] = max(opset_max["ONNX"], onnx.defs.onnx_opset_version(), LATER_OPSET)

print(f"""\
/* Generated by scripts/gen-ops-def.py from ONNX {onnx.__version__} operator schemas and the
 * script's table of ai.onnx opsets 18-{LATER_OPSET}; do not edit.
 * Regenerate with: /usr/bin/python3 scripts/gen-ops-def.py > compiler/ops.def
 *
 * X-macro table; the includer defines OP, OPV, OPV_DEPRECATED and OPSET_MAX
 * (any of them as empty to skip those rows) before each #include:
 *   OP(ident, "OpType", DOMAIN)  one per operator; DOMAIN is ONNX, ML or TRAINING;
 *                                ident is OpType, prefixed ML_ / TR_ outside ai.onnx
 *   OPV(ident, since_version, min_inputs, max_inputs, min_outputs, max_outputs)
 *                                one per schema version (OPV_DEPRECATED if that
 *                                version is deprecated); 65535 means unbounded
 *   OPSET_MAX(DOMAIN, n)         highest opset version known per domain
 */
""")
print('/* OP(ident, "OpType", DOMAIN) -- one row per operator, sorted by domain then OpType */')
for ident, name, token in ops:
    print(f'OP({ident}, "{name}", {token})')
print()
print("/* OPV(ident, since_version, min_inputs, max_inputs, min_outputs, max_outputs) -- one row")
print(" * per schema version, grouped by op in the same order as OP rows, versions ascending */")
for s in schemas:
    macro = "OPV_DEPRECATED" if s.deprecated else "OPV"
    ident = DOMAINS[s.domain][1] + s.name
    print(f"{macro}({ident}, {s.since_version}, {arity(s.min_input)}, {arity(s.max_input)}, "
          f"{arity(s.min_output)}, {arity(s.max_output)})")
print()
print("/* OPSET_MAX(DOMAIN, n) -- highest opset version per domain */")
for token in ("ONNX", "ML", "TRAINING"):
    print(f"OPSET_MAX({token}, {opset_max[token]})")
print(f"/* max opset known: ONNX {opset_max['ONNX']}, ML {opset_max['ML']}, "
      f"TRAINING {opset_max['TRAINING']} */")
