#!/usr/bin/python3
"""QDQ-quantized models (the qdq pass, compiler/passes/qdq.c): chains
DequantizeLinear -> Conv / MatMul / Gemm -> QuantizeLinear computed with
exact integer arithmetic.

Models as ONNX Runtime's quantization tool writes them (qdq_models.py):
uint8, int8, int16 and uint16 activations, int8/uint8 weights per tensor and
per channel, symmetric and asymmetric, opsets 13, 19 and 21; two with odd
sizes and weight zero points at the low end (qm.odd). Each is compiled with
the default (--qdq=exact, whose generated C must be the same bytes as with
the flag), and that binary also runs under KILN_ISA=ref, avx2 and avx512,
each of the last two with and without VNNI (KILN_VNNI=0): the integer
kernels' reference loops, the vpmaddwd pairs and the vpdpbusd quads must
give the same bytes. Each is
compiled at batch sizes {1, 4} and run through kiln_run (stitched, n = 8)
and compared, in quantization steps of the output, with
  - the reference (qdq_models.ref_eval): the chains DQ -> Conv / MatMul /
    Gemm [-> Relu] -> Q evaluated exactly in float64 (the QLinear ops'
    integer semantics), every other float tensor rounded to float32 and
    quantized by a float32 quotient as ONNX defines them; it must match in
    every element, and the first layer's output (one chain) too;
  - ONNX Runtime with its graph optimizations (QDQ fused into its integer
    kernels where it has them) and without (DQ -> float op -> Q): the
    counts of elements one step off are printed, and bounded below.
The same model with --qdq=float (float32 arithmetic, as without the pass)
is compiled too and its mismatches printed: the pass must remove them.
usage: qdq.py KILN SOURCE_ROOT LIBKILN_A OUTDIR   (env CC, SANFLAGS, NODE_PATH)
"""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import numpy_helper, save

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_models as qm  # noqa: E402

KILN, SRC, LIBKILN, OUT = sys.argv[1:5]
VERBOSE = os.environ.get("QDQ_VERBOSE")
failures = []


def report(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def ort_available():
    return run(["node", "-e", 'require("onnxruntime-node")']).returncode == 0


def build(d, path, flags):
    os.makedirs(d)
    r = run([KILN, "compile", path, "--batch", "1,4", "--name", "t", "-o", d] + flags)
    if r.returncode or "warning" in r.stderr:
        report(False, "%s: kiln compile %s: %s" % (path, " ".join(flags), r.stderr.strip()))
        return None
    exe = os.path.join(d, "run")
    cc = os.environ.get("CC", "cc").split()
    san = os.environ.get("SANFLAGS", "").split()
    r = run(cc + san + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(SRC, "include"),
                        "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                        os.path.join(SRC, "tests", "trees", "stitch_main.c"),
                        os.path.join(d, "t.o"), LIBKILN, "-lm", "-o", exe])
    if r.returncode:
        report(False, "%s: cc: %s" % (path, r.stderr.strip()))
        return None
    with open(os.path.join(d, "t.c")) as f:
        return {"exe": exe, "src": f.read(), "dir": d}


def kiln_run(b, x, isa=None, vnni=True):
    xf = os.path.join(b["dir"], "x.bin")
    yf = [os.path.join(b["dir"], "y%d.bin" % i) for i in range(2)]
    x.astype(np.float32).tofile(xf)
    env = dict(os.environ, KILN_ISA=isa) if isa else None
    if not vnni:
        env = dict(env or os.environ, KILN_VNNI="0")
    r = subprocess.run([b["exe"], str(len(x)), xf] + yf, capture_output=True, text=True, env=env)
    if r.returncode:
        report(False, "%s: run: %s" % (b["dir"], r.stderr.strip()))
        return None
    return [np.fromfile(f, np.float32) for f in yf]


def ort_run(d, path, x, level):
    xf = os.path.join(d, "ort_x.bin")
    x.astype(np.float32).tofile(xf)
    od = os.path.join(d, "ort_" + level)
    os.makedirs(od, exist_ok=True)
    spec = {"model": path, "outdir": od, "optimization": level,
            "inputs": [{"name": "x", "type": "float32", "dims": list(x.shape), "file": xf}]}
    sf = os.path.join(od, "spec.json")
    with open(sf, "w") as f:
        json.dump(spec, f)
    r = run(["node", os.path.join(SRC, "tests", "realmodels", "ort_ref.js"), sf])
    if r.returncode:
        report(False, "%s: ONNX Runtime (%s): %s" % (path, level, r.stderr.strip()))
        return None
    return [np.fromfile(os.path.join(od, "output_%d.bin" % i), np.float32) for i in range(2)]


def out_scales(model):
    """The scale of the DequantizeLinear that makes each output."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    made = {n.output[0]: n for n in model.graph.node}
    return [float(inits[made[made[o.name].input[0]].input[1]]) for o in model.graph.output]


def steps(a, b, scales):
    """Elements of outputs a and b apart, and the largest distance in steps."""
    n, most = 0, 0
    for u, v, s in zip(a, b, scales):
        d = np.rint(np.abs(u.reshape(-1).astype(np.float64) - v.reshape(-1)) / s)
        n, most = n + int(np.count_nonzero(d)), max(most, int(d.max()))
    return n, most


CASES = [
    # name, model, ORT fuses the chains into integer kernels (8-bit)
    ("cnn_u8_opset13", lambda: qm.cnn("cnn_u8", 13, np.uint8)),
    ("cnn_u8_relu_opset13", lambda: qm.cnn("cnn_u8_relu", 13, np.uint8, explicit_relu=True, seed=3)),
    ("cnn_i8_tensor_opset19", lambda: qm.cnn("cnn_i8", 19, np.int8, per_channel=False, seed=4)),
    ("cnn_u8_depthwise_opset13", lambda: qm.cnn("cnn_dw", 13, np.uint8, seed=5, group=8)),
    ("mlp_u8_opset13", lambda: qm.mlp("mlp_u8", 13, np.uint8)),
    ("mlp_i8_asym_opset19", lambda: qm.mlp("mlp_i8", 19, np.int8, symmetric=False, seed=6)),
    ("mlp_u8w_opset13", lambda: qm.mlp("mlp_u8w", 13, np.uint8, wt=np.uint8, symmetric=False, seed=7)),
    ("cnn_i16_opset21", lambda: qm.cnn("cnn_i16", 21, np.int16, seed=8)),
    ("cnn_u16_opset21", lambda: qm.cnn("cnn_u16", 21, np.uint16, seed=9)),
    ("mlp_i16_opset21", lambda: qm.mlp("mlp_i16", 21, np.int16, seed=10)),
    ("mlp_u16_i16w_opset21", lambda: qm.mlp("mlp_u16", 21, np.uint16, wt=np.int16, seed=11)),
    # tails in every loop of the blocked kernels, weight zero points at the low end
    ("odd_u8_opset13", lambda: qm.odd("odd_u8", 13, np.uint8)),
    ("odd_i8_u8w_opset19", lambda: qm.odd("odd_i8", 19, np.int8, wt=np.uint8, seed=13)),
]


def main():
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return 77
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    n = int(os.environ.get("QDQ_N", "8"))
    only = os.environ.get("QDQ_ONLY")
    table = []
    for name, make in CASES:
        if only and only not in name:
            continue
        model = make()
        wide = "16" in name
        d = os.path.join(OUT, name)
        os.makedirs(d)
        path = os.path.join(d, "model.onnx")
        save(model, path)
        shape = [d.dim_param or d.dim_value for d in
                 model.graph.input[0].type.tensor_type.shape.dim][1:]
        x = np.random.default_rng(len(name)).standard_normal([n] + shape).astype(np.float32)
        exact = qm.ref_eval(model, x)
        scale = out_scales(model)
        on = build(os.path.join(d, "on"), path, [])
        off = build(os.path.join(d, "off"), path, ["--qdq=float"])
        if not on or not off:
            continue
        fd = os.path.join(d, "flag")
        r = run([KILN, "compile", path, "--batch", "1,4", "--name", "t", "-o", fd, "--qdq=exact"])
        with open(os.path.join(fd, "t.c")) as f:
            report(r.returncode == 0 and f.read() == on["src"],
                   "%s: the default is --qdq=exact (the same generated C)" % name)
        got, old = kiln_run(on, x), kiln_run(off, x)
        ort_all, ort_none = ort_run(d, path, x, "all"), ort_run(d, path, x, "disabled")
        if any(v is None for v in (got, old, ort_all, ort_none)):
            continue
        row = {"exact": steps(got, exact, scale), "ort": steps(got, ort_all, scale),
               "ort_float": steps(got, ort_none, scale),
               "old_exact": steps(old, exact, scale), "old_ort": steps(old, ort_all, scale),
               "ort_vs_exact": steps(ort_all, exact, scale),
               "ortfloat_vs_exact": steps(ort_none, exact, scale)}
        size = sum(e.size for e in exact)
        # the blocked kernels (avx2, avx512: the default here) and the
        # reference loops (ref) give the same bytes
        for isa, vnni in (("ref", True), ("avx2", True), ("avx2", False), ("avx512", True),
                          ("avx512", False)):
            other = kiln_run(on, x, isa, vnni)
            same = other is not None and all(np.array_equal(u.view(np.uint32), v.view(np.uint32))
                                              for u, v in zip(got, other))
            report(same, "%s: KILN_ISA=%s%s gives the same bytes as the default"
                   % (name, isa, "" if vnni else " KILN_VNNI=0"))
        h = steps(got[1:], exact[1:], scale[1:])
        report(h[0] == 0, "%s: the first layer (one DQ -> op -> Q chain) equals the exact "
               "reference: %d of %d elements off" % (name, h[0], exact[1].size))
        dump = run([KILN, "dump", path, "--passes", "--batch", "1,4"]).stdout
        chains = len(re.findall(r" kiln\.KilnQLinear(Conv|MatMul) v\d+ ", dump))
        report(chains == 3, "%s: %d chains made integer (want 3)" % (name, chains))
        report(row["exact"][0] <= row["old_exact"][0] and row["exact"][1] <= 1,
               "%s: %d elements off the exact reference, %d with --qdq=float (at most one step)"
               % (name, row["exact"][0], row["old_exact"][0]))
        if not wide:
            # ONNX Runtime fuses 8-bit chains into its integer kernels.
            report(row["exact"][0] == 0 and row["ort"][0] == 0,
                   "%s: 8-bit: equal to the exact reference and to ONNX Runtime" % name)
        table.append((name, size, row))
        print("%-26s %6d elements; kiln vs exact %s, vs ORT %s, vs ORT float %s; "
              "--qdq=float vs exact %s, vs ORT %s; ORT vs exact %s, ORT float vs exact %s"
              % (name, size, row["exact"], row["ort"], row["ort_float"], row["old_exact"],
                 row["old_ort"], row["ort_vs_exact"], row["ortfloat_vs_exact"]))
    print("%d cases, %d checks failed" % (len(table), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
