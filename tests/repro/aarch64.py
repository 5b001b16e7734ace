#!/usr/bin/python3
"""The same bits on aarch64 (issue 30): each model of tests/repro/bits.py
compiled with `kiln compile --target aarch64-linux-gnu`, linked with a
cross-built libkiln and run under qemu-aarch64, against the same model
compiled for this x86-64 machine and run under KILN_ISA=ref (the reference
kernels, the definition of every result).

Per model it runs bits.py's harness (tests/realmodels/stitch_rows.c: 64
random samples at n = 64, stitched at n = 57, and each alone) on both
machines with the same inputs and compares the FNV-1a hash of every output
byte. Equality is asserted for every model not listed in KNOWN below (each
with its reason; docs/reproducibility.md carries the same list); a KNOWN
model that now agrees is reported, not failed. The x86 default ISA's hash is
printed beside, for the reader (bits.py checks it against ref).

The aarch64 libkiln is the portable sources (no x86 variants), compiled
with -std=c11 -O2 -ffp-contract=off as kiln's own build compiles them; the
generated C with the flags `kiln compile` uses. Skips (exit 77) with a
message when the cross toolchain or qemu is absent (scripts/install-deps.sh
installs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user).

usage: aarch64.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [--models DIR] [--only A,B]   (env CC)

--models DIR adds every DIR/*.onnx, as bits.py's option does.
"""
import glob
import os
import re
import shutil
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bits  # noqa: E402

XCC = "aarch64-linux-gnu-gcc"
XAR = "aarch64-linux-gnu-ar"
QEMU = "qemu-aarch64"
SYSROOT = "/usr/aarch64-linux-gnu"
FLAGS = ["-std=c11", "-O2", "-ffp-contract=off"]

# model -> why its bits differ on aarch64 today.
KNOWN = {}


def check(r, what):
    if r.returncode:
        raise RuntimeError("%s: %s" % (what, (r.stderr or r.stdout).strip()[-1500:]))


def build_runtime(src, folder):
    """libkiln.a for aarch64 from the portable sources (no avx2/avx512/vnni files:
    the x86 variants, built only with their flags)."""
    os.makedirs(folder, exist_ok=True)
    objs = []
    files = sorted(f for f in glob.glob(os.path.join(src, "runtime", "**", "*.c"), recursive=True)
                   if not re.search(r"/(avx2|avx512|vnni)[^/]*\.c$", f))
    for f in files:
        o = os.path.join(folder, os.path.relpath(f, src).replace("/", "_") + ".o")
        check(bits.run([XCC] + FLAGS + ["-fPIC", "-fvisibility=hidden", "-DKILN_BUILDING",
                                        "-DKILN_STATIC", "-I", os.path.join(src, "include"),
                                        "-c", f, "-o", o]), "cross-compile " + f)
        objs.append(o)
    lib = os.path.join(folder, "libkiln.a")
    check(bits.run([XAR, "rcs", lib] + objs), "ar")
    return lib


def build_a64(model_path, d, lib):
    """The model for aarch64, linked statically with stitch_rows.c; returns a
    wrapper script that runs it under qemu (bits.outputs runs it as any exe)."""
    os.makedirs(d, exist_ok=True)
    check(bits.run([bits.KILN, "compile", model_path, "--batch", bits.SIZES, "--name", "t",
                    "--target", "aarch64-linux-gnu", "-o", d] +
                   bits.shape_flags(bits.onnx.load(model_path, load_external_data=False))),
          "kiln compile --target")
    exe = os.path.join(d, "stitch_rows.a64")
    check(bits.run([XCC] + FLAGS + ["-I", d, "-I", os.path.join(bits.SRC, "include"),
                                    "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                                    os.path.join(bits.SRC, "tests", "realmodels", "stitch_rows.c"),
                                    os.path.join(d, "t.c"), os.path.join(d, "t_weights.o"), lib,
                                    "-lm", "-static", "-o", exe]), "cross-link")
    wrap = os.path.join(d, "stitch_rows")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\nexec %s -L %s "%s" "$@"\n' % (QEMU, SYSROOT, exe))
    os.chmod(wrap, os.stat(wrap).st_mode | stat.S_IXUSR)
    return wrap


def main():
    args = sys.argv[1:]
    only, models_dir = None, None
    if "--only" in args:
        k = args.index("--only")
        only = set(args[k + 1].split(","))
        del args[k:k + 2]
    if "--models" in args:
        k = args.index("--models")
        models_dir = args[k + 1]
        del args[k:k + 2]
    if len(args) != 4:
        sys.exit(__doc__)
    bits.KILN, bits.SRC, bits.LIBKILN, out = args
    bits.CC = os.environ.get("CC", "cc").split()
    bits.SAN = os.environ.get("SANFLAGS", "").split()
    missing = [t for t in (XCC, XAR, QEMU) if not shutil.which(t)]
    if missing or not os.path.isdir(os.path.join(SYSROOT, "lib")):
        print("SKIP: no aarch64 cross toolchain or qemu (%s): run scripts/install-deps.sh" %
              ", ".join(missing or [SYSROOT]))
        return 77
    shutil.rmtree(out, ignore_errors=True)
    lib = build_runtime(bits.SRC, os.path.join(out, "rt"))
    models = bits.own_models()
    if only is None or only - set(models):
        models.update(bits.torch_models())
    if models_dir:
        models.update(bits.dir_models(models_dir))
    if only:
        models = {k: v for k, v in models.items() if k in only}
    isas = bits.machine_isas()
    failures, now_holds = [], []
    print("%-18s %-17s %-17s %-17s" % ("model", "x86 ref", "aarch64", "x86 " + isas[-1]))
    for name, model in models.items():
        d = os.path.join(out, name)
        try:
            exe = bits.build(name, model, d)
            feed = bits.feed_of(model)
            x86 = bits.outputs(exe, d, feed, "ref")[2]
            top = bits.outputs(exe, d, feed, isas[-1])[2]
            a64exe = build_a64(os.path.join(d, "model.onnx"), os.path.join(d, "a64"), lib)
            a64 = bits.outputs(a64exe, d, feed, "ref")[2]
            # round toward +inf and flush-to-zero left by the caller change nothing
            a64fe = bits.outputs(a64exe, d, feed, "ref", fpenv=True)[2]
        except RuntimeError as e:
            failures.append("%s: %s" % (name, e))
            print("%-18s error: %s" % (name, e))
            continue
        print("%-18s %-17s %-17s %-17s %s%s" % (name, x86, a64, top, "=" if x86 == a64 else "x",
                                                "" if a64fe == a64 else " (fpenv x)"))
        if x86 != a64 and name not in KNOWN:
            failures.append("%s: aarch64 differs from x86-64 ref" % name)
        if a64fe != a64:
            failures.append("%s: aarch64 in a hostile floating-point environment differs" % name)
        elif x86 == a64 and name in KNOWN:
            now_holds.append(name)
    for name, why in sorted(KNOWN.items()):
        if name in models:
            print("known: %s: %s" % (name, why))
    for h in now_holds:
        print("now holds: %s (remove it from KNOWN)" % h)
    for f in failures:
        print("FAIL:", f)
    print("aarch64: %d models, %d failures" % (len(models), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
