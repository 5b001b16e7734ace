#!/usr/bin/python3
"""ParticleNet exported as weaver-core exports it (particlenet_weaver.py):
stitched batches and the fused EdgeConv, against ONNX Runtime.

For every variant (AK4-, AK8-, HLT-like; use_fts_bn and use_counts off; the
cpu_mode gather along axis 1; opsets 11, 13, 17; BatchNorm kept unfolded;
the particle axis dynamic, fixed with --shape; a GatherND batch_dims form):
  - `kiln info --plan` proves it batch-independent;
  - the compiled C holds one fused kNN and one fused EdgeConv per block and
    compiled size (passes/edgeconv.c);
  - `kiln compile` at a few sizes, then kiln_run (stitch_rows.c) on the first
    n rows for every n from 0 to 70, n = 100, 127-129, 199, 255-257, 299 and
    ROWS = 300, and the compiled sizes (in the sanitizer build n = 0, 1, 5, 17,
    57, 64, 129 and 300), and on
    every row alone: each n's rows match ONNX Runtime's run of all ROWS rows
    (rtol 1e-3, atol 1e-5) and each row's own call (rtol 1e-4, atol 1e-6);
    some samples have no particle at all;
  - for a few, the same with --no-pass=edgeconv (the unfused graph), at n = 0,
    1, 5, 17, 57, 64, 300 and the compiled sizes.
The negative models (an offset n*(P-1) or n*(P+1), no offset, indices from
a TopK over 2P elements; a flat index cast and used as data) must be
refused, naming the Gather (the Cast), and kiln_run
of a size that is not compiled must return KILN_BATCH_MIXING.

usage: particlenet.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [VARIANT...]
(env CC, SANFLAGS; exits 77, "skipped", without ONNX Runtime)
"""
import os
import sys

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import particlenet_weaver as pw  # noqa: E402
from stitch_util import Stitcher, build, check_rows, ort, run, start  # noqa: E402
import stitch_util  # noqa: E402

ST = Stitcher(*sys.argv[1:4])
KILN, OUT = sys.argv[1], sys.argv[4]
WANTED = set(sys.argv[5:])
ROWS = 300
# Issue 29: stitched batches of every n from 0 to 70, and sizes up to 300 around
# the powers of two, each row against the sample's own call.
NS = list(range(0, 71)) + [100, 127, 128, 129, 199, 255, 256, 257, 299, 300]
if os.environ.get("SANFLAGS"):  # the sanitizer build: the memory checks, at fewer sizes
    NS = [0, 1, 5, 17, 57, 64, 129, 300]
EMPTY = (3, 40)   # samples without particles
fail = ST.fail


def stitched(exe, d, feed, ns, ncls):
    return stitch_util.stitched(exe, d, feed, ROWS, ns, ncls)


def check_variant(name, sizes, fused_blocks, unfused=False, flags=()):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    model, _ = pw.export(name)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    args = pw.VARIANTS[name][0]
    feed = pw.inputs(args, ROWS, pw.VARIANTS[name][1], seed=11, empty_rows=EMPTY)
    ref = ort(path, feed, d)[0]
    r = run([KILN, "info", "--plan", "--batch", sizes, path] + list(flags))
    if "batch independent: yes" not in r.stdout:
        fail("%s: not proven batch-independent: %s" % (
            name, [ln for ln in r.stdout.splitlines() if "batch independent" in ln] or r.stderr))
    r = run([KILN, "info", "--plan", "--batch", sizes, "--no-pass=edgeconv", path] + list(flags))
    if "batch independent: yes" not in r.stdout:
        fail("%s: unfused, not proven batch-independent" % name)
    compiled = [int(s) for s in sizes.split(",")]
    ns = sorted(set(NS + compiled))
    forms = [("fused", tuple(flags))] + ([("unfused", tuple(flags) + ("--no-pass=edgeconv",))] if unfused else [])
    for form, extra in forms:
        exe = build(ST, path, os.path.join(d, form), sizes, extra)
        if not exe:
            continue
        with open(os.path.join(d, form, "t.c")) as f:
            src = f.read()
        # every block's kNN and EdgeConv fused, in every compiled size (or none)
        want = fused_blocks * len(sizes.split(",")) if form == "fused" and fused_blocks else 0
        got = (src.count("/* fused: kNN EdgeConv:"), src.count("/* fused: kNN:"))
        if got != (want, want):
            fail("%s (%s): %d fused EdgeConv and %d fused kNN nodes, expected %d each" % (
                name, form, got[0], got[1], want))
        # (the unfused graph, ten times the work a row, at fewer sizes)
        fns = ns if form == "fused" else sorted(set([0, 1, 5, 17, 57, 64, ROWS] + compiled))
        got, err = stitched(exe, os.path.join(d, form), feed, fns, ref.shape[1])
        if err:
            fail("%s (%s): %s" % (name, form, err))
            continue
        check_rows(ST, "%s (%s)" % (name, form), ref, got, fns)
    print("%s: sizes %s, n = %s and %d rows alone (%s)" % (
        name, sizes, ns, ROWS, ", ".join(f for f, _ in forms)))


def check_bad(name):
    d = os.path.join(OUT, "bad_" + name)
    os.makedirs(d, exist_ok=True)
    model, _ = pw.export(name)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    r = run([KILN, "info", "--plan", "--batch", "1,4", path])
    line = [ln for ln in r.stdout.splitlines() if "batch independent" in ln]
    where = "Cast" if name == "flat_as_data" else "Gather"
    if not line or "batch independent: no" not in line[0] or where not in line[0]:
        fail("bad %s: not refused at its %s: %s" % (name, where, line or r.stderr.strip()))
        return
    exe = build(ST, path, d, "1,4", warns=True)   # "only the compiled batch sizes can run"
    if exe and name != "flat_as_data":
        feed = pw.inputs(pw.BAD[name][0], ROWS, pw.BAD[name][1], seed=5)
        got, err = stitched(exe, d, feed, [1, 3], 5)   # 1 compiled, 3 not
        if got or "mix" not in (err or ""):
            fail("bad %s: kiln_run n=3 was not refused: %s" % (name, err))
    print("bad %s: %s" % (name, line[0].split(": ", 1)[1][:160]))


def main():
    if not start(OUT):
        return 77
    # name -> (compiled sizes, EdgeConv blocks the edgeconv pass must fuse, also unfused[, flags])
    plan = {
        "ak4_op11": ("1,16", 2, True),
        "ak4_op13": ("1,4,16", 2, False),
        "ak4_op17": ("1,8", 2, False),
        "ak8_op13": ("1,16", 3, False),
        "ak8_op11": ("2,8", 3, False),
        "hlt_op17": ("1,16", 2, False),
        "ak4_nobn_nocounts_op13": ("1,16", 2, False),
        "ak4_v2_op11": ("1,16", 2, True),
        "hlt_v2_op17": ("1,8", 2, False),
        "ak4_bn_op13": ("1,16", 2, False),
        "ak8_bn_v2_op17": ("1,8", 3, False),
        "gathernd_op13": ("1,4", 1, True),
        # the particle axis dynamic too (weaver's --export-onnx), fixed per build
        "ak4_dynp_op11": ("1,16", 2, False, ["--shape", "points=N,2,50", "--shape", "features=N,8,50",
                                             "--shape", "mask=N,1,50"]),
    }
    fusing = os.environ.get("KILN_PN_FUSED", "1") == "1"
    for name, (sizes, blocks, unfused, *flags) in plan.items():
        if not WANTED or name in WANTED:
            check_variant(name, sizes, blocks if fusing else None, unfused, flags[0] if flags else ())
    for name in pw.BAD:
        if not WANTED or "bad_" + name in WANTED:
            check_bad(name)
    if ST.failures:
        print("%d failures" % len(ST.failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
