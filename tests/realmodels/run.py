#!/usr/bin/python3
"""Real-model patterns (issue 13), each compiled by kiln and compared with
ONNX Runtime.

Every case builds a small model that reproduces one pattern met in real
exported models (an unsorted graph, shape arithmetic through many ops, a
shape-decided If, opset 18-21 schemas, seq-first layouts, ...), with
Debian's python3-torch (torch.onnx.export) or onnx.helper. ONNX Runtime 1.30
(node, onnxruntime-node; see scripts/install-ort.sh) computes the reference
outputs, which are written as an ONNX backend-test folder (model.onnx,
test_data_set_0/input_I.pb, output_I.pb) that `kiln verify` compiles, runs
and compares (rtol 1e-3, atol 1e-5; integers exactly). Error cases check
kiln's one-line message instead; COMPILES cases check that `kiln compile`
with the given flags succeeds without a warning and keeps the model
batch-independent (any batch size can run).

usage: run.py KILN OUTDIR [--cases FILE.py] [CASE...]
(exits 77, "skipped", without ORT; FILE.py defaults to cases.py here)
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from registry import f8_value

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # registry.py, for this file and the cases files

ORT_TYPES = {np.float32: "float32", np.float64: "float64", np.float16: "float16", np.int8: "int8", np.uint8: "uint8",
             np.int16: "int16", np.uint16: "uint16", np.int32: "int32", np.uint32: "uint32",
             np.int64: "int64", np.uint64: "uint64", np.bool_: "bool"}
NP_TYPES = {v: k for k, v in ORT_TYPES.items()}


# The element types kiln takes as graph inputs and outputs that ONNX Runtime's
# node binding cannot feed or return (float8 17-20, uint4 21, int4 22). A
# case's inputs give their values in a wide type (float32, or int8/uint8 for
# 4-bit): kiln's test data holds them encoded as the model declares (float8
# bit patterns; 4-bit packed two a byte, the first in the low nibble), and ORT
# runs the case's reference model, which takes and returns the wide type.
NARROW = (17, 18, 19, 20, 21, 22)


def encode_narrow(arr, code):
    """Bytes of arr as element type code: float8 patterns (every value must be
    exactly representable) or packed nibbles."""
    flat = np.asarray(arr).reshape(-1)
    if code in (21, 22):
        v = [int(x) & 15 for x in flat]
        if len(v) % 2:
            v.append(0)
        return bytes(v[k] | (v[k + 1] << 4) for k in range(0, len(v), 2))
    nan = 0x80 if code in (18, 20) else 0x7f
    table = {}
    for b in range(256):
        v = f8_value(b, code)
        if v == v:
            table[(v, bool(np.signbit(v)))] = b
    out = bytearray()
    for x in flat.astype(np.float64):
        if x != x:
            out.append(nan)
            continue
        key = (float(x), bool(np.signbit(x)) and not (x == 0 and code in (18, 20)))
        if key not in table:
            raise ValueError(f"{x} is not a value of float8 type {code}")
        out.append(table[key])
    return bytes(out)


def elem_types(value_infos):
    return {v.name: v.type.tensor_type.elem_type for v in value_infos}


def narrow_tensor(name, arr, code):
    return TensorProto(name=name, data_type=code, dims=list(np.shape(arr)),
                       raw_data=encode_narrow(arr, code))


def ort_available():
    r = subprocess.run(["node", "-e", 'require("onnxruntime-node")'], capture_output=True)
    return r.returncode == 0


def write_case(outdir, name, model, inputs, ref_model=None):
    """ref_model, if given, is what ORT runs instead of model: the same
    computation in ops ORT implements (e.g. no 4-bit Reshape)."""
    d = os.path.join(outdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    ref_path = path
    if ref_model is not None:
        ref_path = os.path.join(d, "reference.onnx")
        onnx.save(ref_model, ref_path)
    spec = {"model": ref_path, "outdir": d, "inputs": []}
    for i, (iname, arr) in enumerate(inputs.items()):
        raw = os.path.join(d, f"input_{i}.bin")
        arr = np.ascontiguousarray(arr)
        arr.astype(np.uint8 if arr.dtype == np.bool_ else arr.dtype).tofile(raw)
        spec["inputs"].append({"name": iname, "type": ORT_TYPES[arr.dtype.type],
                               "dims": list(arr.shape), "file": raw})
        code = elem_types(model.graph.input).get(iname)
        t = narrow_tensor(iname, arr, code) if code in NARROW else \
            numpy_helper.from_array(arr, iname)
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    with open(os.path.join(d, "spec.json"), "w") as f:
        json.dump(spec, f)
    r = subprocess.run(["node", os.path.join(HERE, "ort_ref.js"), os.path.join(d, "spec.json")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: ONNX Runtime refused the model: {r.stderr.strip()}")
    with open(os.path.join(d, "outputs.json")) as f:
        outs = json.load(f)
    for i, o in enumerate(outs):
        raw = np.fromfile(os.path.join(d, f"output_{i}.bin"), dtype=NP_TYPES[o["type"]])
        arr = raw.reshape(o["dims"])
        if o["type"] == "bool":
            arr = arr.astype(np.bool_)
        code = elem_types(model.graph.output).get(o["name"])
        t = narrow_tensor(o["name"], arr, code) if code in NARROW else \
            numpy_helper.from_array(arr, o["name"])
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    return d


def main():
    kiln, outdir, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    path = os.path.join(HERE, "cases.py")
    if rest[:1] == ["--cases"]:
        path, rest = rest[1], rest[2:]
    spec = importlib.util.spec_from_file_location("cases", path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    wanted = set(rest)
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return 77
    os.makedirs(outdir, exist_ok=True)
    failures = 0
    dirs = []
    for name, make in cases.RUN:
        if wanted and name not in wanted:
            continue
        dirs.append(write_case(outdir, name, *make()))
    if dirs:
        r = subprocess.run([kiln, "verify"] + getattr(cases, "VERIFY_FLAGS", []) + dirs,
                           capture_output=True, text=True)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        if r.returncode != 0:
            failures += 1
    for name, make, expect in cases.ERRORS:
        if wanted and name not in wanted:
            continue
        model = make()
        path = os.path.join(outdir, name + ".onnx")
        onnx.save(model, path)
        # "kiln check" lists unsupported nodes (exit 1); "kiln info" loads;
        # "kiln compile --batch 1" infers shapes and generates code.
        cmd, want_rc = ("check", 1) if expect.startswith("check:") else \
            ("check", 0) if expect.startswith("hint:") else \
            ("compile", 2) if expect.startswith("compile:") else \
            ("info", 2 if expect.split(":")[0] in ("error", "refused") else 0)
        text = expect.split(":", 1)[1].strip() if cmd in ("check", "compile") or \
            expect.startswith("refused:") else expect
        args = [path, "--batch", "1", "-o", path + "-out"] if cmd == "compile" else [path]
        r = subprocess.run([kiln, cmd] + args, capture_output=True, text=True)
        got = (r.stdout if cmd == "check" else r.stderr).strip()
        ok = r.returncode == want_rc and text in got
        if expect.startswith("refused:"):  # one line, naming the file
            ok = ok and got.count("\n") == 0 and f"error: {path}: " in got
        print(f"{'PASS' if ok else 'FAIL'} {name}: {got or '(no message)'}")
        if not ok:
            print(f"  wanted exit {want_rc} and \"{text}\"; got exit {r.returncode}")
            failures += 1
    for name, make, flags in getattr(cases, "COMPILES", []):
        if wanted and name not in wanted:
            continue
        path = os.path.join(outdir, name + ".onnx")
        onnx.save(make(), path)
        out = os.path.join(outdir, name + "-out")
        r = subprocess.run([kiln, "compile", path, "-o", out] + flags, capture_output=True,
                           text=True)
        ok = r.returncode == 0 and "(any batch size)" in r.stdout and not r.stderr.strip()
        print(f"{'PASS' if ok else 'FAIL'} {name}: kiln compile {' '.join(flags)}: "
              f"{'batch-independent' if ok else (r.stderr.strip() or r.stdout.strip())}")
        failures += not ok
    if hasattr(cases, "extra") and not wanted:
        failures += cases.extra(kiln, outdir)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
