"""What the stitching tests of real exports share (particlenet.py,
part_stitch.py): ONNX Runtime's outputs through ort_ref.js, a compiled
model linked with stitch_rows.c, and its kiln_run outputs for several n and
for every row alone."""
import json
import os
import shutil
import subprocess

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Stitcher:
    """kiln, the source root, libkiln.a and the compiler (env CC, SANFLAGS);
    failures are collected in self.failures."""

    def __init__(self, kiln, src, libkiln):
        self.kiln, self.src, self.libkiln = kiln, src, libkiln
        self.cc = os.environ.get("CC", "cc").split()
        self.san = os.environ.get("SANFLAGS", "").split()
        self.failures = []

    def fail(self, msg):
        print("FAIL:", msg)
        self.failures.append(msg)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ort_available():
    r = run(["node", "-e", "require('onnxruntime-node')"])
    return r.returncode == 0


def ort(model_path, feed, d):
    """ONNX Runtime's float32 outputs of model_path on feed (name -> array)."""
    spec = {"model": model_path, "outdir": d, "inputs": []}
    for i, (name, arr) in enumerate(feed.items()):
        f = os.path.join(d, "ort_in%d.bin" % i)
        np.ascontiguousarray(arr).tofile(f)
        spec["inputs"].append({"name": name, "type": "float32", "dims": list(arr.shape), "file": f})
    with open(os.path.join(d, "spec.json"), "w") as f:
        json.dump(spec, f)
    r = run(["node", os.path.join(HERE, "ort_ref.js"), os.path.join(d, "spec.json")])
    if r.returncode:
        raise RuntimeError("ONNX Runtime: " + r.stderr.strip())
    with open(os.path.join(d, "outputs.json")) as f:
        outs = json.load(f)
    return [np.fromfile(os.path.join(d, "output_%d.bin" % i), np.float32).reshape(o["dims"])
            for i, o in enumerate(outs)]


def build(st, model_path, d, sizes, extra=(), warns=False):
    """Compile and link stitch_rows; the executable's path or None."""
    os.makedirs(d, exist_ok=True)
    r = run([st.kiln, "compile", model_path, "--batch", sizes, "--name", "t", "-o", d] + list(extra))
    if r.returncode or ("warning" in r.stderr) != warns:
        st.fail("%s: kiln compile: %s" % (d, r.stderr.strip()))
        return None
    exe = os.path.join(d, "stitch_rows")
    r = run(st.cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(st.src, "include"),
                     "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                     os.path.join(HERE, "stitch_rows.c"), os.path.join(d, "t.o"), st.libkiln, "-lm"]
            + st.san + ["-o", exe])
    if r.returncode:
        st.fail("%s: cc: %s" % (d, r.stderr.strip()))
        return None
    return exe


def stitched(exe, d, feed, rows, ns, ncls):
    """Outputs of kiln_run for each n (first n rows), then every row alone:
    ((n -> [n, ncls], [rows, ncls]), None) or (None, the error)."""
    ins = []
    for i, arr in enumerate(feed.values()):
        ins.append(os.path.join(d, "in%d.bin" % i))
        np.ascontiguousarray(arr).tofile(ins[-1])
    out = os.path.join(d, "out.bin")
    r = run([exe, str(rows)] + ins + [out] + [str(n) for n in ns])
    if r.returncode:
        return None, r.stderr.strip()
    y = np.fromfile(out, np.float32).reshape(-1, ncls)
    res, at = {}, 0
    for n in ns:
        res[n], at = y[at:at + n], at + n
    return (res, y[at:]), None


def check_rows(st, name, ref, got, ns, rtol=1e-3, atol=1e-5, rtol_alone=1e-4, atol_alone=1e-6):
    """Each n's rows against the reference and against the rows run alone."""
    res, alone = got
    if not np.allclose(alone, ref, rtol=rtol, atol=atol):
        st.fail("%s: rows alone differ from ONNX Runtime by %.3g" % (
            name, float(np.abs(alone - ref).max())))
    for n in ns:
        if not np.allclose(res[n], ref[:n], rtol=rtol, atol=atol):
            st.fail("%s: kiln_run n=%d differs from ONNX Runtime by %.3g" % (
                name, n, float(np.abs(res[n] - ref[:n]).max())))
        if not np.allclose(res[n], alone[:n], rtol=rtol_alone, atol=atol_alone):
            st.fail("%s: kiln_run n=%d differs from the rows run alone by %.3g" % (
                name, n, float(np.abs(res[n] - alone[:n]).max())))


def start(out):
    """False (after saying why: the test is then skipped, exit 77) without
    ONNX Runtime; else an empty out directory."""
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return False
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    return True
