"""The kiln Python module, installed: usage: run.py BUILD_DIR SOURCE_ROOT OUTDIR

meson install (into OUTDIR/root with --destdir, moved to OUTDIR/kiln: a
relocated prefix), then, with only that installation on PYTHONPATH,
tests/python/checks.py: the jet tagger and a ParticleNet-style model from
numpy against a C program running the same models through kiln_run (bit
for bit, n = 0..70), errors, out=, threads, pickling, kiln.compile's cache,
run_lengths against ONNX Runtime at each jet's length (when NODE_PATH finds
onnxruntime-node), and examples/dask_jets on a LocalCluster of 2 worker
processes.
CC and SANFLAGS as for the other suites; in a sanitizer build meson gives
KILN_PYTHON_PRELOAD, the sanitizer runtime the extension needs loaded first:
the Python processes get it as LD_PRELOAD (checks.py keeps it away from
kiln and the C programs, which link their own).
"""
import ast
import json
import os
import shutil
import subprocess
import sys

build, src, out = (os.path.abspath(p) for p in sys.argv[1:4])
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)

opts = {o["name"]: o["value"] for o in json.loads(subprocess.run(
    ["meson", "introspect", build, "--buildoptions"], capture_output=True, text=True,
    check=True).stdout)}
prefix, libdir, incdir, bindir = opts["prefix"], opts["libdir"], opts["includedir"], opts["bindir"]
paths = {}
for line in open(os.path.join(build, "python", "kiln", "_paths.py")):
    if "=" in line and not line.startswith("#"):
        k, v = line.split("=", 1)
        paths[k.strip()] = ast.literal_eval(v.strip())

r = subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--destdir",
                    os.path.join(out, "root")], capture_output=True, text=True)
if r.returncode != 0:
    print("FAIL: meson install: " + (r.stdout + r.stderr)[-600:])
    sys.exit(1)
# Relocate: the module must find kiln from its own place.
root = os.path.join(out, "root") + prefix
installed = os.path.join(out, "kiln")
os.rename(root, installed)
shutil.rmtree(os.path.join(out, "root"))

env = dict(os.environ)
env.pop("KILN", None)
if env.get("KILN_PYTHON_PRELOAD"):
    env["LD_PRELOAD"] = env["KILN_PYTHON_PRELOAD"]
env["PYTHONPATH"] = os.path.join(installed, paths["PLATLIB_REL"])
env["KILN_CACHE_DIR"] = os.path.join(out, "cache")
config = {
    "src": src, "out": out,
    "kiln": os.path.join(installed, bindir, "kiln"),
    "include": os.path.join(installed, incdir),
    "libkiln": os.path.join(installed, libdir, "libkiln.a"),
    "platlib": env["PYTHONPATH"],
}
r = subprocess.run([sys.executable, os.path.join(src, "tests", "python", "checks.py"),
                    json.dumps(config)], env=env)
sys.exit(r.returncode)
