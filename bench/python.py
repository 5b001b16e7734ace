#!/usr/bin/python3
"""The kiln Python module's costs (docs/python.md):

  1. the time the module adds to a call: the jet tagger at n rows (default 1)
     through model(x, out=o) and model(x) against kiln_run from C on the same
     shared object (bench/python_call.c), in the thread's CPU time, median of
     15 runs of --reps calls, C and Python alternated --passes times (the
     median of those reported);
  2. each Dask worker's RSS growth for a model: a LocalCluster of 2 worker
     processes unpickles the model (path and hash), runs it once at the
     largest compiled size, and reports VmRSS (and RssAnon, RssFile) before
     and after, against the model's context bytes (arena + staging + plans).

usage: bench/python.py [--build build] [--n 1] [--reps 20000] [--passes 3]
                       [--out build/bench/python]
Uses build/compiler/kiln, build/runtime/libkiln.a and the module of
build/python (PYTHONPATH is set here).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def status_kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def worker_growth(blob, n):
    """On a worker: memory before and after opening and running the model."""
    import pickle

    import numpy as np

    import kiln  # noqa: F401  (the module itself is not the model's cost)
    x = None
    before = {f: status_kib(f) for f in ("VmRSS", "RssAnon", "RssFile")}
    model = pickle.loads(blob)
    x = [np.zeros([n if d is None else d for d in t.shape], t.dtype) for t in model.inputs]
    model(*x)
    after = {f: status_kib(f) for f in ("VmRSS", "RssAnon", "RssFile")}
    import os as _os
    return {"pid": _os.getpid(), "before_kib": before, "after_kib": after,
            "context_bytes": model.context_bytes, "arena_bytes": model.arena_bytes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--n", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = a.out or os.path.join(build, "bench", "python")
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, os.path.join(build, "python"))
    os.environ["PYTHONPATH"] = os.path.join(build, "python")
    import numpy as np

    import kiln

    kiln_exe = os.path.join(build, "compiler", "kiln")
    subprocess.run([kiln_exe, "compile", os.path.join(ROOT, "examples/jet_tagger/model.onnx"),
                    "--batch", "1,8,64", "--name", "jt", "--shared", "-o", out], check=True,
                   stdout=subprocess.DEVNULL)
    so = os.path.join(out, "jt.so")
    prog = os.path.join(out, "python_call")
    subprocess.run(["cc", "-std=c11", "-O2", "-I", os.path.join(ROOT, "include"),
                    os.path.join(ROOT, "bench", "python_call.c"),
                    os.path.join(build, "runtime", "libkiln.a"), "-lm", "-o", prog], check=True)

    model = kiln.load(so)
    x = np.zeros((a.n, 16), np.float32)
    o = np.empty((a.n, 5), np.float32)

    def py_ns(fn):
        runs = []
        for _ in range(15):
            t = time.thread_time_ns()
            for _ in range(a.reps):
                fn()
            runs.append((time.thread_time_ns() - t) / a.reps)
        return statistics.median(runs)

    c, p_out, p_new = [], [], []
    for _ in range(a.passes):
        c.append(float(subprocess.run([prog, so, str(a.n), str(a.reps)], check=True,
                                      capture_output=True, text=True).stdout))
        p_out.append(py_ns(lambda: model(x, out=o)))
        p_new.append(py_ns(lambda: model(x)))
    res = {"n": a.n, "reps": a.reps, "passes": a.passes, "c_ns": c, "python_out_ns": p_out,
           "python_new_ns": p_new}
    cm, om, nm = statistics.median(c), statistics.median(p_out), statistics.median(p_new)
    print("jet tagger at n = %d: C kiln_run %.0f ns; model(x, out=o) %.0f ns (+%.0f ns); "
          "model(x) %.0f ns (+%.0f ns)   [medians of %d passes]"
          % (a.n, cm, om, om - cm, nm, nm - cm, a.passes))

    from dask.distributed import Client, LocalCluster
    import pickle
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    try:
        blob = pickle.dumps(model)
        got = client.run(worker_growth, blob, model.batch_sizes[-1])
    finally:
        client.close()
        cluster.close()
    res["workers"] = list(got.values())
    for w in got.values():
        g = {k: w["after_kib"][k] - w["before_kib"][k] for k in w["after_kib"]}
        print("worker %d: RSS +%d KiB (anonymous +%d, file +%d); context %d KiB (arena %d KiB); "
              "limit context + 1 MiB = %d KiB: %s"
              % (w["pid"], g["VmRSS"], g["RssAnon"], g["RssFile"], w["context_bytes"] // 1024,
                 w["arena_bytes"] // 1024, w["context_bytes"] // 1024 + 1024,
                 "within" if g["VmRSS"] <= w["context_bytes"] // 1024 + 1024 else "OVER"))
    with open(os.path.join(out, "python.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
