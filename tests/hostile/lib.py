"""Shared by the tests/hostile scripts: compile a model with kiln, link it
with driver.c against libkiln, run it, and read what the driver prints."""
import os
import subprocess

import numpy as np


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


def driver_input(j, count):
    """What driver.c feeds input j (count elements)."""
    return (np.arange(count, dtype=np.float32) * np.float32(0.25) - np.float32(1)) * np.float32(j + 1)


def link_driver(src, outdir, libkiln):
    """Builds outdir/driver from outdir/net.h and net.o; returns (ok, stderr)."""
    cc = os.environ.get("CC", "cc").split()
    san = os.environ.get("SANFLAGS", "").split()
    r = run(cc + ["-std=c11", "-Wall", "-Wextra", "-Werror"] + san +
            ["-DHEADER=\"net.h\"", "-DMODEL=net_model", "-I" + os.path.join(src, "include"),
             "-I" + outdir, os.path.join(src, "tests/hostile/driver.c"),
             os.path.join(outdir, "net.o"), libkiln, "-lm", "-o", os.path.join(outdir, "driver")])
    return r.returncode == 0, r.stderr.decode(errors="replace")


def run_driver(outdir, n):
    """(exit status, names {input: [hex]...}, outputs [np.array]...)"""
    r = run([os.path.join(outdir, "driver"), str(n)], cwd=outdir)
    names = {"input": [], "output": []}
    values = []
    for line in r.stdout.decode().splitlines():
        word, _, rest = line.partition(" ")
        if word in names:
            names[word].append(rest)
        elif word == "values":
            values.append(np.array([float(v) for v in rest.split()], np.float32))
    return r.returncode, r.stderr.decode(errors="replace"), names, values
