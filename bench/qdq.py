#!/usr/bin/python3
"""QDQ-quantized Conv and MatMul: kiln --qdq=exact (the integer kernels,
runtime/kernels/i8-gemm/) against --qdq=float and ONNX Runtime, side by side.

Models (tests/opt/qdq_models.py's builder, as ONNX Runtime's quantization
tool writes them):
  conv:   x [1, 32, 28, 28] uint8 activations, Conv 64 x 3x3 (pads 1),
          int8 weights per output channel, int32 bias, Q to uint8;
  matmul: x [1, 64, 512] uint8, MatMul by [512, 512] int8 per column, Q;
  conv_i16, matmul_i16: the same with int16 activations (opset 21).
Each engine runs alone on one core (taskset -c CORE) with bench/kiln_time.c
or bench/ort_time.js (one thread); the three alternate for PASSES passes.
Printed per model: each engine's CPU-time median per pass, the median over
the passes, and the ratios exact/float and exact/ORT (median [min, max] of
the per-pass ratios). The outputs are compared too: exact vs ORT (ORT fuses
8-bit chains into its integer kernels) in elements that differ.

usage: bench/qdq.py [--core 1] [--passes 3] [--min-time 1.0] [--out build/bench-qdq]
(from the source root, after ninja -C build; NODE_PATH from
scripts/install-ort.sh)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
from onnx import save

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "opt"))
import qdq_models as qm  # noqa: E402


def conv_model(act=np.uint8, opset=13):
    b = qm.Builder("qdq_conv", opset, [32, 28, 28], act, 1)
    r = b.rng
    x = b.qdq("x")
    xs = b.last_params[0]
    c = b.node("Conv", [x, b.weight(r.standard_normal((64, 32, 3, 3)) * 0.1, 0),
                        b.bias(r.standard_normal(64) * 0.1, xs)], pads=[1, 1, 1, 1])
    y = b.qdq(c)
    return b.model(y, y)


def matmul_model(act=np.uint8, opset=13):
    b = qm.Builder("qdq_matmul", opset, [64, 512], act, 2)
    r = b.rng
    x = b.qdq("x")
    m = b.node("MatMul", [x, b.weight(r.standard_normal((512, 512)) * 0.05, 1)])
    y = b.qdq(m)
    return b.model(y, y)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def check(r, what):
    if r.returncode:
        sys.exit("qdq bench: %s failed: %s" % (what, r.stderr.strip()[-500:]))
    return r


def build(args, path, d, qdq):
    os.makedirs(d, exist_ok=True)
    check(run([args.kiln, "compile", path, "--batch", "1", "--name", "bench", "-o", d,
               "--qdq=" + qdq]), "kiln compile --qdq=" + qdq)
    exe = os.path.join(d, "kiln_time")
    check(run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-I" + d,
               "-I" + os.path.join(ROOT, "include"), "-I" + HERE,
               os.path.join(HERE, "kiln_time.c"), os.path.join(d, "bench.o"), args.libkiln,
               "-lm", "-o", exe]), "link")
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-qdq"))
    ap.add_argument("--only", help="the models whose name contains this")
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "compiler", "kiln"))
    ap.add_argument("--libkiln", default=os.path.join(ROOT, "build", "runtime", "libkiln.a"))
    args = ap.parse_args()
    pin = ["taskset", "-c", str(args.core)]
    models = (("conv", conv_model), ("matmul", matmul_model),
              ("conv_i16", lambda: conv_model(np.int16, 21)),
              ("matmul_i16", lambda: matmul_model(np.int16, 21)))
    for name, make in models:
        if args.only and args.only not in name:
            continue
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        model = make()
        path = os.path.join(d, "model.onnx")
        save(model, path)
        shape = [1] + [v.dim_value for v in model.graph.input[0].type.tensor_type.shape.dim][1:]
        ind = os.path.join(d, "in")
        os.makedirs(ind, exist_ok=True)
        x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        x.tofile(os.path.join(ind, "x.bin"))
        spec = {"batch": 1, "inputs": [{"name": "x", "dtype": "float32", "shape": shape,
                                        "file": os.path.join(ind, "x.bin")}],
                "outputs": [{"name": o, "file": os.path.join(d, "ort_out", o + ".bin")}
                            for o in ("y", "h")]}
        os.makedirs(os.path.join(d, "ort_out"), exist_ok=True)
        sf = os.path.join(d, "spec.json")
        with open(sf, "w") as f:
            json.dump(spec, f)
        exes = {q: build(args, path, os.path.join(d, q), q) for q in ("exact", "float")}
        t = {"exact": [], "float": [], "ort": []}
        for _ in range(args.passes):
            for q in ("exact", "float"):
                od = os.path.join(d, q, "out")
                os.makedirs(od, exist_ok=True)
                r = check(run(pin + [exes[q], str(args.min_time), "20", "1.0", ind, od]), q)
                t[q].append(json.loads(r.stdout)["cpu_median_ns"] / 1e6)
            r = check(run(pin + ["node", os.path.join(HERE, "ort_time.js"), path, sf,
                                 str(args.min_time), "20", "1.0"]), "ONNX Runtime")
            t["ort"].append(json.loads(r.stdout)["cpu_median_ns"] / 1e6)
        ye = np.fromfile(os.path.join(d, "exact", "out", "y.bin"), np.float32)
        yf = np.fromfile(os.path.join(d, "float", "out", "y.bin"), np.float32)
        yo = np.fromfile(os.path.join(d, "ort_out", "y.bin"), np.float32)

        def ratio(a, b):
            r = [u / v for u, v in zip(t[a], t[b])]
            return "%.2f [%.2f, %.2f]" % (statistics.median(r), min(r), max(r))
        print("%s (%d elements): ms per call, CPU time, median of %d passes: exact %.3f %s, "
              "float %.3f %s, ORT %.3f %s" % (
                  name, ye.size, args.passes, statistics.median(t["exact"]),
                  ["%.3f" % v for v in t["exact"]], statistics.median(t["float"]),
                  ["%.3f" % v for v in t["float"]], statistics.median(t["ort"]),
                  ["%.3f" % v for v in t["ort"]]))
        print("  exact/float %s, exact/ORT %s; elements differing: exact vs ORT %d, "
              "float vs ORT %d" % (ratio("exact", "float"), ratio("exact", "ort"),
                                   int(np.count_nonzero(ye != yo)),
                                   int(np.count_nonzero(yf != yo))))


if __name__ == "__main__":
    main()
