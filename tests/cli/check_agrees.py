#!/usr/bin/python3
"""`kiln check MODEL --batch ...` agrees with `kiln compile` (issue 27).

The models of the test suites (tests/models, tests/fixtures and the ONNX
backend cases of libonnx-testdata: simple, pytorch-converted,
pytorch-operator, and of node every 5th and every 16-bit float one) go
through `kiln check --batch B [--shape ...]` and
`kiln compile --batch B [--shape ...] --no-cc` with the same flags (the
shapes of a case's test_data_set_0 inputs, else batch 1). They must agree:
check exits 0 exactly when compile does; check's exit 1 (a finding) means
compile exits 2 with an error line; check's exit 2 (a broken model) means
compile exits 2 too. --no-cc leaves out the one thing check cannot know:
whether a C compiler is there. Prints the counts; fails on any disagreement.

usage: check_agrees.py KILN SOURCE_ROOT OUTDIR [TESTDATA_DIR]
       KILN_AGREE_ALL=1 check_agrees.py ...   every node case, not every 5th
"""
import concurrent.futures
import glob
import os
import shutil
import subprocess
import sys

import onnx

KILN, SRC, OUT = sys.argv[1:4]
TESTDATA = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/libonnx-testdata/data"


def flags_for(model_path):
    """--batch and --shape from the case's first data set, else --batch 1."""
    d = os.path.join(os.path.dirname(model_path), "test_data_set_0")
    if not os.path.isdir(d) or not model_path.endswith("model.onnx"):
        return ["--batch", "1"]
    try:
        g = onnx.load(model_path, load_external_data=False).graph
    except Exception:
        return ["--batch", "1"]
    inits = {t.name for t in g.initializer}
    names = [i.name for i in g.input if i.name not in inits]
    shapes = []
    for k, name in enumerate(names):
        f = os.path.join(d, "input_%d.pb" % k)
        if not os.path.exists(f):
            break
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        shapes.append((name, list(t.dims)))
    batch = shapes[0][1][0] if shapes and shapes[0][1] else 1
    out = ["--batch", str(max(1, batch))]
    for name, dims in shapes:
        if dims:
            out += ["--shape", "%s=%s" % (name, ",".join(str(x) for x in dims))]
    return out


def one(job):
    k, path = job
    flags = flags_for(path)
    c = subprocess.run([KILN, "check", path] + flags, capture_output=True, text=True,
                       timeout=120)
    out = os.path.join(OUT, "m%d" % k)
    p = subprocess.run([KILN, "compile", path, "--no-cc", "--name", "m", "-o", out] + flags,
                       capture_output=True, text=True, timeout=120)
    shutil.rmtree(out, ignore_errors=True)
    ok = (c.returncode == 0) == (p.returncode == 0) and c.returncode in (0, 1, 2) and \
        (c.returncode == 0 or p.returncode == 2) and "bug in kiln" not in p.stderr + c.stderr
    why = "" if ok else "check exit %d (%s) but compile exit %d (%s)" % (
        c.returncode, (c.stdout + c.stderr).strip().splitlines()[-1:],
        p.returncode, p.stderr.strip().splitlines()[-1:])
    return path, ok, c.returncode, " ".join(flags), why


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    models = sorted(glob.glob(os.path.join(SRC, "tests", "models", "*", "model.onnx")))
    models += sorted(glob.glob(os.path.join(SRC, "tests", "fixtures", "*.onnx")))
    for suite in ("simple", "pytorch-converted", "pytorch-operator"):
        models += sorted(glob.glob(os.path.join(TESTDATA, suite, "*", "model.onnx")))
    # The node cases: every 5th in CI (all of them take 7-8 minutes on 2
    # cores), and every 16-bit float one, where the code generator's element
    # types matter. KILN_AGREE_ALL=1: every node case.
    node = sorted(glob.glob(os.path.join(TESTDATA, "node", "*", "model.onnx")))
    every = os.environ.get("KILN_AGREE_ALL") == "1"
    models += [m for k, m in enumerate(node)
               if every or k % 5 == 0 or
               any(t in m for t in ("float16", "fp16", "bfloat16", "half"))]
    counts, bad = {0: 0, 1: 0, 2: 0}, []
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for path, ok, rc, flags, why in ex.map(one, enumerate(models)):
            counts[rc] = counts.get(rc, 0) + 1
            if not ok:
                bad.append("%s %s: %s" % (os.path.relpath(path, SRC) if path.startswith(SRC)
                                          else path, flags, why))
    for line in bad:
        print("FAIL " + line)
    print("check_agrees: %d models: check passes %d, finds %d unsupported, refuses %d as "
          "broken; %d disagree with compile" % (len(models), counts[0], counts[1], counts[2],
                                                len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
