#!/usr/bin/python3
"""Issue 28: every element type an op claims is compiled, run and compared.

`kiln ops` lists each supported op with the element types of its main type
parameter. For every (op, type) pair this test takes a one-node case of the
op: an ONNX backend case (/usr/share/libonnx-testdata/data/node, float32
input preferred, the first that `kiln check` accepts) or, for the ops the
backend data (ONNX 1.12) lacks, one of elemtypes_cases.GENERATED (the opset
18+ ops, the ai.onnx.ml ops, ...; their own expected outputs from ONNX
Runtime); it rewrites the values bound to the op's main type parameter (from
the op's schema in onnx.defs; without a schema, the values typed as the
node's first input; a Constant's value attribute with them) to the new type
and converts their data: floats to integers by rounding and clamping into
the type's range, to unsigned types from the absolute value, to bool as != 0,
to bfloat16 by rounding to nearest even.
If, Loop and Scan are built per type instead (elemtypes_cases.CONTROL_FLOW:
bodies that carry the type through Add, or Xor for bool; numpy references on
small whole numbers, exact).

The reference:
- data-movement ops (the output elements are input elements: Reshape,
  Transpose, Gather, Pad, Where, ...): the case's expected outputs converted
  the same way, compared exactly;
- the others: ONNX Runtime 1.30 (node, onnxruntime-node, one process for all;
  elemtypes_ort.js) run on the rewritten model; where it refuses the type (no
  kernel; bfloat16, which its node binding cannot feed), on the same values
  in a wider type it runs (WIDER: integers in int64 or int32, float16 and
  bfloat16 in float32, float64 in float32; float32 also for the ops that
  compute in float whatever their input, FLOAT_MATH), the results narrowed
  back as the type computes (integers wrap, floats round to nearest even);
  where it has no kernel in any type, numpy (NUMPY_REF: QLinearConv and
  QLinearMatMul with int8 x and uint8 w). float64 math without attributes
  that ONNX Runtime has no float64 kernel for (Acos, Tan, Erf, Softplus, ...:
  F64_REF) is computed by numpy in float64 instead and compared within
  1e-12, so that a result computed in float32 fails. A pair with none of these is
  compiled and run only and listed as "no reference" (none at present).
- a pair of the case's own type: the case's expected outputs.
`kiln verify` compares: floats rtol 1e-3, atol 1e-5 (float16 outputs leave
through a Cast to float32 for it: one float16 step is at most 2^-10 of the
value); bfloat16 within one step of the type (--tolerance=2^-7,1e-5);
F64_REF's float64 pairs within 1e-12 (--tolerance=1e-12,1e-15);
integers and bool exactly. To keep the run short, the pairs of one
(reference kind, type, opset imports; ai.onnx raised to 17 where the op's
schema is the same) are merged into one model (names prefixed per case, in
subgraphs too; cut at verify's 64 inputs or outputs); a merged model that
fails is halved until the failing pairs stand alone.

First it checks the bfloat16 tolerance itself (tolerance_check: a sum one
step off fails bit for bit and passes with it, two steps off fail).
Prints one summary line (claimed pairs, tested, passed and how their
reference was computed, no reference, no case) and the pairs not tested with
the reason (-v: each tested pair too).
Exits 1 on any mismatch, any claimed pair kiln refuses and any claimed pair
without a case or a reference; 77 ("skipped") without the backend data or
ONNX Runtime.

--cases-only (the unit suite's test `elemtypes-cases`, seconds): only that
every claimed pair has a case `kiln check` accepts (GENERATED's models built,
not run; no ONNX Runtime); exits 1 naming each pair without one.

usage: elemtypes.py KILN OUTDIR [--data TESTDATA] [--cases-only] [-v] [OP...]
(TESTDATA: Debian's libonnx-testdata data folder, default
/usr/share/libonnx-testdata/data; its node/ cases are read)
"""
import collections
import concurrent.futures
import glob
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

import elemtypes_cases

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DATA = "/usr/share/libonnx-testdata/data/node"   # --data DIR: DIR/node

# kiln's type names <-> ONNX element type codes (the ones this test can convert to)
CODES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
         "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16}
NAMES = {v: k for k, v in CODES.items()}
SCHEMA_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64",
                "tensor(float16)": "float16", "tensor(bfloat16)": "bfloat16",
                "tensor(bool)": "bool", **{f"tensor({t})": t for t in
                                           ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                            "uint32", "uint64", "string")}}
NP = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
      "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
      "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64, "bool": np.bool_}

# Ops whose output elements are input elements (or, for Shape and Size, do
# not depend on them): the converted expected outputs are the reference.
MOVE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice",
        "Gather", "GatherElements", "GatherND", "Tile", "Expand", "Pad", "Identity",
        "DepthToSpace", "SpaceToDepth", "Compress", "ReverseSequence", "Trilu", "Where",
        "MaxUnpool",
        "Shape", "Size", "CenterCropPad", "Scatter", "ScatterElements", "ScatterND"}


def convert(arr, name):
    """arr (any numeric or bool array) as element type name: a numpy array,
    or for bfloat16 the uint16 bit patterns (round to nearest even)."""
    x = np.asarray(arr)
    if name == "bool":
        return x != 0
    x = x.astype(np.float64)
    if name == "bfloat16":
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        s16, one = np.uint64(16), np.uint64(1)
        return ((u + np.uint64(0x7FFF) + ((u >> s16) & one)) >> s16).astype(np.uint16)
    if name in ("float32", "float64", "float16"):
        return x.astype(NP[name])
    info = np.iinfo(NP[name])
    x = np.nan_to_num(np.abs(x) if info.min == 0 else x)
    hi = np.float64(info.max)
    if int(hi) > info.max:   # 2^63 - 1 and 2^64 - 1 round up as doubles
        hi = np.nextafter(hi, 0)
    return np.clip(np.round(x), float(info.min), hi).astype(NP[name])


def tensor(arr, name, tname):
    """A TensorProto of arr, already converted to tname."""
    if tname == "bfloat16":
        return onnx.helper.make_tensor(name, TensorProto.BFLOAT16, arr.shape,
                                       arr.tobytes(), raw=True)
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def to_float(t):
    """A TensorProto's values as numpy (bfloat16 widened to float32)."""
    if t.data_type == TensorProto.BFLOAT16:
        bits = (np.frombuffer(t.raw_data, np.uint16) if t.raw_data
                else np.array(t.int32_data, np.uint32).astype(np.uint16))
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).reshape(tuple(t.dims))
    return numpy_helper.to_array(t)


def claims_of(kiln):
    out = subprocess.run([kiln, "ops"], capture_output=True, text=True, check=True).stdout
    claims = {}
    for line in out.splitlines():
        words = line.split()
        if words:
            claims[words[0]] = [w for w in words[1:] if w in CODES or w.startswith(("float8", "int4",
                                                                                   "uint4", "string"))]
    return claims


def graph_types(g):
    types = {}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    return types


def main_names(model, claimed):
    """The node's input and output names bound to its main type parameter,
    and their element type in the case."""
    g = model.graph
    node = g.node[0]
    types = graph_types(g)
    domain = node.domain or ""
    version = next((o.version for o in model.opset_import if o.domain == domain), None)
    try:
        schema = onnx.defs.get_schema(node.op_type, version, domain)
    except Exception:  # newer than Debian's onnx: the values typed as input 0
        schema = None
    names = set()
    if schema is not None and schema.type_constraints:
        best = max(schema.type_constraints,
                   key=lambda tc: len({SCHEMA_TYPES.get(s) for s in tc.allowed_type_strs}
                                      & set(claimed)))
        for formals, actual in ((schema.inputs, node.input), (schema.outputs, node.output)):
            for i, n in enumerate(actual):
                f = formals[min(i, len(formals) - 1)] if formals else None
                if n and f is not None and f.typeStr == best.type_param_str:
                    names.add(n)
    if not names and node.input and node.input[0] in types:
        t0 = types[node.input[0]]
        names = {n for n in list(node.input) + list(node.output) if n and types.get(n) == t0}
    src = {types.get(n) for n in names}
    if len(src) != 1 or None in src or src.pop() not in NAMES:
        return None, None
    return names, types[next(iter(names))]


def load_cases():
    """One-node backend cases by op: [(dir, model)], sorted by name."""
    cases = collections.defaultdict(list)
    for d in sorted(glob.glob(os.path.join(NODE_DATA, "*"))):
        if "_expanded" in d or not os.path.isdir(os.path.join(d, "test_data_set_0")):
            continue
        m = onnx.load(os.path.join(d, "model.onnx"))
        if len(m.graph.node) == 1:
            cases[m.graph.node[0].op_type].append((d, m))
    return cases


def generated_models(outdir, only):
    """--cases-only: elemtypes_cases.GENERATED's models alone under
    outdir/gen (no data, no ONNX Runtime), as generated_cases gives them."""
    cases = {}
    for op, make in sorted(elemtypes_cases.GENERATED.items()):
        if only and op not in only:
            continue
        m = make()[0]
        d = os.path.join(outdir, "gen", op)
        os.makedirs(d)
        onnx.save(m, os.path.join(d, "model.onnx"))
        cases[op] = [(d, m)]
    return cases, {}


def generated_cases(outdir, only):
    """elemtypes_cases.GENERATED written as backend cases under outdir/gen,
    their expected outputs from ONNX Runtime (or the case's own numpy ones):
    {op: [(dir, model)]}, and {op: why} for those ONNX Runtime refused."""
    built = {op: make() for op, make in sorted(elemtypes_cases.GENERATED.items())
             if not only or op in only}
    ins_of = {op: [(n, numpy_helper.from_array(a, n)) for n, a in ins.items()]
              for op, (m, ins, _) in built.items()}
    need = [op for op, (_, _, outs) in built.items() if outs is None]
    ran = dict(zip(need, ort_run([(built[op][0], ins_of[op]) for op in need],
                                 os.path.join(outdir, "gen-ort"))))
    cases, refused = {}, {}
    for op, (m, ins, outs) in built.items():
        r = ran.get(op) or [numpy_helper.from_array(a, v.name)
                            for a, v in zip(outs, m.graph.output)]
        if isinstance(r, str):
            refused[op] = r
            continue
        d = os.path.join(outdir, "gen", op)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(m, os.path.join(d, "model.onnx"))
        for kind, ts in (("input", [t for _, t in ins_of[op]]), ("output", r)):
            for i, t in enumerate(ts):
                with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
        cases[op] = [(d, m)]
    return cases, refused


def control_flow_pair(op, tname):
    """elemtypes_cases.CONTROL_FLOW's model for op carrying tname, with its
    numpy reference, as a Pair."""
    m, ins, refs = elemtypes_cases.CONTROL_FLOW[op](tname, CODES[tname])
    inputs = []
    for v in m.graph.input:
        t = NAMES[v.type.tensor_type.elem_type]
        inputs.append((v.name, tensor(convert(ins[v.name], t), v.name, t)))
    outputs = [tensor(convert(r, tname), v.name, tname) for r, v in zip(refs, m.graph.output)]
    return Pair.given(op, tname, f"{op}/{tname} (elemtypes_cases)", m, inputs, outputs)


def choose(kiln, claims, cases, only, gen_refused):
    """Each claimed pair's case: ([(op, tname, picked)], [(label, why)] of
    the pairs without one); picked is (dir, model, names, the case's type),
    or None for If, Loop and Scan (CONTROL_FLOW builds them per type)."""
    def first_accepted(cands):
        for d, m, names, src in cands:
            if kiln_accepts(kiln, d):
                return (d, m, names, NAMES[src])
        return None

    ops = [op for op in sorted(claims) if not only or op in only]
    all_cands = {}
    for op in ops:
        cands = [(d, m) + main_names(m, claims[op]) for d, m in cases.get(op, [])]
        cands = [c for c in cands if c[2] is not None]
        # float32 input first; ONNX 1.12's bfloat16 outputs (Cast cases) are
        # truncated, not rounded: those cases last
        cands.sort(key=lambda c: (c[3] != TensorProto.FLOAT, any(
            v.type.tensor_type.elem_type == TensorProto.BFLOAT16 for v in c[1].graph.output)))
        all_cands[op] = cands
    # one `kiln check` after another per op, the ops on every core
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        firsts = dict(zip(ops, pool.map(first_accepted, [all_cands[op] for op in ops])))
    chosen, untested = [], []
    for op in ops:
        if op in elemtypes_cases.CONTROL_FLOW:
            for tname in claims[op]:
                if tname in CODES:
                    chosen.append((op, tname, None))
                else:
                    untested.append((f"{op}/{tname}", "type not converted by this test"))
            continue
        cands, picked = all_cands[op], firsts[op]
        for tname in claims[op]:
            if picked is None:
                untested.append((f"{op}/{tname}", gen_refused[op] if op in gen_refused else
                                 "no one-node backend case kiln compiles"
                                 if cands else "no one-node backend case"))
            elif tname not in CODES:
                untested.append((f"{op}/{tname}", "type not converted by this test"))
            else:
                chosen.append((op, tname, picked))
    return chosen, untested


def kiln_accepts(kiln, d):
    return subprocess.run([kiln, "check", os.path.join(d, "model.onnx")],
                          capture_output=True).returncode == 0


def data_of(d, kind):
    s = os.path.join(d, "test_data_set_0")
    files = sorted(glob.glob(os.path.join(s, f"{kind}_*.pb")),
                   key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))
    out = []
    for p in files:
        t = TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        out.append(t)
    return out


def retype(model, names, tname, values=None):
    """A copy of model with the values in names of element type tname, the
    data of their initializers (and of a Constant's value, keyed
    "value:OUTPUT") converted, from values[key] where it holds the key."""
    values = values or {}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    code = CODES[tname]
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if v.name in names:
            v.type.tensor_type.elem_type = code
    for i, t in enumerate(m.graph.initializer):
        if t.name in names:
            data = values[t.name] if t.name in values else to_float(t)
            m.graph.initializer[i].CopyFrom(tensor(convert(data, tname), t.name, tname))
    for n in m.graph.node:   # a Constant's value: of its output's type
        for a in n.attribute:
            if (a.name == "value" and a.type == onnx.AttributeProto.TENSOR and n.output and
                    all(o in names for o in n.output)):
                key = "value:" + n.output[0]
                data = values[key] if key in values else to_float(a.t)
                a.t.CopyFrom(tensor(convert(data, tname), "", tname))
    return m


class Pair:
    widened = None   # the type ONNX Runtime computed the reference in, if not tname

    def __init__(self, op, tname, case_dir, model, names, kind):
        self.op, self.tname, self.case_dir, self.kind = op, tname, case_dir, kind
        self.label = f"{op}/{tname} ({os.path.basename(case_dir)})"
        self.src, self.names = model, names
        m = self.model = retype(model, names, tname)
        ins = data_of(case_dir, "input")
        outs = data_of(case_dir, "output")
        inputs = [v for v in m.graph.input if v.name not in {t.name for t in m.graph.initializer}]
        self.inputs = []   # (name, TensorProto)
        for v, t in zip(inputs, ins):
            a = to_float(t)
            self.inputs.append((v.name, tensor(convert(a, tname), v.name, tname)
                                if v.name in names else t))
        # The case's expected outputs converted as the inputs were: the
        # reference of a data-movement op (or of the case's own type), else a
        # placeholder of the right types and shapes for verify to compile with.
        self.converted = [tensor(convert(to_float(t), tname), v.name, tname)
                          if v.name in names else t for v, t in zip(m.graph.output, outs)]
        self.outputs = self.converted if kind == "move" else None
        self.no_ref = None
        if kind == "ort" and tname == "float16":
            self.widen_outputs()

    def widen_outputs(self):
        """float16 outputs leave through a Cast to float32 (in kiln's model and
        ONNX Runtime's alike), so that verify compares them within rtol 1e-3
        (one float16 step is at most 2^-10 of the value) instead of bit for bit:
        ORT's float16 math is not always correctly rounded (Acos)."""
        g = self.model.graph
        for k, v in enumerate(g.output):
            if v.type.tensor_type.elem_type != TensorProto.FLOAT16:
                continue
            inner = v.name + "__f16"
            for n in g.node:
                n.output[:] = [inner if o == v.name else o for o in n.output]
            g.node.append(onnx.helper.make_node("Cast", [inner], [v.name], to=TensorProto.FLOAT))
            v.type.tensor_type.elem_type = TensorProto.FLOAT
            t = self.converted[k]
            self.converted[k] = tensor(to_float(t).astype(np.float32), t.name, "float32")

    def flags(self):
        """kiln verify's tolerance flags for this pair (TOLERANCE)."""
        return TOLERANCE.get(self.tname + ("-numpy" if self.widened == "numpy" else ""), ())

    @classmethod
    def given(cls, op, tname, label, model, inputs, outputs):
        """A pair of a model already of tname, with its reference outputs."""
        p = cls.__new__(cls)
        p.op, p.tname, p.kind, p.label, p.model = op, tname, "move", label, model
        p.inputs, p.outputs, p.converted, p.no_ref = inputs, outputs, outputs, None
        return p

    def wider(self, wide):
        """(model, inputs, wide): this pair's model and input values, its
        values of tname in the type wide instead."""
        vals = {t.name: to_float(t) for t in self.model.graph.initializer if t.name in self.names}
        vals.update({"value:" + n.output[0]: to_float(a.t) for n in self.model.graph.node
                     for a in n.attribute if a.name == "value" and n.output and
                     a.type == onnx.AttributeProto.TENSOR and n.output[0] in self.names})
        m = retype(self.src, self.names, wide, vals)
        ins = [(n, tensor(convert(to_float(t), wide), n, wide) if n in self.names else t)
               for n, t in self.inputs]
        return m, ins, wide

    def narrowed(self, k, arr):
        """Output k's reference from arr, that output computed in self.widened."""
        v = self.model.graph.output[k]
        if v.name in self.names:
            arr = narrow(arr, self.tname)
            if self.tname == "bfloat16":
                return tensor(arr, v.name, "bfloat16")
        out = NAMES[v.type.tensor_type.elem_type]   # float32 for a widened float16 output
        return tensor(convert(arr, out) if out == "bfloat16" else arr.astype(NP[out]), v.name, out)

    def write(self, d):
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(self.model, os.path.join(d, "model.onnx"))
        for i, (_, t) in enumerate(self.inputs):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())
        for i, t in enumerate(self.outputs or []):
            with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())
        self.dir = d


def ort_run(jobs, workdir):
    """ONNX Runtime on [(model, [(name, TensorProto)])], all in one node
    process: for each job its outputs [TensorProto] (named as the model's
    outputs), or the refusal's message (a str)."""
    if not jobs:
        return []
    os.makedirs(workdir, exist_ok=True)
    specs = []
    for k, (model, ins) in enumerate(jobs):
        d = os.path.join(workdir, str(k))
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        inputs = []
        for i, (name, t) in enumerate(ins):
            a = numpy_helper.to_array(t)
            f = os.path.join(d, f"input_{i}.bin")
            (a.view(np.uint16) if a.dtype == np.float16 else a).tofile(f)
            inputs.append({"name": name, "type": NAMES[t.data_type], "dims": list(a.shape),
                           "file": f})
        specs.append({"model": os.path.join(d, "model.onnx"), "outdir": d, "inputs": inputs})
    listing = os.path.join(workdir, "list.json")
    with open(listing, "w") as f:
        json.dump(specs, f)
    subprocess.run(["node", os.path.join(HERE, "elemtypes_ort.js"), listing], check=True)
    res = []
    for (model, _), spec in zip(jobs, specs):
        d = spec["outdir"]
        err = os.path.join(d, "ort_error.txt")
        if os.path.exists(err):
            res.append("ONNX Runtime: " + open(err).read().strip()[:160])
            continue
        meta = json.load(open(os.path.join(d, "outputs.json")))
        by_name = {o["name"]: (i, o) for i, o in enumerate(meta)}
        outs = []
        for v in model.graph.output:
            i, o = by_name[v.name]
            raw = open(os.path.join(d, f"output_{i}.bin"), "rb").read()
            outs.append(TensorProto(name=v.name, data_type=CODES[o["type"]], dims=o["dims"],
                                    raw_data=raw))
        res.append(outs)
    return res


# The types ONNX Runtime is asked to compute a pair in when it refuses the
# pair's own (or, bfloat16, cannot be fed it): the same values, exactly
# representable there (whole numbers of integer types; 16-bit floats widen
# exactly; float64 narrows to float32, within the comparison's 1e-3).
WIDER = {"float64": ("float32",), "float16": ("float32",), "bfloat16": ("float32",),
         **{t: ("int64", "int32") for t in ("int8", "int16", "int32", "uint8", "uint16",
                                            "uint32", "uint64")},
         "int64": ("int32",), "bool": ("int32", "int64")}
# Ops that compute in float whatever their integer input: the ai.onnx.ml ops
# (the spec casts X to float) and QuantizeLinear (x / y_scale): float32 too.
FLOAT_MATH = {"QuantizeLinear", "ai.onnx.ml.Binarizer", "ai.onnx.ml.LinearRegressor",
              "ai.onnx.ml.TreeEnsembleRegressor", "ai.onnx.ml.TreeEnsembleClassifier",
              "ai.onnx.ml.LinearClassifier", "ai.onnx.ml.Normalizer", "ai.onnx.ml.Scaler"}


def wider_types(p):
    w = WIDER.get(p.tname, ())
    return w + ("float32",) if p.op in FLOAT_MATH and "float32" not in w else w


def qlinear_ref(node, x):
    """Numpy reference of QLinearMatMul, and of QLinearConv with 1x1 kernels
    (the backend case's): the products of zero-point-free values summed in
    int64, times x_scale w_scale / y_scale in float32, rounded half to even,
    plus y's zero point, saturated to y's type."""
    a, a_s, a_z, b, b_s, b_z, y_s, y_z = (x[i] for i in range(8))
    a, b = a.astype(np.int64) - a_z.astype(np.int64), b.astype(np.int64) - b_z.astype(np.int64)
    if node.op_type == "QLinearMatMul":
        acc = a @ b
        scale = np.float32(a_s.reshape(-1)[0]) * np.float32(b_s.reshape(-1)[0])
    else:
        attrs = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        assert b.shape[2:] == (1, 1) and attrs.get("group", 1) == 1 and not any(
            attrs.get("pads", [])) and set(attrs.get("strides", [1])) == {1}, "1x1 kernels only"
        b_z = b_z.reshape(-1)
        acc = np.einsum("nchw,mc->nmhw", a, b[:, :, 0, 0])
        if len(x) > 8:
            acc = acc + x[8].reshape(1, -1, 1, 1)
        scale = np.float32(a_s.reshape(-1)[0]) * b_s.astype(np.float32).reshape(1, -1, 1, 1)
    y = np.round(acc.astype(np.float32) * (scale / np.float32(y_s.reshape(-1)[0])))
    info = np.iinfo(y_z.dtype)
    return [np.clip(y + y_z.astype(np.int64), info.min, info.max).astype(y_z.dtype)]


# Where ONNX Runtime has no kernel in any type: a numpy reference.
NUMPY_REF = {"QLinearMatMul": qlinear_ref, "QLinearConv": qlinear_ref}
# float64 math without attributes that ONNX Runtime has no float64 kernel
# for: numpy in float64 (rather than ONNX Runtime in float32), compared
# within 1e-12 so that a result computed in float32 fails.
F64_REF = {"Acos": np.arccos, "Acosh": np.arccosh, "Asin": np.arcsin, "Asinh": np.arcsinh,
           "Atan": np.arctan, "Atanh": np.arctanh, "Cosh": np.cosh, "Sinh": np.sinh,
           "Tan": np.tan, "Softsign": lambda x: x / (1 + np.abs(x)),
           "Softplus": lambda x: np.log(np.exp(x) + 1), "Erf": np.vectorize(math.erf)}


def narrow(arr, tname):
    """A result computed in a wider type, as element type tname: integers
    wrap (as tname's own arithmetic does), floats round to nearest even."""
    if tname == "bool":
        return arr != 0
    if tname == "bfloat16":
        return convert(arr, "bfloat16")
    if tname == "float64":
        return arr.astype(np.float64)
    if tname in ("float16", "float32"):
        return arr.astype(np.float32).astype(NP[tname])
    return arr.astype(np.int64).astype(NP[tname])


def ort_references(pairs, outdir):
    """Fills pair.outputs from ONNX Runtime: in the pair's own type, else
    (ONNX Runtime has no kernel for it, or its node binding cannot feed
    bfloat16) on the same values in a wider type (WIDER), the results
    narrowed back as the type computes (pair.widened names it); else
    pair.no_ref holds the refusals."""
    todo = [p for p in pairs if p.tname != "bfloat16"]
    res = ort_run([(p.model, p.inputs) for p in todo], os.path.join(outdir, "ort"))
    refused = [p for p in pairs if p.tname == "bfloat16"]
    for p, r in zip(todo, res):
        if isinstance(r, str):
            p.no_ref = r
            refused.append(p)
        else:
            p.outputs = r
    numpy_f64 = [p for p in refused if p.op in F64_REF and p.tname == "float64" and
                 not p.model.graph.node[0].attribute]
    refused = [p for p in refused if p not in numpy_f64]
    for round_ in range(3):
        jobs = [(p, p.wider(wider_types(p)[round_])) for p in refused
                if len(wider_types(p)) > round_]
        res = ort_run([w[:2] for _, w in jobs], os.path.join(outdir, f"ort-wide{round_}"))
        for (p, (_, _, wide)), r in zip(jobs, res):
            if isinstance(r, str):
                p.no_ref = (p.no_ref or "ONNX Runtime's node binding takes no bfloat16 "
                            "tensors") + f"; in {wide}: " + r
                continue
            p.outputs = [p.narrowed(k, to_float(t)) for k, t in enumerate(r)]
            p.widened, p.no_ref = wide, None
        refused = [p for p in refused if p.no_ref is not None]
    for p in refused + numpy_f64:
        if p in numpy_f64:
            x = numpy_helper.to_array(p.inputs[0][1])
            p.outputs = [tensor(F64_REF[p.op](x).astype(np.float64), p.model.graph.output[0].name,
                                "float64")]
            p.widened, p.no_ref = "numpy", None
        elif p.op in NUMPY_REF:
            vals = [numpy_helper.to_array(t) for _, t in p.inputs]
            p.outputs = [tensor(a, v.name, NAMES[v.type.tensor_type.elem_type]) for a, v in
                         zip(NUMPY_REF[p.op](p.model.graph.node[0], vals), p.model.graph.output)]
            p.widened, p.no_ref = "numpy", None
        else:
            p.outputs = p.converted


def opsets_key(model):
    """The opset imports the pair's model can be compiled at: its own, with
    ai.onnx raised to 17 (the newest Debian's onnx knows) where the op's
    schema is the same there, so that most pairs of a type share one model."""
    node = model.graph.node[0]
    out = []
    for o in model.opset_import:
        v = o.version
        if o.domain in ("", "ai.onnx") and (node.domain or "") in ("", "ai.onnx") and v < 17:
            try:
                if (onnx.defs.get_schema(node.op_type, v).since_version ==
                        onnx.defs.get_schema(node.op_type, 17).since_version):
                    v = 17
            except Exception:
                pass
        out.append((o.domain, v))
    return tuple(sorted(out))


def prefix_names(g, pre):
    """Prefixes every value and node name of graph g and its subgraphs (an
    If's branches, a Loop's body) with pre."""
    rn = lambda n: pre + n if n else n  # noqa: E731
    for n in g.node:
        n.name = pre + n.name
        n.input[:] = [rn(x) for x in n.input]
        n.output[:] = [rn(x) for x in n.output]
        for a in n.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                        a.graphs if a.type == onnx.AttributeProto.GRAPHS else []):
                prefix_names(sub, pre)
    for v in list(g.input) + list(g.output) + list(g.value_info):
        v.name = rn(v.name)
    for t in g.initializer:
        t.name = rn(t.name)


def merge(pairs, d, opsets):
    """One model of all the pairs' nodes (names prefixed per pair), their
    inputs, outputs and data, in folder d."""
    m = onnx.ModelProto()
    m.CopyFrom(pairs[0].model)
    g = m.graph
    del g.node[:], g.input[:], g.output[:], g.initializer[:], g.value_info[:]
    g.name = "types"
    del m.opset_import[:]
    for domain, version in opsets:
        m.opset_import.add(domain=domain, version=version)
    ins, outs = [], []
    for k, p in enumerate(pairs):
        src = onnx.GraphProto()
        src.CopyFrom(p.model.graph)
        prefix_names(src, f"c{k}_")
        g.node.extend(src.node)
        g.input.extend(src.input)
        g.output.extend(src.output)
        g.initializer.extend(src.initializer)
        ins += [t for _, t in p.inputs]
        outs += p.outputs or []
        m.ir_version = max(m.ir_version, p.model.ir_version)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, ts in (("input", ins), ("output", outs)):
        for i, t in enumerate(ts):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())


# kiln verify's comparison per type of the pairs: its default (floats rtol
# 1e-3, atol 1e-5; float16 bit for bit, or within 1e-3 where the output leaves
# through a Cast to float32), bfloat16 within one step of the type (2^-7 of the
# value): kiln and the reference both compute in float32 and round once, but
# their float32 results may differ in the last bits.
TOLERANCE = {"bfloat16": ("--tolerance=0.0078125,1e-5",),
             # float64 against numpy's float64 (F64_REF): a float32 result fails
             "float64-numpy": ("--tolerance=1e-12,1e-15",)}


def tolerance_check(kiln, outdir):
    """kiln verify --tolerance on a bfloat16 Add whose expected output is
    one, then two steps of the type above the right sum: without it the
    comparison is bit for bit (fails), with TOLERANCE one step passes and two
    fail. Returns the failures [(label, why)]."""
    x = convert(np.linspace(-3, 5, 12, dtype=np.float32).reshape(3, 4), "bfloat16")
    y = convert(np.linspace(0.3, 2, 12, dtype=np.float32).reshape(3, 4), "bfloat16")
    w = lambda b: (b.astype(np.uint32) << np.uint32(16)).view(np.float32)  # noqa: E731
    vi = lambda n: onnx.helper.make_tensor_value_info(n, TensorProto.BFLOAT16, [3, 4])  # noqa
    m = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Add", ["x", "y"], ["z"])], "tol", [vi("x"), vi("y")], [vi("z")]),
        opset_imports=[onnx.helper.make_opsetid("", 17)])
    m.ir_version = 8
    bad = []
    for steps, flags, want in ((1, (), False), (1, TOLERANCE["bfloat16"], True),
                               (2, TOLERANCE["bfloat16"], False)):
        z = convert(w(x) + w(y), "bfloat16") + np.uint16(steps)
        p = Pair.given("Add", "bfloat16", f"kiln verify {' '.join(flags)}, {steps} step(s) off",
                       m, [("x", tensor(x, "x", "bfloat16")), ("y", tensor(y, "y", "bfloat16"))],
                       [tensor(z, "z", "bfloat16")])
        p.write(os.path.join(outdir, "tolerance", f"{steps}{'t' if flags else ''}"))
        ok, line = verify(kiln, [p.dir], flags)[p.dir]
        if ok != want:
            bad.append((p.label, f"{'passes' if ok else 'fails'}: {line}"))
    return bad


def verify(kiln, dirs, flags=()):
    """kiln verify over dirs: {dir: (ok, line)}."""
    r = subprocess.run([kiln, "verify", *flags, *dirs], capture_output=True, text=True)
    res = {}
    for line in r.stdout.splitlines():
        for d in dirs:
            if line.split(" ", 1)[-1].startswith(d + " ") or line.split(" ", 1)[-1].startswith(
                    d + ":"):
                res[d] = (line.startswith("PASS"), line)
    for d in dirs:
        res.setdefault(d, (False, f"no verify line (exit {r.returncode}): {r.stderr.strip()[:300]}"))
    return res


def bisect(kiln, todo, opsets, runs_only):
    """Verifies the (folder, pairs) in todo; a failing merged model is halved
    (each half merged again, all halves in one verify run) until the failing
    pairs stand alone. runs_only (no reference): a value mismatch passes, only
    a refusal, a build or run error or a wrong output type fails.
    Returns (the pairs that passed, [(label, verify's line)])."""
    good, bad = [], []
    while todo:
        res = {}
        for flags in sorted({ps[0].flags() for _, ps in todo}):
            res.update(verify(kiln, [d for d, ps in todo if ps[0].flags() == flags], flags))
        nxt = []
        for d, ps in todo:
            ok, line = res[d]
            if runs_only and line.startswith("FAIL ") and " element " in line:
                ok = True
            if ok:
                good += ps
            elif len(ps) == 1:
                bad.append((ps[0].label, line))
            else:
                for h, half in enumerate((ps[:len(ps) // 2], ps[len(ps) // 2:])):
                    hd = f"{d}_{h}" if len(half) > 1 else half[0].dir
                    if len(half) > 1:
                        merge(half, hd, opsets[d])
                    opsets[hd] = opsets[d]
                    nxt.append((hd, half))
        todo = nxt
    return good, bad


def main(argv):
    global NODE_DATA
    verbose = "-v" in argv
    cases_only = "--cases-only" in argv
    args = [a for a in argv if a not in ("-v", "--cases-only")]
    if "--data" in args:
        k = args.index("--data")
        NODE_DATA = os.path.join(args[k + 1], "node")
        del args[k:k + 2]
    kiln, outdir, only = os.path.abspath(args[0]), os.path.abspath(args[1]), set(args[2:])
    if not os.path.isdir(NODE_DATA):
        print(f"SKIP: no ONNX backend node data at {NODE_DATA}")
        return 77
    if not cases_only and subprocess.run(["node", "-e", 'require("onnxruntime-node")'],
                                         capture_output=True).returncode != 0:
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run this test")
        return 77
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    claims = claims_of(kiln)
    cases = load_cases()
    gen, gen_refused = (generated_models if cases_only else generated_cases)(outdir, only)
    for op, cs in gen.items():
        cases.setdefault(op, cs)
    total = sum(len(ts) for op, ts in claims.items() if not only or op in only)
    untested = []      # (label, reason): a claim without a case or a reference
    failures = [] if cases_only else tolerance_check(kiln, outdir)   # (label, reason)
    chosen, nocase = choose(kiln, claims, cases, only, gen_refused)
    untested += nocase
    if cases_only:
        for label, why in untested:
            print(f"no case: {label}: {why}")
        print(f"types: {total} claimed pairs, {len(chosen)} with a case kiln compiles, "
              f"{len(untested)} without")
        return 1 if untested else 0
    pairs = [control_flow_pair(op, tname) if picked is None else
             Pair(op, tname, picked[0], picked[1], picked[2],
                  "move" if op in MOVE or tname == picked[3] else "ort")
             for op, tname, picked in chosen]
    ort_references([p for p in pairs if p.kind == "ort"], outdir)
    keyed = collections.defaultdict(list)
    for p in pairs:
        keyed[("noref" if p.no_ref else "ref", p.tname, opsets_key(p.model), p.flags())].append(p)
    # One merged model per key, cut where it would pass kiln verify's 64
    # inputs or 64 outputs.
    groups = []
    for key, ps in sorted(keyed.items(), key=lambda kv: repr(kv[0])):
        chunk, nin, nout = [], 0, 0
        for p in ps:
            i, o = len(p.inputs), len(p.model.graph.output)
            if chunk and (nin + i > 64 or nout + o > 64):
                groups.append((key, chunk))
                chunk, nin, nout = [], 0, 0
            chunk.append(p)
            nin, nout = nin + i, nout + o
        groups.append((key, chunk))
    # Every pair in its own folder (to name a failing pair), every group merged.
    merged, merged_opsets = {}, {}
    for k, (key, ps) in enumerate(groups):
        for j, p in enumerate(ps):
            p.write(os.path.join(outdir, "pairs", f"{k}_{j}"))
        d = os.path.join(outdir, "merged", str(k))
        if len(ps) == 1:
            d = ps[0].dir
        else:
            merge(ps, d, key[2])
        merged[d] = (key[0], ps)
        merged_opsets[d] = key[2]
    passed, noref, wide, by_numpy = 0, 0, 0, 0
    for kind in ("ref", "noref"):
        todo = [(d, ps) for d, (k, ps) in merged.items() if k == kind]
        ok_pairs, bad = bisect(kiln, todo, merged_opsets, kind == "noref")
        failures += bad
        if kind == "ref":
            passed = len(ok_pairs)
            wide = sum(1 for p in ok_pairs if p.widened not in (None, "numpy"))
            by_numpy = sum(1 for p in ok_pairs if p.widened == "numpy")
            if verbose:
                print("\n".join(f"PASS {p.label}" for p in ok_pairs))
        else:
            noref = len(ok_pairs)
            untested += [(p.label, "compiles and runs; no reference: " + p.no_ref)
                         for p in ok_pairs]
    for label, why in untested:
        print(f"not compared: {label}: {why}")
    for label, why in failures:
        print(f"FAIL {label}: {why}")
    nocase = len(untested) - noref
    print(f"types: {total} claimed pairs, {len(pairs)} tested ({passed} passed, of which {wide} "
          f"against ONNX Runtime in a wider type and {by_numpy} against numpy; {len(failures)} "
          f"failed), {noref} compiled without a reference, {nocase} without a case")
    return 1 if failures or untested else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
