#!/usr/bin/python3
"""Over 2 GiB of weights for aarch64: cross-compiled, linked and run under qemu.

The model of large_weights.py (three Gather tables, 2.06 GiB in a sparse
external-data file). `kiln compile --target aarch64-linux-gnu` must put the
weights in a writable .ldata section (which GNU ld places after .data; in
.rodata, .eh_frame's 32-bit references to the code overflow past 2 GiB).
The test cross-compiles NAME.c and libkiln with aarch64-linux-gnu-gcc, -fPIC
and no code-model flag (the small model's ADRP reaches +-4 GiB), links them
into a shared library as a CMSSW plugin would be, and a PIE program against
it, and runs that under qemu-aarch64: the sampled rows (and zeros elsewhere)
must come back exactly, as numpy computes them. Then a model of
3.93 GiB, past what that code can address (3.75 GiB), must be refused with
exit 2 and one error line.

Skips (exit 77) with a message when the cross toolchain or qemu is absent
(scripts/install-deps.sh installs gcc-aarch64-linux-gnu,
libc6-dev-arm64-cross and qemu-user).

usage: large_weights_aarch64.py KILN SOURCE_ROOT
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import large_weights as lw  # noqa: E402

CC = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64"
SYSROOT = "/usr/aarch64-linux-gnu"
MiB = 1 << 20


PLUGIN_API = """#include <stdint.h>
int plugin_run(const int64_t *idx, float *y0, float *y1, float *y2);"""

PLUGIN = """#include "large.h"
__attribute__((visibility("default")))
int plugin_run(const int64_t *idx, float *y0, float *y1, float *y2)
{
	return large_run_b4(NULL, idx, y0, y1, y2);
}
"""


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, **kw)
    if r.returncode:
        sys.stdout.write((r.stderr if isinstance(r.stderr, str) else r.stderr.decode())[-2000:])
        raise SystemExit("FAIL: %s exited %d" % (os.path.basename(argv[0]), r.returncode))
    return r


def build_runtime(src, folder):
    """libkiln for aarch64: the portable sources (no x86 ISA variants: avx2, avx512, vnni*)."""
    objs = []
    files = sorted(f for f in glob.glob(os.path.join(src, "runtime", "**", "*.c"), recursive=True)
                   if not re.search(r"/(avx2|avx512|vnni)[^/]*\.c$", f))
    for f in files:
        o = os.path.join(folder, os.path.relpath(f, src).replace("/", "_") + ".o")
        run([CC, "-std=c11", "-O1", "-fPIC", "-fvisibility=hidden", "-DKILN_BUILDING",
             "-DKILN_STATIC", "-I", os.path.join(src, "include"), "-c", f, "-o", o])
        objs.append(o)
    lib = os.path.join(folder, "libkiln.a")
    run(["aarch64-linux-gnu-ar", "rcs", lib] + objs)
    return lib


def compile_model(kiln, folder, out):
    os.mkdir(out)
    p = subprocess.Popen([kiln, "compile", os.path.join(folder, "model.onnx"), "--batch", "1,4",
                          "--name", "large", "--target", "aarch64-linux-gnu", "-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), p.stderr.read().decode(), ru.ru_maxrss * 1024


def main():
    kiln, src = sys.argv[1:3]
    missing = [t for t in (CC, "aarch64-linux-gnu-ar", QEMU) if not shutil.which(t)]
    if missing or not os.path.isdir(os.path.join(SYSROOT, "lib")):
        print("SKIP: no aarch64 cross toolchain or qemu (%s): run scripts/install-deps.sh" %
              ", ".join(missing or [SYSROOT]))
        return 77
    import numpy as np
    folder = tempfile.mkdtemp(prefix="kiln-large-a64-")
    failed = []
    try:
        w = lw.make_model(folder)
        out = os.path.join(folder, "out")
        code, err, rss = compile_model(kiln, folder, out)
        os.unlink(os.path.join(folder, "weights.bin"))
        if code:
            print(err)
            return 1
        print("kiln compile --target aarch64-linux-gnu, W = %.2f GiB: peak RSS %.0f MiB = %.3f W"
              % (w / (1 << 30), rss / MiB, rss / w))
        if rss > 1.5 * w + 64 * MiB:
            failed.append("peak RSS over 1.5 W + 64 MiB")
        sections = run(["readelf", "-S", "-W", os.path.join(out, "large_weights.o")],
                       text=True).stdout
        # [Nr] Name Type Address Off Size ES Flg ...
        big = re.findall(r"\.ldata\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+(\S+)", sections)
        if not big or int(big[0][0], 16) < w or big[0][1] != "WA":
            failed.append("the weights are not in one writable .ldata section (readelf: %r)" % big)
        if re.search(r"\.rodata\s+PROGBITS\s+\S+\s+\S+\s+0*[1-9a-f]", sections):
            failed.append("bytes left in .rodata")

        os.mkdir(os.path.join(folder, "rt"))
        lib = build_runtime(src, os.path.join(folder, "rt"))
        idx = [lw.SAMPLED[1], lw.SAMPLED[4], 7, lw.SAMPLED[5]]   # row 7 is a hole: zeros
        # As in a CMSSW plugin: the model in a shared library exporting one
        # function of its own; a PIE program linked against it.
        with open(os.path.join(out, "main.c"), "w") as f:
            f.write(lw.MAIN.replace('#include "large.h"', PLUGIN_API).replace(
                "large_run_b4(NULL, idx,", "plugin_run(idx,")
                % dict(dim=lw.DIM, idx=", ".join(map(str, idx))))
        with open(os.path.join(out, "plugin.c"), "w") as f:
            f.write(PLUGIN)
        inc = ["-I", out, "-I", os.path.join(src, "include")]
        objs = []
        for c in ("large.c", "plugin.c"):   # the user's flags: no code-model option
            objs.append(os.path.join(out, c[:-2] + "_c.o"))
            run([CC, "-std=c11", "-O2", "-fPIC", "-Wall", "-Wextra", "-Werror"] + inc +
                ["-c", os.path.join(out, c), "-o", objs[-1]])
        run([CC, "-shared", "-o", os.path.join(out, "libplugin.so")] + objs +
            [os.path.join(out, "large_weights.o"), lib, "-lm"])
        os.unlink(os.path.join(out, "large_weights.o"))
        exe = os.path.join(out, "large")
        run([CC, "-std=c11", "-O2", "-Wall", "-Werror", os.path.join(out, "main.c"), "-L", out,
             "-lplugin", "-o", exe])
        r = subprocess.run([QEMU, "-L", SYSROOT, "-E", "LD_LIBRARY_PATH=" + out, exe],
                           capture_output=True)
        y = np.frombuffer(r.stdout, np.float32)
        if r.returncode or y.size != lw.TABLES * 4 * lw.DIM:
            failed.append("the program failed (exit %d): %s" % (r.returncode, r.stderr[-500:]))
        else:
            y = y.reshape(lw.TABLES, 4, lw.DIM)
            for t in range(lw.TABLES):
                for k, row in enumerate(idx):
                    want = (lw.row_values(t, row) if row in lw.SAMPLED
                            else np.zeros(lw.DIM, np.float32))
                    if not np.array_equal(y[t, k], want):
                        failed.append("table %d row %d is wrong" % (t, row))
        if not failed:
            print("shared library linked and ran under qemu-aarch64: %d tables, rows checked, weights in .ldata"
                  % lw.TABLES)
        shutil.rmtree(out)

        # Past what the small code model addresses: one line, exit 2.
        lw.ROWS = 125000
        w = lw.make_model(folder)
        code, err, _ = compile_model(kiln, folder, out)
        lines = [ln for ln in err.splitlines() if not ln.startswith("kiln: ") or "error" in ln]
        want = "GiB of weights are more than code for aarch64-linux-gnu can address"
        left = [f for f in os.listdir(out) if f.endswith((".c", ".h"))] if os.path.isdir(out) else []
        if code != 2 or len(lines) != 1 or want not in lines[0]:
            failed.append("%.2f GiB of weights: exit %d, %r" % (w / (1 << 30), code, err))
        elif left:
            failed.append("the refused compile left %s behind" % ", ".join(sorted(left)))
        else:
            print("%.2f GiB refused: %s" % (w / (1 << 30), lines[0]))
    finally:
        shutil.rmtree(folder)
    for f in failed:
        print("FAIL:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
