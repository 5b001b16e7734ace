#!/usr/bin/python3
"""Issue 28: every element type an op claims is compiled, run and compared.

`kiln ops` lists each supported op with the element types of its main type
parameter. For every (op, type) pair this test takes a one-node ONNX backend
case of the op (/usr/share/libonnx-testdata/data/node, float32 input
preferred, the first that `kiln check` accepts), rewrites the values bound to
the op's main type parameter (from the op's schema in onnx.defs; without a
schema, the values typed as the node's first input) to the new type and
converts their data: floats to integers by rounding and clamping into the
type's range, to unsigned types from the absolute value, to bool as != 0.

The reference:
- data-movement ops (the output elements are input elements: Reshape,
  Transpose, Gather, Pad, Where, ...): the case's expected outputs converted
  the same way, compared exactly;
- the others: ONNX Runtime 1.30 (node, onnxruntime-node, one process for all;
  elemtypes_ort.js) run on the rewritten model; where ORT refuses the model (no
  kernel for the type; bfloat16, which its node binding cannot feed) the
  pair has "no reference": kiln must still compile and run it (`kiln
  verify` against placeholder outputs, whose values are not compared).
- a pair of the case's own type: the case's expected outputs.
Ops with subgraphs (If, Loop, Scan) are not tested: their bodies' types
are not rewritten.
`kiln verify` compares (floats rtol 1e-3, atol 1e-5; integers and bool
exactly). To keep the run short, the pairs of one (reference kind, type,
opset imports; ai.onnx raised to 17 where the op's schema is the same) are
merged into one model (names prefixed per case); a merged model that fails
is halved until the failing pairs stand alone.

Prints one summary line (claimed pairs, tested, passed, no reference, no
case) and the pairs not tested with the reason (-v: each tested pair too).
Exits 1 on any mismatch or any claimed pair kiln refuses; 77 ("skipped")
without the backend data or ONNX Runtime.

usage: elemtypes.py KILN OUTDIR [--data TESTDATA] [-v] [OP...]
(TESTDATA: Debian's libonnx-testdata data folder, default
/usr/share/libonnx-testdata/data; its node/ cases are read)
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

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


class Pair:
    def __init__(self, op, tname, case_dir, model, names, kind):
        self.op, self.tname, self.case_dir, self.kind = op, tname, case_dir, kind
        self.label = f"{op}/{tname} ({os.path.basename(case_dir)})"
        m = onnx.ModelProto()
        m.CopyFrom(model)
        code = CODES[tname]
        for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
            if v.name in names:
                v.type.tensor_type.elem_type = code
        for i, t in enumerate(m.graph.initializer):
            if t.name in names:
                m.graph.initializer[i].CopyFrom(tensor(convert(to_float(t), tname), t.name, tname))
        self.model = m
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


def ort_references(pairs, outdir):
    """Fills pair.outputs from ONNX Runtime, or pair.no_ref with its refusal."""
    specs = []
    for k, p in enumerate(pairs):
        d = os.path.join(outdir, "ort", str(k))
        os.makedirs(d, exist_ok=True)
        if p.tname == "bfloat16":
            p.no_ref = "ONNX Runtime's node binding takes no bfloat16 tensors"
            p.outputs = p.converted
            continue
        onnx.save(p.model, os.path.join(d, "model.onnx"))
        inputs = []
        for i, (name, t) in enumerate(p.inputs):
            a = numpy_helper.to_array(t)
            f = os.path.join(d, f"input_{i}.bin")
            (a.view(np.uint16) if a.dtype == np.float16 else a.astype(a.dtype)).tofile(f)
            inputs.append({"name": name, "type": NAMES[t.data_type], "dims": list(a.shape),
                           "file": f})
        specs.append((p, d, {"model": os.path.join(d, "model.onnx"), "outdir": d,
                             "inputs": inputs}))
    listing = os.path.join(outdir, "ort", "list.json")
    with open(listing, "w") as f:
        json.dump([s for _, _, s in specs], f)
    subprocess.run(["node", os.path.join(HERE, "elemtypes_ort.js"), listing], check=True)
    for p, d, _ in specs:
        err = os.path.join(d, "ort_error.txt")
        if os.path.exists(err):
            p.no_ref = "ONNX Runtime: " + open(err).read().strip()[:160]
            p.outputs = p.converted
            continue
        meta = json.load(open(os.path.join(d, "outputs.json")))
        by_name = {o["name"]: (i, o) for i, o in enumerate(meta)}
        p.outputs = []
        for v in p.model.graph.output:
            i, o = by_name[v.name]
            raw = open(os.path.join(d, f"output_{i}.bin"), "rb").read()
            t = TensorProto(name=v.name, data_type=CODES[o["type"]], dims=o["dims"], raw_data=raw)
            p.outputs.append(t)


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
        pre = f"c{k}_"
        rn = lambda n: pre + n if n else n  # noqa: E731
        src = p.model.graph
        for n in src.node:
            c = g.node.add()
            c.CopyFrom(n)
            c.name = pre + n.name
            c.input[:] = [rn(x) for x in n.input]
            c.output[:] = [rn(x) for x in n.output]
        for coll, dst in ((src.input, g.input), (src.output, g.output)):
            for v in coll:
                c = dst.add()
                c.CopyFrom(v)
                c.name = rn(v.name)
        for t in src.initializer:
            c = g.initializer.add()
            c.CopyFrom(t)
            c.name = rn(t.name)
        ins += [t for _, t in p.inputs]
        outs += p.outputs or []
        m.ir_version = max(m.ir_version, p.model.ir_version)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, ts in (("input", ins), ("output", outs)):
        for i, t in enumerate(ts):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def verify(kiln, dirs):
    """kiln verify over dirs: {dir: (ok, line)}."""
    r = subprocess.run([kiln, "verify", *dirs], capture_output=True, text=True)
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
        res = verify(kiln, [d for d, _ in todo])
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
    args = [a for a in argv if a != "-v"]
    if "--data" in args:
        k = args.index("--data")
        NODE_DATA = os.path.join(args[k + 1], "node")
        del args[k:k + 2]
    kiln, outdir, only = os.path.abspath(args[0]), os.path.abspath(args[1]), set(args[2:])
    if not os.path.isdir(NODE_DATA):
        print(f"SKIP: no ONNX backend node data at {NODE_DATA}")
        return 77
    if subprocess.run(["node", "-e", 'require("onnxruntime-node")'],
                      capture_output=True).returncode != 0:
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run this test")
        return 77
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    claims = claims_of(kiln)
    cases = load_cases()
    total = sum(len(ts) for op, ts in claims.items() if not only or op in only)
    untested = []      # (label, reason): not failures
    failures = []      # (label, reason)
    pairs = []
    for op in sorted(claims):
        if only and op not in only:
            continue
        picked = None
        cands = [(d, m) + main_names(m, claims[op]) for d, m in cases.get(op, [])]
        cands = [c for c in cands if c[2] is not None]
        # float32 input first; ONNX 1.12's bfloat16 outputs (Cast cases) are
        # truncated, not rounded: those cases last
        cands.sort(key=lambda c: (c[3] != TensorProto.FLOAT, any(
            v.type.tensor_type.elem_type == TensorProto.BFLOAT16 for v in c[1].graph.output)))
        for d, m, names, src in cands:
            if kiln_accepts(kiln, d):
                picked = (d, m, names, NAMES[src])
                break
        subgraph = picked is not None and any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for a in picked[1].graph.node[0].attribute)
        for tname in claims[op]:
            if subgraph:
                untested.append((f"{op}/{tname}", "a subgraph op: its body's types are not "
                                 "rewritten"))
            elif picked is None:
                untested.append((f"{op}/{tname}", "no one-node backend case kiln compiles"
                                 if cands else "no one-node backend case"))
            elif tname not in CODES:
                untested.append((f"{op}/{tname}", "type not converted by this test"))
            else:
                pairs.append(Pair(op, tname, picked[0], picked[1], picked[2],
                                  "move" if op in MOVE or tname == picked[3] else "ort"))
    ort_references([p for p in pairs if p.kind == "ort"], outdir)
    groups = collections.defaultdict(list)
    for p in pairs:
        opsets = opsets_key(p.model)
        groups[("noref" if p.no_ref else "ref", p.tname, opsets)].append(p)
    # Every pair in its own folder (to name a failing pair), every group merged.
    merged, merged_opsets = {}, {}
    for k, (key, ps) in enumerate(sorted(groups.items(), key=lambda kv: repr(kv[0]))):
        for j, p in enumerate(ps):
            p.write(os.path.join(outdir, "pairs", f"{k}_{j}"))
        d = os.path.join(outdir, "merged", str(k))
        if len(ps) == 1:
            d = ps[0].dir
        else:
            merge(ps, d, key[2])
        merged[d] = (key[0], ps)
        merged_opsets[d] = key[2]
    passed, noref = 0, 0
    for kind in ("ref", "noref"):
        todo = [(d, ps) for d, (k, ps) in merged.items() if k == kind]
        ok_pairs, bad = bisect(kiln, todo, merged_opsets, kind == "noref")
        failures += bad
        if kind == "ref":
            passed = len(ok_pairs)
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
    print(f"types: {total} claimed pairs, {len(pairs)} tested ({passed} passed, "
          f"{len(failures)} failed), {noref} compiled without a reference, {nocase} without "
          f"a case")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
