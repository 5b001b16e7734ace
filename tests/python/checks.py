"""The checks of tests/python/run.py, run with only the installed kiln module
on PYTHONPATH. argv[1]: JSON {src, out, kiln, include, libkiln, platlib}.

References: a C program (tests/python/ref.c) linking the same model as a
static object and running it through kiln_run, compared bit for bit; numpy
for the external-data model; the module's own single-threaded results for
threads, pickles and the Dask example (bit for bit); ONNX Runtime at each
jet's own length for model.run_lengths (tests/realmodels/buckets_models.py:
DeepSets and ParticleNet AK4 with buckets; skipped without ONNX Runtime)."""
import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

cfg = json.loads(sys.argv[1])
SRC, OUT, KILN = cfg["src"], cfg["out"], cfg["kiln"]
sys.path.insert(0, os.path.join(SRC, "tests", "realmodels"))

import kiln  # noqa: E402  (the installed one: PYTHONPATH)

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, flush=True)


def raises(exc, fn, *words):
    """fn() raises exc whose message holds every word."""
    try:
        fn()
    except exc as e:
        msg = str(e)
        return all(w in msg for w in words) or print("  message: " + msg)
    except Exception as e:  # noqa: BLE001
        print("  raised %s: %s" % (type(e).__name__, e))
        return False
    return False


def tool_env():
    """kiln and the C programs: no preloaded sanitizer runtime (in a
    sanitizer build they link their own, and two refuse to start)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def run(cmd, **kw):
    kw.setdefault("env", tool_env())
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print("FAIL: %s: %s" % (" ".join(cmd[:3]), (r.stdout + r.stderr)[-800:]))
        raise SystemExit(1)
    return r


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ---- the installation ----------------------------------------------------

check(os.path.dirname(kiln.__file__).startswith(cfg["platlib"]),
      "kiln imported from %s, not the installation" % kiln.__file__)
check(os.path.samefile(kiln.find_kiln(), KILN),
      "find_kiln() is %s, not the relocated %s" % (kiln.find_kiln(), KILN))
check(kiln.__version__ == run([KILN, "--version"]).stdout.split()[1],
      "kiln.__version__ %s" % kiln.__version__)
# From here kiln.compile, in this process and the ones it starts, runs kiln
# through a wrapper that drops LD_PRELOAD (see tool_env).
nopreload = os.path.join(OUT, "kiln-nopreload")
with open(nopreload, "w") as f:
    f.write('#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' % shlex.quote(KILN))
os.chmod(nopreload, 0o755)
os.environ["KILN"] = nopreload


def compile_both(onnx, name, batch, extra=()):
    """NAME.so (kiln compile --shared) and the C reference linking NAME.o."""
    so_dir, o_dir = os.path.join(OUT, name), os.path.join(OUT, name + "-static")
    run([KILN, "compile", onnx, "--batch", batch, "--name", name, "--shared", "-o", so_dir]
        + list(extra))
    run([KILN, "compile", onnx, "--batch", batch, "--name", name, "-o", o_dir] + list(extra))
    cc = shlex.split(os.environ.get("CC", "cc"))
    ref = os.path.join(OUT, "ref_" + name)
    run(cc + ["-std=c11", "-O2"] + shlex.split(os.environ.get("SANFLAGS", "")) +
        ["-I", o_dir, "-I", cfg["include"], "-include", name + ".h",
         "-DMODEL=%s_model" % name, os.path.join(SRC, "tests", "python", "ref.c"),
         os.path.join(o_dir, name + ".o"), cfg["libkiln"], "-lm", "-o", ref])
    return os.path.join(so_dir, name + ".so"), ref


def c_outputs(ref, model, inputs, nmax, only=False):
    """Every output of every n (or of n = nmax only) from the C program."""
    files = []
    for i, x in enumerate(inputs):
        path = os.path.join(OUT, "%s_in%d.bin" % (model.name, i))
        np.ascontiguousarray(x).tofile(path)
        files.append(path)
    dest = os.path.join(OUT, model.name + "_c.bin")
    run([ref, str(-nmax if only else nmax), dest] + files)
    return open(dest, "rb").read()


def py_outputs(model, inputs, ns, by_name=False):
    blob = []
    for n in ns:
        xs = [x[:n] for x in inputs]
        if by_name:
            ys = model(**{t.name: x for t, x in zip(model.inputs, xs)})
        else:
            ys = model(*xs)
        for y in ys if isinstance(ys, tuple) else (ys,):
            blob.append(y.tobytes())
    return b"".join(blob)


rng = np.random.default_rng(5)
NMAX = 70

# ---- the jet tagger: introspection and n = 0..70 against C -----------------

jt_so, jt_ref = compile_both(os.path.join(SRC, "examples", "jet_tagger", "model.onnx"), "jt",
                             "1,4,16")
jt = kiln.load(jt_so)
TI = kiln.TensorInfo
check(jt.inputs == (TI(("jets", "float32", (None, 16), 0, "float32")),) and
      jt.outputs == (TI(("probs", "float32", (None, 5), 0, "float32")),),
      "jt interface: %s -> %s" % (jt.inputs, jt.outputs))
check(jt.inputs[0].shape == (None, 16) and jt.inputs[0].batch_axis == 0, "TensorInfo fields")
check(jt.name == "jt" and jt.batch_sizes == (1, 4, 16) and jt.batch_independent and
      jt.batch_mixing is None and jt.context_bytes > jt.arena_bytes > 0,
      "jt attributes: %s %s %s" % (jt.name, jt.batch_sizes, jt.context_bytes))
check(jt.path == os.path.abspath(jt_so) and len(jt.sha256) == 64, "path and sha256")
check(jt.chunks(7) == (4, 4) or sum(jt.chunks(7)) >= 7, "chunks(7): %s" % (jt.chunks(7),))
jets = rng.standard_normal((NMAX, 16), dtype=np.float32)
c_blob = c_outputs(jt_ref, jt, [jets], NMAX)
check(py_outputs(jt, [jets], range(NMAX + 1)) == c_blob,
      "jet tagger n = 0..70 by position differs from the C program")
check(py_outputs(jt, [jets], range(NMAX + 1), by_name=True) == c_blob,
      "jet tagger n = 0..70 by name differs from the C program")
for n in (0, 1, 7, 16):
    y = jt(jets[:n])
    check(type(y) is np.ndarray and y.shape == (n, 5) and y.dtype == np.float32,
          "n = %d: %s %s" % (n, type(y), getattr(y, "shape", None)))
check(np.allclose(jt(jets).sum(axis=1), 1, atol=1e-5), "probabilities add up to 1")

# ---- errors name the input, the expected and the given -------------------

x7 = jets[:7]
check(raises(TypeError, lambda: jt(x7.astype(np.float64)), "'jets'", "float32", "'d'"),
      "float64 input")
check(raises(TypeError, lambda: jt(x7.astype(np.int32)), "'jets'", "float32"), "int32 input")
check(raises(ValueError, lambda: jt(np.zeros((7, 15), np.float32)), "'jets'", "16)", "(7, 15)"),
      "(7, 15) input")
check(raises(ValueError, lambda: jt(np.zeros((7, 16, 1), np.float32)), "'jets'", "(7, 16, 1)"),
      "rank-3 input")
check(raises(ValueError, lambda: jt(np.zeros((16, 7), np.float32).T), "'jets'",
             "not C-contiguous"), "a transposed (non-contiguous) input")
check(raises(ValueError, lambda: jt(jets[::2]), "'jets'", "not C-contiguous"),
      "a strided input")
check(same_bits(jt(np.ascontiguousarray(jets[::2])), jt(jets[::2].copy())),
      "a contiguous copy of a strided input")
check(raises(TypeError, lambda: jt(x7.tolist()), "'jets'", "list"), "a list input")
check(raises(TypeError, lambda: jt(), "missing input 'jets'"), "no input")
check(raises(TypeError, lambda: jt(x7, x7), "1 input"), "two inputs")
check(raises(TypeError, lambda: jt(jet=x7), "no input 'jet'"), "a misspelled name")
check(raises(TypeError, lambda: jt(x7, jets=x7), "'jets' given twice"), "an input twice")
check(raises(OSError, lambda: kiln.load(os.path.join(OUT, "none.so")), "none.so"),
      "a missing file")
libkiln_so = os.path.join(os.path.dirname(cfg["libkiln"]), "libkiln.so.0")
check(raises(ValueError, lambda: kiln.load(libkiln_so), "kiln_shared_model", "entry="),
      "a shared library that is not a model")
check(raises(ValueError, lambda: kiln.load(libkiln_so, entry="jt"), "exports no jt_model"),
      "a shared library without NAME_model")
check(same_bits(kiln.load(jt_so, entry="jt")(x7), jt(x7)), "load(entry='jt')")

# ---- out= ---------------------------------------------------------------

want = jt(x7)
o = np.full((7, 5), np.nan, np.float32)
check(jt(x7, out=o) is o and same_bits(o, want), "out=array")
o = np.full((7, 5), np.nan, np.float32)
check(jt(x7, out=[o]) is o and same_bits(o, want), "out=[array]")
o = np.full((7, 5), np.nan, np.float32)
check(jt(x7, out={"probs": o}) is o and same_bits(o, want), "out={name: array}")
big = np.full((8, 5), np.nan, np.float32)
jt(x7, out=big[:7])
check(same_bits(big[:7], want) and np.isnan(big[7]).all(), "out= a view of 7 rows of 8")
check(raises(TypeError, lambda: jt(x7, out=np.zeros((7, 5), np.float64)), "out 'probs'",
             "float32"), "out= float64")
check(raises(ValueError, lambda: jt(x7, out=np.zeros((6, 5), np.float32)), "out 'probs'",
             "(7, 5)", "(6, 5)"), "out= 6 rows")
check(raises(ValueError, lambda: jt(x7, out=np.zeros((5, 7), np.float32).T), "out 'probs'",
             "not C-contiguous"), "out= transposed")
ro = np.zeros((7, 5), np.float32)
ro.flags.writeable = False
check(raises(ValueError, lambda: jt(x7, out=ro), "out 'probs'", "read-only"), "out= read-only")
buf = np.zeros(7 * 16, np.float32)
check(raises(ValueError, lambda: jt(buf.reshape(7, 16), out=buf[:35].reshape(7, 5)),
             "overlaps input 'jets'"), "out= overlapping the input")
check(raises(TypeError, lambda: jt(x7, out={"p": o}), "no output 'p'"), "out= a wrong name")

# ---- a ParticleNet-style model: two inputs, n = 0..70 against C ----------

pnet_onnx = os.path.join(OUT, "pnet.onnx")
run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import edgeconv_model; "
     "import onnx; onnx.save(edgeconv_model.export()[0], sys.argv[2])",
     os.path.join(SRC, "tests", "realmodels"), pnet_onnx])
pn_so, pn_ref = compile_both(pnet_onnx, "pnet", "1,4,16")
pn = kiln.load(pn_so)
check([(t.name, t.shape) for t in pn.inputs] == [("points", (None, 2, 20)),
                                                  ("features", (None, 4, 20))] and
      [(t.name, t.shape) for t in pn.outputs] == [("y", (None, 3))],
      "pnet interface: %s -> %s" % (pn.inputs, pn.outputs))
pts = rng.standard_normal((NMAX, 2, 20), dtype=np.float32)
feats = rng.standard_normal((NMAX, 4, 20), dtype=np.float32)
c_blob = c_outputs(pn_ref, pn, [pts, feats], NMAX)
check(py_outputs(pn, [pts, feats], range(NMAX + 1)) == c_blob,
      "ParticleNet-style n = 0..70 by position differs from the C program")
check(py_outputs(pn, [pts, feats], range(NMAX + 1), by_name=True) == c_blob,
      "ParticleNet-style n = 0..70 by name differs from the C program")
check(same_bits(pn(features=feats[:9], points=pts[:9]), pn(pts[:9], features=feats[:9])),
      "keywords in any order, and position + keyword")
check(raises(ValueError, lambda: pn(pts[:9], feats[:8]), "'features'", "(9, 4, 20)", "(8, 4, 20)"),
      "inputs of different n")

# ---- threads: one context per thread, freed when the thread ends ----------

ns = [int(n) for n in rng.integers(0, NMAX + 1, 40)]
single = {n: (jt(jets[:n]), pn(pts[:n], feats[:n])) for n in set(ns)}
base = kiln._kiln.live_contexts()
barrier = threading.Barrier(8)
errors = []
counts = []


def worker(k):
    try:
        order = ns[k:] + ns[:k]
        for rep in range(3):
            for n in order:
                a, b = jt(jets[:n]), pn(pts[:n], feats[:n])
                if not (same_bits(a, single[n][0]) and same_bits(b, single[n][1])):
                    errors.append((k, n))
            if rep == 0:
                barrier.wait()
                counts.append(kiln._kiln.live_contexts())
                barrier.wait()
    except Exception as e:  # noqa: BLE001
        errors.append((k, repr(e)))


threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(not errors, "8 threads: %d results differ from one thread's: %s" % (len(errors), errors[:4]))
check(counts and min(counts) == base + 16, "contexts while 8 threads run 2 models: %s, want %d"
      % (counts, base + 16))
deadline = time.time() + 5
while kiln._kiln.live_contexts() != base and time.time() < deadline:
    time.sleep(0.02)
check(kiln._kiln.live_contexts() == base,
      "contexts after the threads ended: %d, want %d" % (kiln._kiln.live_contexts(), base))
extra = kiln.load(jt_so)
extra(jets[:3])
check(kiln._kiln.live_contexts() == base + 1, "a new model's context")
del extra
check(kiln._kiln.live_contexts() == base, "a freed model's contexts")

# ---- pickling by path and hash -------------------------------------------

data = pickle.dumps(jt)
check(len(data) < 1000, "a pickled model takes %d bytes (path and hash only)" % len(data))
back = pickle.loads(data)
check(back.path == jt.path and back.sha256 == jt.sha256 and same_bits(back(x7), jt(x7)),
      "unpickled model")
check(pickle.loads(data) is back, "unpickling again in one process reuses the open model")
np.save(os.path.join(OUT, "x7.npy"), x7)
p = subprocess.run([sys.executable, "-c", "import pickle, sys, numpy as np; "
                    "m = pickle.load(sys.stdin.buffer); "
                    "sys.stdout.buffer.write(m(np.load(sys.argv[1])).tobytes())",
                    os.path.join(OUT, "x7.npy")], input=data, capture_output=True)
check(p.returncode == 0 and p.stdout == want.tobytes(),
      "unpickled in another process: %s" % p.stderr.decode()[-300:])
copy = os.path.join(OUT, "copy", "jt.so")
os.makedirs(os.path.dirname(copy))
shutil.copy(jt_so, copy)
moved = pickle.dumps(kiln.load(copy))
shutil.copy(pn_so, copy)
check(raises(kiln.Error, lambda: pickle.loads(moved), copy, "changed since the model was pickled"),
      "unpickling a changed shared object")
os.unlink(copy)
check(raises(kiln.Error, lambda: pickle.loads(moved), copy, "shared filesystem"),
      "unpickling a missing shared object")

# ---- without numpy: memoryviews ------------------------------------------

x7.tofile(os.path.join(OUT, "x7.bin"))
p = subprocess.run(
    [sys.executable, "-c",
     "import sys; sys.modules['numpy'] = None; import kiln; m = kiln.load(sys.argv[1]); "
     "x = memoryview(bytearray(open(sys.argv[2], 'rb').read())).cast('f', (7, 16)); "
     "y = m(x); assert isinstance(y, memoryview) and y.format == 'f' and y.shape == (7, 5); "
     "sys.stdout.buffer.write(y.tobytes())", jt_so, os.path.join(OUT, "x7.bin")],
    capture_output=True)
check(p.returncode == 0 and p.stdout == want.tobytes(),
      "without numpy: %s" % p.stderr.decode()[-300:])

# ---- kiln.compile: the cache ----------------------------------------------

log = os.path.join(OUT, "kiln-calls.log")
wrapper = os.path.join(OUT, "kiln-wrapper")
with open(wrapper, "w") as f:
    f.write('#!/bin/sh\nunset LD_PRELOAD\necho "$1" >> %s\nexec %s "$@"\n'
            % (shlex.quote(log), shlex.quote(KILN)))
os.chmod(wrapper, 0o755)


def compiles():
    return open(log).read().split().count("compile") if os.path.exists(log) else 0


cache = os.path.join(OUT, "cache-a")
jt_onnx = os.path.join(SRC, "examples", "jet_tagger", "model.onnx")
m1 = kiln.compile(jt_onnx, batch=[1, 4, 16], cache_dir=cache, kiln=wrapper)
check(compiles() == 1 and same_bits(m1(jets[:23]), jt(jets[:23])),
      "kiln.compile miss: %d compiles" % compiles())
st1 = os.stat(m1.path)
m2 = kiln.compile(jt_onnx, batch=[1, 4, 16], cache_dir=cache, kiln=wrapper)
st2 = os.stat(m2.path)
check(compiles() == 1 and m2.path == m1.path and st1.st_ino == st2.st_ino and
      st1.st_mtime_ns == st2.st_mtime_ns, "kiln.compile hit: %d compiles" % compiles())
m3 = kiln.compile(jt_onnx, batch=[1, 8], cache_dir=cache, kiln=wrapper)
check(compiles() == 2 and m3.path != m1.path and m3.batch_sizes == (1, 8),
      "other options, another entry")
entries = sorted(os.listdir(cache))
check(len(entries) == 2 and not any(e.startswith(".") for e in entries),
      "cache entries: %s" % entries)
check(raises(kiln.Error, lambda: kiln.compile(os.path.join(SRC, "tests", "fixtures",
                                                           "unsupported.onnx"),
                                              batch=[1], cache_dir=cache, kiln=wrapper),
             "kiln.compile:", "unsupported.onnx"), "a model kiln refuses")
check(not any(e.startswith(".") for e in os.listdir(cache)), "no temporary folder left")
# Parallel workers on an empty cache: each gets the one entry.
cache_p = os.path.join(OUT, "cache-p")
procs = [subprocess.Popen([sys.executable, "-c",
                           "import kiln, sys; m = kiln.compile(sys.argv[1], batch=[1, 4, 16], "
                           "cache_dir=sys.argv[2]); print(m.path)", jt_onnx, cache_p],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
         for _ in range(3)]
res = [p.communicate() + (p.returncode,) for p in procs]
check(all(r[2] == 0 for r in res) and len({r[0] for r in res}) == 1 and
      sorted(os.listdir(cache_p)) == [os.path.basename(os.path.dirname(res[0][0].strip()))],
      "3 processes compiling at once: %s %s" % ([r[0].strip() for r in res],
                                                 [r[1][-200:] for r in res]))
# External data is part of the key; a model with no batch axis runs at its shape.
ext = os.path.join(OUT, "ext")
shutil.copytree(os.path.join(SRC, "tests", "fixtures", "external"), ext)
ext_onnx = os.path.join(ext, "model.onnx")
check(kiln._external_files(open(ext_onnx, "rb").read()) == ["sub/more.bin", "weights.bin"],
      "external files: %s" % kiln._external_files(open(ext_onnx, "rb").read()))
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def ext_reference(x):
    g = onnx.load(ext_onnx).graph
    w = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    return x + w["w0"], w["w1"], w["w2"]


e1 = kiln.compile(ext_onnx, batch=[1], cache_dir=cache)
check([t.batch_axis for t in e1.inputs + e1.outputs] == [None] * 4, "no batch axis")
xe = np.arange(4, dtype=np.float32)
ys = e1(xe)
check(isinstance(ys, tuple) and all(same_bits(a, b) for a, b in zip(ys, ext_reference(xe))),
      "external-data model against numpy: %s" % (ys,))
with open(os.path.join(ext, "sub", "more.bin"), "r+b") as f:
    f.write(np.float32([5, 6]).tobytes())
e2 = kiln.compile(ext_onnx, batch=[1], cache_dir=cache)
check(e2.path != e1.path and same_bits(e2(xe)[2], np.float32([5, 6])),
      "a changed external data file is another entry: %s" % (e2(xe),))

# ---- run_lengths: buckets against ONNX Runtime at each jet's length ------

def lengths_case(case):
    """Case of tests/realmodels/buckets_models.py: compiled with buckets by
    kiln.compile, every jet of lengths 1..LMAX through model.run_lengths,
    against ONNX Runtime run on each jet alone at its own length."""
    t0 = time.time()
    d = os.path.join(OUT, "lengths_" + case)
    os.makedirs(d)
    run([sys.executable, os.path.join(SRC, "tests", "realmodels", "buckets_models.py"), case, d])
    with open(os.path.join(d, "reference.pkl"), "rb") as f:
        ref = pickle.load(f)
    order, feed, refs, sym = ref["order"], ref["feed"], ref["refs"], ref["symbol"]
    rtol, atol = ref["tol"]
    buckets = [int(b) for b in ref["buckets"].split(",")]
    m = kiln.compile(ref["path"], batch=[1, 8], dim={sym: buckets}, options=ref["extra"],
                     cache_dir=os.path.join(OUT, "cache"), name="lengths_" + case)
    check(m.buckets == tuple(buckets) and m.bucket_symbol == sym,
          "%s: buckets %s %s" % (case, m.buckets, m.bucket_symbol))
    check([t.length_axis for t in m.inputs] == [ref["axes"][t.name] for t in m.inputs] and
          [t.length_axis for t in m.outputs] == ref["out_axes"],
          "%s: length_axis %s" % (case, [t.length_axis for t in m.inputs + m.outputs]))
    lmax = len(order)
    ys = m.run_lengths(order, **feed)
    ys = ys if isinstance(ys, tuple) else (ys,)
    worst = 0.0
    for o, (y, axis) in enumerate(zip(ys, ref["out_axes"])):
        for i, length in enumerate(order):
            want, got = refs[i][o][0], y[i]
            if axis is not None:
                a = axis - 1
                check(not np.any(np.take(got, range(length, lmax), axis=a)),
                      "%s: output %d of the jet of length %d is not zero past it" % (case, o, length))
                got = np.take(got, range(length), axis=a)
                want = np.take(want, range(length), axis=a)
            err = float(np.abs(got - want).max()) if want.size else 0.0
            worst = max(worst, err)
            check(np.allclose(got, want, rtol=rtol, atol=atol),
                  "%s: output %d of the jet of length %d differs from ONNX Runtime by %.3g"
                  % (case, o, length, err))
    # NaN past every length, laid out at LMAX + 3: never read, the same bits;
    # the lengths as int32; out= buffers.
    wide = {}
    for k, v in feed.items():
        a = ref["axes"][k]
        if a is None:
            wide[k] = v
            continue
        pad = [(0, 0)] * v.ndim
        pad[a] = (0, 3)
        w = np.pad(v, pad)
        idx = np.arange(lmax + 3).reshape([-1 if j == a else 1 for j in range(v.ndim)])
        w[np.broadcast_to(idx >= order.reshape([-1] + [1] * (v.ndim - 1)), w.shape)] = np.nan
        wide[k] = w
    outs = tuple(np.full(y.shape if a is None else y.shape[:a] + (lmax + 3,) + y.shape[a + 1:],
                         7.0, np.float32) for y, a in zip(ys, ref["out_axes"]))
    got = m.run_lengths(order.astype(np.int32), out=outs if len(outs) > 1 else outs[0], **wide)
    got = got if isinstance(got, tuple) else (got,)
    for o, (y, w, axis) in enumerate(zip(ys, got, ref["out_axes"])):
        check(w is outs[o], "%s: out= returned another array" % case)
        if axis is not None:
            check(not np.any(np.take(w, range(lmax, lmax + 3), axis=axis)),
                  "%s: output %d is not zero at lmax + 3" % (case, o))
            w = np.take(w, range(lmax), axis=axis)
        check(same_bits(w, y), "%s: output %d with NaN padding at lmax + 3 differs" % (case, o))
    top = buckets[-1]
    bad = order.copy()
    bad[3] = top + 1
    first = {k: (np.pad(v, [(0, 0) if j != ref["axes"][k] else (0, 1) for j in range(v.ndim)])
                 if ref["axes"][k] is not None else v) for k, v in feed.items()}
    check(raises(kiln.LengthError, lambda: m.run_lengths(bad, **first), "lengths[3] = %d" % (top + 1),
                 "past the largest bucket, %s = %d" % (sym, top)),
          "%s: a length past the largest bucket" % case)
    bad[3] = -2
    check(raises(ValueError, lambda: m.run_lengths(bad, **feed), "lengths[3] = -2 is negative"),
          "%s: a negative length" % case)
    short = {k: np.ascontiguousarray(np.take(v, range(lmax - 1), axis=ref["axes"][k]))
             if ref["axes"][k] is not None else v for k, v in feed.items()}
    check(raises(kiln.LengthError, lambda: m.run_lengths(order, **short),
                 "is past the inputs' %d positions along %s" % (lmax - 1, sym)),
          "%s: a length past the inputs' lmax" % case)
    print("%s: %d jets of lengths 1..%d through run_lengths in buckets %s: within rtol %g, "
          "atol %g of ONNX Runtime at each length (largest difference %.3g; %.1f s)"
          % (case, lmax, lmax, ref["buckets"], rtol, atol, worst, time.time() - t0))


if subprocess.run(["node", "-e", "require('onnxruntime-node')"], env=tool_env(),
                  capture_output=True).returncode == 0:
    for case in ("deepsets_ncp_op13", "pn_ak4_op13"):
        lengths_case(case)
else:
    print("SKIP: run_lengths against ONNX Runtime (node + onnxruntime-node not found: "
          "NODE_PATH=$(scripts/install-ort.sh))")
check(raises(kiln.Error, lambda: jt.run_lengths([1], np.zeros((1, 16), np.float32)),
             "compiled without buckets"), "run_lengths on a model without buckets")

# ---- examples/dask_jets on 2 worker processes -------------------------------

t0 = time.time()
dask_out = os.path.join(OUT, "dask")
os.makedirs(dask_out)
r = subprocess.run([sys.executable, os.path.join(SRC, "examples", "dask_jets", "score.py"),
                    "--batch", "1,4,16", "--chunks", "4", "--jets-per-chunk", "3000",
                    "--data", os.path.join(dask_out, "data"), "--cache-dir",
                    os.path.join(dask_out, "cache"), "--out", os.path.join(dask_out, "scores.npy"),
                    "--check"], capture_output=True, text=True, cwd=dask_out)
print(r.stdout.strip())
check(r.returncode == 0 and "on 2 workers" in r.stdout and "the same, bit for bit" in r.stdout,
      "dask example: %s" % (r.stdout + r.stderr)[-1500:])
if r.returncode == 0:
    scores = np.load(os.path.join(dask_out, "scores.npy"))
    chunks = sorted(f for f in os.listdir(os.path.join(dask_out, "data")))
    c_scores = []
    for f in chunks:
        x = np.load(os.path.join(dask_out, "data", f))
        c_scores.append(np.frombuffer(c_outputs(jt_ref, jt, [x], len(x), only=True),
                                      np.float32).reshape(-1, 5))
    check(same_bits(scores, np.concatenate(c_scores)),
          "dask scores differ from the C program's (%d jets)" % len(scores))
print("dask example: %.1f s" % (time.time() - t0))

print("python: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
