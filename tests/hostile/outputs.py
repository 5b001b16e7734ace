#!/usr/bin/python3
"""What kiln writes, and only that (issue 27: points 1, 3, 4, 5, 6, 8, 9).

usage: outputs.py KILN SOURCE_ROOT LIBKILN_A BUILD_ROOT OUTDIR

  links      every output (NAME.h, NAME.c, NAME_weights.o, NAME.o, the
             depfile) planted as a link, to a file and dangling: the target
             is untouched or never created, the outputs are right; a planted
             .NAME.lock link is refused; -o naming a link to a folder is
             followed
  race       >= 16 trials of two compiles of different models into one
             NAME and folder: both exit 0 and NAME.h, NAME.c,
             NAME_weights.o and NAME.o are all one model's
  kill       SIGKILL, SIGTERM and SIGINT mid-compile: the previous outputs
             are intact and no temporary is left
  enospc     a full tmpfs (root only, else skipped): the previous outputs
             are intact, no temporary, one error line
  shrink     an external-data file truncated while kiln has it mapped: one
             error line naming it, no signal, nothing left behind
  guards     --name KILN_MODEL, KILN_RUN, a model file KILN_RUN.onnx, every
             name whose macros could be kiln's own, a user's NET_H
  weights    --max-weights: overlapping external-data windows refused by
             default, naming the limit and the flag; 3000 tensors naming
             one region fit in 256 MiB of compiler memory
  depfile    make escaping; a CMake project (Ninja and Makefiles) with
             kiln_add_model rebuilds when the external data changes and the
             program computes with the new weights
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
from onnx import TensorProto, helper, numpy_helper

KILN, SRC, LIBKILN, BUILD, OUT = sys.argv[1:6]
CC = os.environ.get("CC", "cc").split()
SAN = os.environ.get("SANFLAGS", "").split()
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, **kw)


def save_graph(path, nodes, n_in, n_out, inits, y="y"):
    """Saves the opset-13 model of nodes: input x [N, n_in], output y [N, n_out]."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n_in])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", n_out])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def external_tensor(name, dims, location, offset):
    """A float tensor whose bytes are in the file `location`."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, v in (("location", location), ("offset", str(offset)),
                   ("length", str(4 * int(np.prod(dims))))):
        e = t.external_data.add()
        e.key, e.value = key, v
    return t


def add_model(path, w, external=None, offset=0):
    """y = x + W, x [N, len(W)]; W inline or in external data."""
    n = len(w)
    t = (external_tensor("W", [n], external, offset) if external
         else numpy_helper.from_array(w.astype(np.float32), "W"))
    save_graph(path, [helper.make_node("Add", ["x", "W"], ["y"])], n, n, [t])


def outputs_of(d, name="net"):
    """{file: bytes} of the compile outputs present in d."""
    got = {}
    for f in (name + ".h", name + ".c", name + "_weights.o", name + ".o"):
        p = os.path.join(d, f)
        if os.path.isfile(p):
            with open(p, "rb") as fh:
                got[f] = fh.read()
    return got


def leftovers(d):
    """Temporaries kiln left in d (its lock file is not one)."""
    return [f for f in os.listdir(d) if ".kiln-" in f]


def driver(d, name="net", extra=()):
    """Builds d/driver from d/NAME.h and NAME.o; returns the outputs of 2 rows."""
    exe = os.path.join(d, "driver")
    r = run(CC + ["-std=c11", "-Wall", "-Wextra", "-Werror"] + SAN + list(extra) +
            ['-DHEADER="%s.h"' % name, "-DMODEL=%s_model" % name,
             "-I" + os.path.join(SRC, "include"), "-I" + d,
             os.path.join(SRC, "tests/hostile/driver.c"), os.path.join(d, name + ".o"), LIBKILN,
             "-lm", "-o", exe])
    if r.returncode:
        return None, r.stderr.decode(errors="replace")[:800]
    return values_of(run([exe, "2"])), ""


def values_of(r):
    vals = [np.array([float(v) for v in line.split()[1:]], np.float32)
            for line in r.stdout.decode().splitlines() if line.startswith("values")]
    return vals if r.returncode == 0 else None


def expect_add(w, rows=2):
    """What driver.c gets from y = x + W for `rows` rows."""
    n = len(w)
    x = (np.arange(rows * n, dtype=np.float32) * np.float32(0.25) - np.float32(1))
    return x + np.tile(w.astype(np.float32), rows)


def one_error_line(r, *words):
    err = r.stderr.decode(errors="replace")
    lines = [l for l in err.splitlines() if l.startswith("kiln: error:")]
    return (r.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words)
            and "bug in kiln" not in err), err.strip()[:600]


shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
rng = np.random.default_rng(27)
W_A = rng.standard_normal(16).astype(np.float32)
W_B = rng.standard_normal(16).astype(np.float32)
MA, MB = os.path.join(OUT, "a.onnx"), os.path.join(OUT, "b.onnx")
add_model(MA, W_A)
add_model(MB, W_B)


def compile_(model, d, *more, name="net"):
    return run([KILN, "compile", model, "--batch", "1,4", "--name", name, "-o", d] + list(more))


# ---- links ---------------------------------------------------------------
def links():
    files = ["net.h", "net.c", "net_weights.o", "net.o", "net.d", "net_code.o"]
    for dangling in (False, True):
        d = os.path.join(OUT, "links-%s" % ("dangling" if dangling else "file"))
        victims = os.path.join(OUT, "victims-%d" % dangling)
        os.makedirs(d)
        os.makedirs(victims)
        for f in files:
            target = os.path.join(victims, f)
            if not dangling:
                with open(target, "w") as fh:
                    fh.write("victim " + f)
            os.symlink(target, os.path.join(d, f))
        r = compile_(MA, d, "--depfile", os.path.join(d, "net.d"))
        check(r.returncode == 0, "links (%s): compile: %s" % (dangling, r.stderr.decode()[:400]))
        for f in files:
            target = os.path.join(victims, f)
            if dangling:
                check(not os.path.lexists(target), "links: the dangling %s created its target" % f)
            else:
                with open(target) as fh:
                    check(fh.read() == "victim " + f, "links: %s's target was written" % f)
            if f != "net_code.o":
                p = os.path.join(d, f)
                check(os.path.isfile(p) and not os.path.islink(p),
                      "links (%s): %s is not a file of its own" % (dangling, f))
        vals, err = driver(d)
        check(vals is not None and np.array_equal(vals[0], expect_add(W_A)),
              "links (%s): the program computes %s %s" % (dangling, vals, err))
        check(not leftovers(d), "links: temporaries left: %s" % leftovers(d))
    # The lock file planted as a link: refused, nothing written through it.
    d = os.path.join(OUT, "links-lock")
    os.makedirs(d)
    victim = os.path.join(OUT, "lock-victim")
    os.symlink(victim, os.path.join(d, ".net.lock"))
    r = compile_(MA, d)
    ok, err = one_error_line(r, ".net.lock", "symbolic link")
    check(ok, "links: a .net.lock link: %s" % err)
    check(not os.path.lexists(victim) and not outputs_of(d) and not leftovers(d),
          "links: a refused compile left files: %s" % os.listdir(d))
    # A folder planted at net.o: refused before anything is renamed.
    d = os.path.join(OUT, "links-folder")
    r = compile_(MB, d)
    before = outputs_of(d)
    os.unlink(os.path.join(d, "net.o"))
    os.makedirs(os.path.join(d, "net.o"))
    r = compile_(MA, d)
    ok, err = one_error_line(r, "net.o", "folder")
    check(ok, "links: a folder at net.o: %s" % err)
    del before["net.o"]
    check(outputs_of(d) == before and not leftovers(d),
          "links: a refused compile changed the outputs: %s" % os.listdir(d))
    # -o naming a link to a folder: followed (the user named it).
    real = os.path.join(OUT, "links-real")
    os.makedirs(real)
    os.symlink(real, os.path.join(OUT, "links-dirlink"))
    r = compile_(MA, os.path.join(OUT, "links-dirlink"))
    check(r.returncode == 0 and os.path.isfile(os.path.join(real, "net.o")),
          "links: -o a link to a folder: %s" % r.stderr.decode()[:300])


# ---- race ----------------------------------------------------------------
def race():
    refs = {}
    for tag, model in (("a", MA), ("b", MB)):
        d = os.path.join(OUT, "race-ref-" + tag)
        r = compile_(model, d, "-O0")
        check(r.returncode == 0, "race: reference compile: %s" % r.stderr.decode()[:300])
        refs[tag] = outputs_of(d)
    # NAME.o from the same inputs is the same bytes (the C compiler sees
    # the staging folder's net.c, whose name does not reach the object).
    d = os.path.join(OUT, "race-ref-a2")
    compile_(MA, d, "-O0")
    same_o = outputs_of(d).get("net.o") == refs["a"].get("net.o")
    d = os.path.join(OUT, "race")
    trials = 16
    mixed = []
    for t in range(trials):
        first, second = (MA, MB) if t % 2 == 0 else (MB, MA)
        if t % 4 == 1:
            # both compiles find no -o folder: one creates it, the other must
            # take the folder the first made, not fail
            shutil.rmtree(d, ignore_errors=True)
        procs = [subprocess.Popen([KILN, "compile", m, "--batch", "1,4", "--name", "net", "-o", d,
                                   "-O0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for m in (first, second)]
        for p in procs:
            _, err = p.communicate()
            check(p.returncode == 0, "race %d: a compile exits %d: %s" % (t, p.returncode,
                                                                         err.decode()[:300]))
        got = outputs_of(d)
        keys = ("net.h", "net.c", "net_weights.o") + (("net.o",) if same_o else ())
        which = [tag for tag in refs if all(got.get(k) == refs[tag].get(k) for k in keys)]
        if len(which) != 1:
            mixed.append(t)
        elif not same_o and t % 4 == 0:
            vals, err = driver(d)
            w = W_A if which[0] == "a" else W_B
            check(vals is not None and np.array_equal(vals[0], expect_add(w)),
                  "race %d: net.o does not compute model %s: %s" % (t, which[0], err))
        check(not leftovers(d), "race %d: temporaries left: %s" % (t, leftovers(d)))
    check(not mixed, "race: trials %s ended with a mixed set" % mixed)
    print("race: %d trials of two compiles, every set one model's%s" %
          (trials, "" if same_o else " (net.o checked by running it)"))


# ---- kill ----------------------------------------------------------------
def big_model(path, ext, mib):
    """A model slow enough to kill: y = x @ W, W [k, k] in external data."""
    k = int((mib << 20) / 4) ** 0.5
    k = int(k)
    w = np.random.default_rng(5).standard_normal((k, k)).astype(np.float32)
    w.tofile(os.path.join(os.path.dirname(path), ext))
    t = external_tensor("W", [k, k], ext, 0)
    save_graph(path, [helper.make_node("MatMul", ["x", "W"], ["y"])], k, k, [t])


def kill():
    d = os.path.join(OUT, "kill")
    r = compile_(MA, d)
    check(r.returncode == 0, "kill: first compile: %s" % r.stderr.decode()[:300])
    before = outputs_of(d)
    big = os.path.join(OUT, "big.onnx")
    big_model(big, "big.bin", 16)
    start = time.monotonic()
    r = compile_(big, os.path.join(OUT, "kill-time"))
    took = time.monotonic() - start
    check(r.returncode == 0, "kill: timing compile: %s" % r.stderr.decode()[:300])
    # What a whole compile of big writes (kiln's outputs do not depend on
    # the folder): a compile killed after its renames (in a sanitizer
    # build, LeakSanitizer's exit scan takes a while) has left this set.
    new = outputs_of(os.path.join(OUT, "kill-time"))
    killed = 0
    for sig, frac in ((signal.SIGKILL, 0.1), (signal.SIGKILL, 0.4), (signal.SIGKILL, 0.75),
                      (signal.SIGTERM, 0.5), (signal.SIGINT, 0.6)):
        p = subprocess.Popen([KILN, "compile", big, "--batch", "1,4", "--name", "net", "-o", d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(took * frac)
        p.send_signal(sig)
        p.communicate()  # the cleaner holds the pipes until it is done
        if p.returncode == 0:
            before = outputs_of(d)  # it finished first: its outputs are the previous ones now
            continue
        check(p.returncode == -sig, "kill: %s: exit %d" % (sig.name, p.returncode))
        got = outputs_of(d)
        if got == new and got != before:
            before = got  # killed after it committed: all of the new set, none of the old
            check(not leftovers(d), "kill: %s left temporaries: %s" % (sig.name, leftovers(d)))
            continue
        killed += 1
        check(got == before, "kill: %s at %.2f s changed the previous outputs" %
              (sig.name, took * frac))
        check(not leftovers(d), "kill: %s left temporaries: %s" % (sig.name, leftovers(d)))
    check(killed >= 3, "kill: only %d of 5 compiles were still running when signalled" % killed)
    print("kill: %d compiles of %.2f s signalled mid-way" % (killed, took))


# ---- enospc --------------------------------------------------------------
def enospc():
    d = os.path.join(OUT, "enospc")
    os.makedirs(d)
    if os.geteuid() != 0 or run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", d]).returncode:
        print("SKIP enospc: cannot mount a tmpfs here (needs root)")
        return
    try:
        r = compile_(MA, d)
        check(r.returncode == 0, "enospc: first compile: %s" % r.stderr.decode()[:300])
        before = outputs_of(d)
        # Weights that do not fit.
        ext = os.path.join(OUT, "enospc.bin")
        w = rng.standard_normal(1 << 20).astype(np.float32)
        w.tofile(ext)
        mbig = os.path.join(OUT, "enospc.onnx")
        add_model(mbig, w, external="enospc.bin")
        r = compile_(mbig, d)
        ok, err = one_error_line(r)
        check(ok, "enospc: weights that do not fit: %s" % err)
        check(outputs_of(d) == before and not leftovers(d),
              "enospc: weights: previous outputs changed or temporaries left: %s" % os.listdir(d))
        # A full file system: the first write fails.
        filler = os.path.join(d, "filler")
        run(["dd", "if=/dev/zero", "of=" + filler, "bs=64k", "count=100"])
        r = compile_(MB, d)
        ok, err = one_error_line(r)
        check(ok, "enospc: a full file system: %s" % err)
        check(outputs_of(d) == before and not leftovers(d),
              "enospc: full: previous outputs changed or temporaries left: %s" % os.listdir(d))
        os.unlink(filler)
        print("enospc: 2 compiles on a full 3 MiB tmpfs refused, previous outputs intact")
    finally:
        run(["umount", d])


# ---- shrink --------------------------------------------------------------
def shrink():
    d = os.path.join(OUT, "shrink")
    r = compile_(MA, d)
    before = outputs_of(d)
    model = os.path.join(OUT, "shrink.onnx")
    ext = os.path.join(OUT, "shrink.bin")
    env = dict(os.environ)
    # The error long-jumps out of code holding a malloc'ed buffer (the
    # process ends right after): not a leak worth reporting here.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    raced = 0
    for attempt in range(3):
        big_model(model, "shrink.bin", 64)
        p = subprocess.Popen([KILN, "compile", model, "--batch", "1", "--name", "net", "-o", d, "-v"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        err = b""
        for line in p.stderr:
            err += line
            if b"model loaded" in line:
                p.send_signal(signal.SIGSTOP)
                os.truncate(ext, 0)
                p.send_signal(signal.SIGCONT)
                break
        out, rest = p.communicate()
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err + rest)
        if p.returncode == 0:
            continue  # it was done before the truncation (a very slow reader)
        raced += 1
        ok, msg = one_error_line(r, "shrink.bin", "changed while kiln was reading it")
        check(ok, "shrink: %s" % msg)
        check(outputs_of(d) == before and not leftovers(d),
              "shrink: previous outputs changed or temporaries left: %s" % os.listdir(d))
        break
    check(raced, "shrink: kiln finished before the file could be truncated (3 tries)")


# ---- guards --------------------------------------------------------------
KILN_HEADERS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SRC, "include/kiln/*.h")))


def builds_with_kiln_headers(d, name, user_guard=None):
    """NAME.c and a TU including every kiln header and NAME.h (both orders)
    compile with -Werror."""
    for order in (0, 1):
        tu = os.path.join(d, "tu%d.c" % order)
        incs = ["#include <kiln/%s>" % h for h in KILN_HEADERS]
        mine = ["#include \"%s.h\"" % name]
        with open(tu, "w") as f:
            if user_guard:
                f.write("#define %s\n" % user_guard)
            f.write("\n".join(incs + mine if order == 0 else mine + incs) +
                    "\nint main(void) { return %s_NUM_INPUTS - 1; }\n" % name.upper())
        r = run(CC + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                      "-I" + os.path.join(SRC, "include"), "-I" + d, tu])
        if r.returncode:
            return r.stderr.decode(errors="replace")[:600]
    r = run(CC + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                  "-I" + os.path.join(SRC, "include"), "-I" + d, os.path.join(d, name + ".c")])
    return r.stderr.decode(errors="replace")[:600] if r.returncode else ""


def guards():
    for name in ("KILN_MODEL", "KILN_RUN", "KILN_KILN"):
        d = os.path.join(OUT, "guard-" + name)
        r = compile_(MA, d, name=name)
        check(r.returncode == 0, "guards: --name %s: %s" % (name, r.stderr.decode()[:300]))
        if r.returncode == 0:
            vals, err = driver(d, name)
            check(vals is not None and np.array_equal(vals[0], expect_add(W_A)),
                  "guards: --name %s: %s" % (name, err))
    # A model file named KILN_RUN.onnx: the default name.
    d = os.path.join(OUT, "guard-file")
    os.makedirs(d)
    shutil.copy(MA, os.path.join(d, "KILN_RUN.onnx"))
    r = run([KILN, "compile", os.path.join(d, "KILN_RUN.onnx"), "--batch", "1", "-o", d])
    check(r.returncode == 0 and not builds_with_kiln_headers(d, "KILN_RUN"),
          "guards: KILN_RUN.onnx: %s" % r.stderr.decode()[:300])
    # Every name whose generated macros could be one of kiln's: NAME's
    # macros are NAME in capitals and a suffix; kiln's are in include/kiln.
    d = os.path.join(OUT, "guard-net")
    r = compile_(MA, d, "--no-cc")
    with open(os.path.join(d, "net.h")) as f:
        mine = re.findall(r"^#define (\w+)", f.read(), re.M)
    suffixes = {m[len("NET"):] for m in mine if m.startswith("NET_")}
    # and a bucketed model's (kiln compile --dim): NET_BUCKETS, NET_IN0_BUCKET_AXIS, ...
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "bk",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "P"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "P"])])
    bk = os.path.join(OUT, "bucketed.onnx")
    with open(bk, "wb") as f:
        f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    d = os.path.join(OUT, "guard-bucketed")
    r = compile_(bk, d, "--no-cc", "--dim", "P=2,4")
    check(r.returncode == 0, "guards: a bucketed model: %s" % r.stderr.decode()[:300])
    with open(os.path.join(d, "net.h")) as f:
        suffixes |= {m[len("NET"):] for m in re.findall(r"^#define (\w+)", f.read(), re.M)
                     if m.startswith("NET_")}
    theirs = set()
    for h in KILN_HEADERS:
        with open(os.path.join(SRC, "include/kiln", h)) as f:
            theirs |= set(re.findall(r"^\s*#\s*define\s+(\w+)", f.read(), re.M))
    suffixes |= {re.sub(r"\d+", "0", s) for s in suffixes}
    names = set()
    for macro in theirs:
        for s in suffixes:
            pattern = "^(\\w+)" + re.escape(s).replace("0", "\\d+") + "$"
            hit = re.match(pattern, macro)
            if hit:
                names.add(hit.group(1))
    tried = 0
    for name in sorted(names):
        for what, model, more in (("", MA, ()), ("bucketed ", bk, ("--dim", "P=2,4"))):
            d = os.path.join(OUT, "guard-any-%s%s" % (what[:1], name))
            r = compile_(model, d, "--no-cc", *more, name=name)
            if r.returncode == 2 and "--name" in r.stderr.decode():
                continue  # refused as a usage error: fine
            tried += 1
            check(r.returncode == 0, "guards: %s--name %s: %s" % (what, name, r.stderr.decode()[:300]))
            err = builds_with_kiln_headers(d, name)
            check(not err, "guards: %s--name %s does not build: %s" % (what, name, err))
    # A user's own NET_H, the guard kiln used to write.
    err = builds_with_kiln_headers(os.path.join(OUT, "guard-net"), "net", user_guard="NET_H")
    check(not err, "guards: a user's NET_H hides net.h: %s" % err)
    r = compile_(MA, os.path.join(OUT, "guard-KILN"), name="KILN")
    ok, err = one_error_line(r, "--name")
    check(ok, "guards: --name KILN: %s" % err)
    print("guards: %d kiln macros, %d colliding names tried, %d compiled" %
          (len(theirs), len(names), tried))


# ---- weights -------------------------------------------------------------
def chain_model(path, ext, count, n, step):
    """y = x + W0 + W1 + ...: Wk is n floats of ext at byte offset k * step."""
    nodes, inits = [], []
    prev = "x"
    for k in range(count):
        inits.append(external_tensor("W%d" % k, [n], ext, k * step))
        nodes.append(helper.make_node("Add", [prev, "W%d" % k], ["t%d" % k]))
        prev = "t%d" % k
    save_graph(path, nodes, n, n, inits, y=prev)


def weights():
    d = os.path.join(OUT, "weights")
    os.makedirs(d)
    ext = os.path.join(d, "w.bin")
    rng.standard_normal(1 << 20).astype(np.float32).tofile(ext)  # 4 MiB
    # 160 windows of 2 MiB, each 16 bytes on: 320 MiB of weights from 4 MiB.
    model = os.path.join(d, "amp.onnx")
    chain_model(model, "w.bin", 160, 1 << 19, 16)
    r = run([KILN, "compile", model, "--batch", "1", "--name", "net", "-o", d, "--no-cc"])
    ok, err = one_error_line(r, "--max-weights", "limit of %d" % ((256 << 20) + 4 * ((4 << 20) + os.path.getsize(model))))
    check(ok, "weights: amplification by default: %s" % err)
    r = run([KILN, "compile", model, "--batch", "1", "--name", "net", "-o", d, "--no-cc",
             "--max-weights", "100M"])
    ok, err = one_error_line(r, "--max-weights", "limit of %d" % (100 << 20))
    check(ok, "weights: --max-weights 100M: %s" % err)
    check(not outputs_of(d) and not leftovers(d), "weights: refused compiles left %s" % os.listdir(d))
    for bad in ("0", "12Q", "-1", "99999999999T"):
        r = run([KILN, "compile", MA, "--batch", "1", "--max-weights", bad])
        check(r.returncode == 2 and b"--max-weights" in r.stderr, "weights: --max-weights %s accepted" % bad)
    r = compile_(MA, os.path.join(OUT, "weights-small"), "--max-weights", "63")
    ok, err = one_error_line(r, "--max-weights", "limit of 63")
    check(ok, "weights: 64 bytes against --max-weights 63: %s" % err)
    r = compile_(MA, os.path.join(OUT, "weights-small"), "--max-weights", "1K")
    check(r.returncode == 0, "weights: --max-weights 1K: %s" % r.stderr.decode()[:300])
    # 3000 tensors naming one 1 MiB region: mapped bytes, so they do not
    # count against --max-memory while the optimizer looks at them.
    model = os.path.join(d, "many.onnx")
    chain_model(model, "w.bin", 3000, 1 << 18, 4)
    # (check --batch holds the weights to compile's limit too: raised here.)
    r = run([KILN, "check", model, "--batch", "1", "--max-memory", "256", "--max-weights", "4G"])
    check(r.returncode == 0, "weights: 3000 windows of one region under --max-memory 256: %s" %
          (r.stdout + r.stderr).decode()[-400:])


# ---- depfile -------------------------------------------------------------
def depfile():
    d = os.path.join(OUT, "dep $#x")
    os.makedirs(d)
    w = rng.standard_normal(8).astype(np.float32)
    w.tofile(os.path.join(d, "w 1.bin"))
    model = os.path.join(d, "m.onnx")
    add_model(model, w, external="w 1.bin")
    dep = os.path.join(d, "net.d")
    r = compile_(model, d, "--depfile", dep)
    check(r.returncode == 0, "depfile: compile: %s" % r.stderr.decode()[:300])
    with open(dep) as f:
        text = f.read()
    esc = lambda p: p.replace("$", "$$").replace(" ", "\\ ").replace("#", "\\#")
    want = "%s: \\\n  %s \\\n  %s\n" % (esc(os.path.join(d, "net.o")), esc(model),
                                       esc(os.path.realpath(os.path.join(d, "w 1.bin"))))
    check(text == want, "depfile: got %r, want %r" % (text, want))
    # make reads it: the target is out of date once the weights change.
    mk = os.path.join(d, "Makefile")
    with open(mk, "w") as f:
        f.write("include net.d\n")
    target = os.path.join(d, "net.o")
    r = run(["make", "-q", "-C", d, "-f", "Makefile", target])
    check(r.returncode == 0, "depfile: make finds net.o stale before any change: %s" %
          r.stdout.decode()[:200])
    time.sleep(0.05)
    os.utime(os.path.join(d, "w 1.bin"))
    r = run(["make", "-q", "-C", d, "-f", "Makefile", target])
    check(r.returncode == 1, "depfile: make does not see the changed weights (%d)" % r.returncode)
    # --no-cc: NAME.c and NAME_weights.o are the targets.
    r = compile_(model, d, "--no-cc", "--depfile", dep)
    with open(dep) as f:
        check(f.read().startswith("%s %s:" % (esc(os.path.join(d, "net.c")),
                                               esc(os.path.join(d, "net_weights.o")))),
              "depfile: --no-cc targets")
    cmake_rebuild()


def cmake_rebuild():
    if not shutil.which("cmake"):
        print("SKIP depfile cmake: no cmake")
        return
    config = os.path.join(BUILD, "cmake", "kilnConfig.cmake")
    with open(config) as f:
        text = f.read()
    libdir = re.search(r'IMPORTED_LOCATION "\$\{_kiln_prefix\}/(.*)/libkiln\.a"', text).group(1)
    incdir = re.search(r'set\(kiln_INCLUDE_DIR "\$\{_kiln_prefix\}/(.*)"\)', text).group(1)
    bindir = re.search(r'set\(KILN_EXECUTABLE "\$\{_kiln_prefix\}/(.*)/kiln"\)', text).group(1)
    prefix = os.path.join(OUT, "prefix")
    for sub, src in ((libdir + "/cmake/kiln/kilnConfig.cmake", config),
                     (libdir + "/cmake/kiln/kilnConfigVersion.cmake",
                      os.path.join(BUILD, "cmake", "kilnConfigVersion.cmake")),
                     (libdir + "/libkiln.a", LIBKILN), (incdir + "/kiln", os.path.join(SRC, "include/kiln")),
                     (bindir + "/kiln", KILN)):
        p = os.path.join(prefix, sub)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if sub.endswith(".cmake"):
            shutil.copy(src, p)
        else:
            os.symlink(os.path.abspath(src), p)
    proj = os.path.join(OUT, "cmake-proj")
    os.makedirs(proj)
    w1 = rng.standard_normal(8).astype(np.float32)
    w1.tofile(os.path.join(proj, "weights.bin"))
    add_model(os.path.join(proj, "m.onnx"), w1, external="weights.bin")
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write("""cmake_minimum_required(VERSION 3.20)
project(dep C)
find_package(kiln REQUIRED)
kiln_add_model(tagger MODEL m.onnx BATCH 1 2 NAME net)
add_executable(prog "%s/tests/hostile/driver.c")
target_compile_definitions(prog PRIVATE [[HEADER="net.h"]] MODEL=net_model)
target_link_libraries(prog PRIVATE tagger)
""" % SRC)
    cc = shutil.which(CC[-1]) or CC[-1]
    gens = [g for g in ("Ninja", "Unix Makefiles")
            if shutil.which("ninja" if g == "Ninja" else "make")]
    for gen in gens:
        w1.tofile(os.path.join(proj, "weights.bin"))
        b = os.path.join(OUT, "cmake-" + gen.split()[0])
        r = run(["cmake", "-S", proj, "-B", b, "-G", gen, "-DCMAKE_PREFIX_PATH=" + prefix,
                 "-DCMAKE_C_COMPILER=" + cc, "-DCMAKE_C_FLAGS=" + " ".join(SAN)])
        if not check(r.returncode == 0, "cmake %s: configure: %s" % (gen, r.stderr.decode()[-600:])):
            continue
        r = run(["cmake", "--build", b])
        check(r.returncode == 0, "cmake %s: build: %s" % (gen, (r.stdout + r.stderr).decode()[-600:]))
        vals = values_of(run([os.path.join(b, "prog"), "2"]))
        check(vals is not None and np.array_equal(vals[0], expect_add(w1)),
              "cmake %s: first build computes %s" % (gen, vals))
        r = run(["cmake", "--build", b])
        check(b"kiln: compiling" not in r.stdout, "cmake %s: compiled again for nothing" % gen)
        time.sleep(1.1)  # a new mtime for make's one-second view of some file systems
        w2 = rng.standard_normal(8).astype(np.float32)
        w2.tofile(os.path.join(proj, "weights.bin"))
        r = run(["cmake", "--build", b])
        check(r.returncode == 0 and b"kiln: compiling" in r.stdout,
              "cmake %s: changed weights did not recompile: %s" % (gen, r.stdout.decode()[-400:]))
        vals = values_of(run([os.path.join(b, "prog"), "2"]))
        check(vals is not None and np.array_equal(vals[0], expect_add(w2)),
              "cmake %s: the rebuilt program computes %s, not the new weights" % (gen, vals))
    print("depfile: CMake (%s) rebuilt on changed external data" % ", ".join(gens))


for part in [globals()[p] for p in os.environ.get("PARTS", "links race kill enospc shrink guards weights depfile").split()]:
    t0 = time.monotonic()
    try:
        part()
    except Exception as e:  # a crash of the test is a failure, not a skip
        check(False, "%s: %s: %s" % (part.__name__, type(e).__name__, e))
    print("%s: %.1f s" % (part.__name__, time.monotonic() - t0))
if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("all passed")
