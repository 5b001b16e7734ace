#!/usr/bin/python3
"""Shape inference against the ONNX backend test data: for every
libonnx-testdata case whose nodes `kiln check` accepts, bind each graph input
to the shape of test_data_set_0/input_K.pb (--shape), run
`kiln info --json --plan`, and compare every output's dtype and shape with
output_K.pb. The outputs are real reference results, so a wrong shape fails.
The buffer plan must also meet its target: arena <= 1.10 x lower bound.

A case may instead end in kiln's documented ahead-of-time limit: a value that
decides a shape (a Reshape target, Slice bounds, ...) fed as a graph input
("must be known at compile time"), or in a clear "not supported" error for an
attribute or mode outside the slice (BatchNormalization training mode).
Those are counted and listed with -v; anything else is a failure.

usage: shapes_all.py KILN TESTDATA_DIR [-v] [--every N]

--every N runs every Nth case of the sorted list only: the sanitizer build
passes 3 (tests/meson.build), as its conformance suite compiles and runs
every case under ASan anyway; the default build runs them all.
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys

import onnx
from onnx import numpy_helper

from sample import every

DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
          7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
          13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16"}
AOT_LIMIT = "must be known at compile time"


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def run_case(kiln, case):
    """Returns ('pass'|'aot'|'skip'|'fail', detail)."""
    model = os.path.join(case, "model.onnx")
    if subprocess.run([kiln, "check", model], capture_output=True).returncode != 0:
        return "skip", "unsupported ops"
    ds = os.path.join(case, "test_data_set_0")
    if not os.path.isdir(ds):
        return "skip", "no data set"
    g = onnx.load(model, load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    inputs = [vi.name for vi in g.input if vi.name not in inits]
    args = [kiln, "info", "--json", "--plan", "--batch=1"]
    for k, name in enumerate(inputs):
        t = read_pb(os.path.join(ds, "input_%d.pb" % k))
        args.append("--shape=%s=%s" % (name, ",".join(str(d) for d in t.dims)))
    args.append(model)
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        if AOT_LIMIT in p.stderr:
            return "aot", p.stderr.strip()
        if "is not supported" in p.stderr or "are not supported" in p.stderr:
            return "unsupported", p.stderr.strip()
        return "fail", "exit %d: %s" % (p.returncode, p.stderr.strip())
    sig = json.loads(p.stdout)["signatures"][0]
    # The buffer plan's target: within 10% of the most bytes live at once.
    if sig["arena_bytes"] > 1.10 * sig["lower_bound_bytes"]:
        return "fail", "arena %d bytes > 1.10 x lower bound %d" % (sig["arena_bytes"],
                                                                 sig["lower_bound_bytes"])
    got = sig["outputs"]
    for k, out in enumerate(got):
        ref = read_pb(os.path.join(ds, "output_%d.pb" % k))
        if out["shape"] != list(ref.dims):
            return "fail", "output %s: shape %s, reference %s" % (out["name"], out["shape"],
                                                                 list(ref.dims))
        # The dtype reference is the model's declared output type: ONNX 1.12's data
        # stores bfloat16 results as uint16 bit patterns.
        want = DTYPES.get(g.output[k].type.tensor_type.elem_type)
        if out["dtype"] != want:
            return "fail", "output %s: dtype %s, model declares %s" % (out["name"], out["dtype"],
                                                                      want)
    return "pass", ""


def main():
    kiln, root = sys.argv[1], sys.argv[2]
    verbose = "-v" in sys.argv[3:]
    cases = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "*", "model.onnx")))
    cases = cases[::every(sys.argv[3:])]
    counts = {"pass": 0, "aot": 0, "unsupported": 0, "skip": 0, "fail": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for case, (status, detail) in zip(cases, ex.map(lambda c: run_case(kiln, c), cases)):
            counts[status] += 1
            if status == "fail" or (verbose and status in ("aot", "unsupported")):
                print("%s %s: %s" % (status.upper(), os.path.relpath(case, root), detail))
    print("shape inference on %d cases of supported ops: %d match the reference, %d need "
          "compile-time values fed as inputs, %d use an unsupported attribute or mode "
          "(%d cases skipped: unsupported ops)"
          % (len(cases) - counts["skip"], counts["pass"], counts["aot"], counts["unsupported"],
             counts["skip"]))
    print("%d passed, %d failed" % (len(cases) - counts["skip"] - counts["fail"],
                                    counts["fail"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
