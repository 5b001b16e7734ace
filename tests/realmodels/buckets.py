#!/usr/bin/python3
"""Buckets on the particle axis (issue 31): `kiln compile --dim P=v1,...,vk`
and kiln_run_lengths, against ONNX Runtime evaluated at every jet's exact
length.

Each case is an export with a dynamic particle axis: ParticleNet as
weaver-core writes it (particlenet_weaver.py: AK4 with k 16 and at most 50
particles, its v2 gather at opset 11, AK8 at most 100, an HLT-like one with k
12), the Particle Transformer with masks (part_model.py: the pair embedding
at opset 17, none at opset 13; n_sv fixed at 4 with --dim, buckets on n_pf),
and a DeepSets model written here (a masked sum over the particles, then an
MLP; a per-particle output that carries the axis; [N, C, P] and [N, P, C]
layouts, opsets 13 and 17, the mask an input or computed from the features).

For every case: one jet of each length 1..LMAX in a shuffled order, run
through lengths_rows.c (kiln_run_lengths on all of them at once; compiled at
batch 1 and 8, so each bucket's jets are stitched): once laid out at LMAX + 3
with NaN past every jet's length (kiln_run_lengths reads only the first
`length` positions and pads with zeros itself) and lmax given, once at LMAX
with zero padding and lmax derived. Every jet's outputs must match ONNX
Runtime's run of that jet alone at its own length, and a per-particle
output must be exactly zero past the jet's length. A kNN with k neighbours
needs k + 1 points in ONNX Runtime: a shorter jet is compared with ONNX
Runtime at k + 1 points, the rest padded the model's way (features zero,
mask zero), which is what kiln computes in the smallest bucket.
lengths_rows.c also checks KILN_LENGTH for a length past the largest
bucket, past lmax and below zero, and KILN_USAGE for a model without
buckets. The context of the bucketed model must be no larger than the
largest bucket's own (lengths_rows.c: its arena, staging and plans) and no
larger than that of the model compiled at the largest bucket alone
(NAME_CONTEXT_BYTES of both headers).

Tolerances: rtol 1e-3, atol 1e-5 (ParticleNet, DeepSets); the Particle
Transformer within rtol 1e-2, atol 2e-3 (part_stitch.py's TOL_EXPORTS: its
pair features of physical jets move with the last bit of the inputs).

usage: buckets.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [CASE...]
(env CC, SANFLAGS; exits 77, "skipped", without ONNX Runtime)
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from buckets_models import CASES, at_length, reference  # noqa: E402
from stitch_util import Stitcher, run, start  # noqa: E402

ST = Stitcher(*sys.argv[1:4])
KILN, OUT = sys.argv[1], sys.argv[4]
WANTED = set(sys.argv[5:])


# ---- running (the models and references: buckets_models.py) -------------------

def header_define(path, macro):
    with open(path) as f:
        for line in f:
            if line.startswith("#define %s " % macro):
                return int(line.split()[2])
    raise RuntimeError("%s defines no %s" % (path, macro))


def build(name, d, model_path, symbol, buckets, extra):
    r = run([KILN, "compile", model_path, "--batch", "1,8", "--dim", "%s=%s" % (symbol, buckets),
             "--name", "t", "-o", d] + extra)
    if r.returncode:
        ST.fail("%s: kiln compile: %s" % (name, r.stderr.strip()))
        return None
    # The context of every bucket is no larger than that of the model compiled
    # at the largest bucket alone (kiln_run at the fixed maximum).
    top = buckets.split(",")[-1]
    r = run([KILN, "compile", model_path, "--batch", "1,8", "--dim", "%s=%s" % (symbol, top),
             "--name", "f", "--no-cc", "-o", os.path.join(d, "fixed")] + extra)
    if r.returncode:
        ST.fail("%s: kiln compile at %s=%s: %s" % (name, symbol, top, r.stderr.strip()))
        return None
    got, fixed = (header_define(os.path.join(dd, nm + ".h"), nm.upper() + "_CONTEXT_BYTES")
                  for dd, nm in ((d, "t"), (os.path.join(d, "fixed"), "f")))
    if got > fixed:
        ST.fail("%s: the bucketed context is %d bytes, more than the %d at %s=%s alone"
                % (name, got, fixed, symbol, top))
    else:
        print("%s: context %d bytes with buckets %s, %d at %s=%s alone"
              % (name, got, buckets, fixed, symbol, top))
    exe = os.path.join(d, "lengths_rows")
    # The generated C, with the typed NAME_run_lengths, builds warning-free.
    r = run(ST.cc + ["-std=c11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", d,
                     "-I", os.path.join(ST.src, "include"), os.path.join(d, "t.c")])
    if r.returncode:
        ST.fail("%s: the generated C warns: %s" % (name, r.stderr.strip()[:2000]))
    r = run(ST.cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(ST.src, "include"),
                     "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                     os.path.join(HERE, "lengths_rows.c"), os.path.join(d, "t.o"), ST.libkiln,
                     "-lm"] + ST.san + ["-o", exe])
    if r.returncode:
        ST.fail("%s: cc: %s" % (name, r.stderr.strip()))
        return None
    return exe


def kiln_lengths(exe, d, tag, feed, order, lengths, lfile, lpass, nout):
    """kiln_run_lengths' outputs (arrays in the caller's layout) or None."""
    files = []
    for k, arr in enumerate(feed.values()):
        files.append(os.path.join(d, "%s_in%d.bin" % (tag, k)))
        np.ascontiguousarray(arr).tofile(files[-1])
    lf = os.path.join(d, "%s_lengths.bin" % tag)
    np.asarray(lengths, np.int64).tofile(lf)
    outs = [os.path.join(d, "%s_out%d.bin" % (tag, k)) for k in range(nout)]
    r = run([exe, str(len(lengths)), str(lfile), str(lpass), lf] + files + outs)
    if r.returncode:
        ST.fail("%s: lengths_rows: %s" % (d, r.stderr.strip()))
        return None
    return [np.fromfile(f, np.float32) for f in outs]



def check_case(name):
    t0 = time.time()
    _, _, symbol, buckets, lmax, _, extra, tol = CASES[name]
    d = os.path.join(OUT, name)
    os.makedirs(d)
    ref = reference(name, d)
    exe = build(name, d, ref["path"], symbol, buckets, extra)
    if not exe:
        return
    model, order, feed, refs = ref["model"], ref["order"], ref["feed"], ref["refs"]
    axes, out_axes = ref["axes"], ref["out_axes"]
    nout = len(model.graph.output)
    garbage = {k: at_length(v, axes[k], lmax + 3, np.nan) for k, v in feed.items()}
    for k, v in garbage.items():
        if axes[k] is not None:   # NaN past each jet's length: never read
            idx = np.arange(lmax + 3).reshape([-1 if a == axes[k] else 1 for a in range(v.ndim)])
            v[np.broadcast_to(idx >= order.reshape([-1] + [1] * (v.ndim - 1)), v.shape)] = np.nan
    worst, before = 0.0, len(ST.failures)
    for tag, f, lfile, lpass in (("nan", garbage, lmax + 3, lmax + 3), ("exact", feed, lmax, -1)):
        got = kiln_lengths(exe, d, tag, f, order, order, lfile, lpass, nout)
        if got is None:
            return
        for o in range(nout):
            y = got[o].reshape(len(order), -1)
            for i, length in enumerate(order):
                ref = refs[i][o][0]
                row = y[i]
                if out_axes[o] is not None:
                    shape = list(ref.shape)
                    shape[out_axes[o] - 1] = lfile
                    row = row.reshape(shape)
                    tail = np.take(row, range(length, lfile), axis=out_axes[o] - 1)
                    if np.any(tail != 0):
                        ST.fail("%s (%s): output %d of the jet of length %d is not zero past it"
                                % (name, tag, o, length))
                    row = np.take(row, range(length), axis=out_axes[o] - 1)
                    ref = np.take(ref, range(length), axis=out_axes[o] - 1)
                row = row.reshape(ref.shape)
                err = float(np.abs(row - ref).max()) if ref.size else 0.0
                worst = max(worst, err)
                if not np.allclose(row, ref, rtol=tol[0], atol=tol[1]):
                    ST.fail("%s (%s): output %d of the jet of length %d differs from ONNX "
                            "Runtime by %.3g" % (name, tag, o, length, err))
    if len(ST.failures) == before:
        print("%s: %d jets of lengths 1..%d in buckets %s: every output within rtol %g, atol %g "
              "of ONNX Runtime at its length (largest difference %.3g)"
              % (name, len(order), lmax, buckets, tol[0], tol[1], worst))
    print("  (%.1f s)" % (time.time() - t0))


def main():
    if not start(OUT):
        return 77
    for name in CASES:
        if not WANTED or name in WANTED:
            check_case(name)
    if ST.failures:
        print("%d failures" % len(ST.failures))
        return 1
    print("buckets: every case passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
