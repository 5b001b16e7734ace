#!/usr/bin/python3
"""The per-event workload of issue 31: events of 0-300 jets, each jet with
its own particle count, through ParticleNet (weaver-core's layers,
tests/realmodels/particlenet_weaver.py, exported with a dynamic particle
axis) three ways on one core:

  buckets  kiln compile --dim P=BUCKETS, kiln_run_lengths per event;
  fixed    kiln compile --dim P=PMAX, kiln_run per event on the jets padded
           to PMAX (what a fixed-shape AOT model does);
  ort      ONNX Runtime 1.30 (scripts/install-ort.sh) with the dynamic axis,
           per event at the event's longest jet (at least k + 1 = 17
           particles: the kNN's TopK needs them), the way CMSSW runs
           ParticleNet since cms-sw/cmssw#31036.

The events: the jet count of each event uniform in 0..300 (issue 31's
range); each jet's particle count drawn from a gamma distribution of shape
3 and mean MEAN, rounded and clipped to 1..PMAX: by default 20 for AK4
(P <= 50) and 50 for AK8 (P <= 100; AK8 jets, R = 0.8, hold about 2-3 times
an AK4 jet's constituents). Both are assumptions, not fits to data: no
measured PF-candidate multiplicity spectrum of CMS AK4 or AK8 jets, nor a
jets-per-event spectrum, was found in the sources searched (docs/batching.md
lists them); change --mean to move it. Inputs are random features (zero
past each length, mask 0).

Times are CPU time per event (process CPU clock; median over --reps passes
over all events, every event counted, an empty one too); the three outputs
are checked against each other (rtol 1e-3, atol 1e-5).

usage: bench/buckets.py [--net ak4|ak8] [--events 40] [--reps 3]
                        [--buckets 20,32,50] [--batch 1,8,32] [--mean 20|50]
                        [--core 1] [--out build/bench/buckets]
(NODE_PATH must find onnxruntime-node: NODE_PATH=$(scripts/install-ort.sh))
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "realmodels"))
import particlenet_weaver as pnw  # noqa: E402

# net -> (weaver-core arguments, PMAX, default buckets, default mean particle count)
NETS = {"ak4": (pnw.AK4, 50, "20,32,50", 20.0), "ak8": (pnw.AK8, 100, "32,48,64,80,100", 50.0)}


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("%s: %s" % (cmd[0], (r.stderr or r.stdout).strip()))
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", default="ak4", choices=NETS)
    ap.add_argument("--events", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buckets")
    ap.add_argument("--batch", default="1,8,32")
    ap.add_argument("--mean", type=float)
    ap.add_argument("--core", default="1")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "buckets"))
    a = ap.parse_args()
    args, pmax, buckets, mean = NETS[a.net]
    buckets = a.buckets or buckets
    mean = a.mean or mean
    kiln = os.path.join(ROOT, "build", "compiler", "kiln")
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    import onnx
    model, _ = pnw.export("bench", table={"bench": (dict(args, dynamic_p=True), 20, 13)})
    mpath = os.path.join(a.out, "model.onnx")
    onnx.save(model, mpath)

    r = np.random.default_rng(a.seed)
    events = r.integers(0, 301, a.events).astype(np.int64)
    njets = int(events.sum())
    lengths = np.clip(np.rint(r.gamma(3.0, mean / 3.0, njets)), 1, pmax).astype(np.int64)
    c = args.get("input_dims", 8)
    m = (np.arange(pmax)[None, :] < lengths[:, None]).astype(np.float32)[:, None, :]
    feed = {"points": r.standard_normal((njets, 2, pmax), dtype=np.float32) * m,
            "features": r.standard_normal((njets, c, pmax), dtype=np.float32) * m,
            "mask": m}
    files = []
    for k, v in feed.items():
        files.append(os.path.join(a.out, k + ".bin"))
        np.ascontiguousarray(v).tofile(files[-1])
    events.tofile(os.path.join(a.out, "events.bin"))
    lengths.tofile(os.path.join(a.out, "lengths.bin"))

    for name, dim in (("pnb", buckets), ("pnf", str(pmax))):
        sh([kiln, "compile", mpath, "--batch", a.batch, "--dim", "P=" + dim, "--name", name,
            "-o", os.path.join(a.out, name)])
    exe = os.path.join(a.out, "buckets_time")
    sh(os.environ.get("CC", "cc").split() +
       ["-std=c11", "-O2", "-D_POSIX_C_SOURCE=200809L", "-I", os.path.join(ROOT, "include"),
        "-I", os.path.join(ROOT, "bench"),
        "-include", os.path.join(a.out, "pnb", "pnb.h"), "-include", os.path.join(a.out, "pnf", "pnf.h"),
        "-DBUCKETS=pnb_model", "-DFIXED=pnf_model", os.path.join(ROOT, "bench", "buckets_time.c"),
        os.path.join(a.out, "pnb", "pnb.o"), os.path.join(a.out, "pnf", "pnf.o"),
        os.path.join(ROOT, "build", "runtime", "libkiln.a"), "-lm", "-o", exe])
    pin = ["taskset", "-c", a.core] if shutil.which("taskset") else []
    outs = [os.path.join(a.out, "y_buckets.bin"), os.path.join(a.out, "y_fixed.bin")]
    kres = json.loads(sh(pin + [exe, str(pmax), str(a.reps), os.path.join(a.out, "events.bin"),
                                os.path.join(a.out, "lengths.bin")] + files + outs))
    spec = {"model": mpath, "pmax": pmax, "pmin": 17, "reps": a.reps,
            "events": os.path.join(a.out, "events.bin"), "lengths": os.path.join(a.out, "lengths.bin"),
            "inputs": [{"name": k, "channels": int(v.shape[1]), "file": f}
                       for (k, v), f in zip(feed.items(), files)],
            "out": os.path.join(a.out, "y_ort.bin")}
    with open(os.path.join(a.out, "ort.json"), "w") as f:
        json.dump(spec, f)
    ores = json.loads(sh(pin + ["node", os.path.join(ROOT, "bench", "ort_events.js"),
                                os.path.join(a.out, "ort.json")]))
    yb, yf, yo = (np.fromfile(p, np.float32) for p in outs + [spec["out"]])
    for nm, y in (("buckets", yb), ("fixed", yf)):
        if not np.allclose(y, yo, rtol=1e-3, atol=1e-5):
            sys.exit("%s differs from ONNX Runtime by %.3g" % (nm, float(np.abs(y - yo).max())))
    tb, tf, to = kres["buckets_ns_per_event"], kres["fixed_ns_per_event"], ores["ort_ns_per_event"]
    print("ParticleNet %s, %d events of 0-300 jets (%d jets, mean %.1f particles, %.0f%% at %d), "
          "batch %s, one core, CPU time per event (median of %d passes):"
          % (a.net.upper(), a.events, njets, float(lengths.mean()),
             100.0 * float((lengths == pmax).mean()), pmax, a.batch, a.reps))
    print("  %-34s %10s %10s %14s" % ("", "ms/event", "vs ORT", "context bytes"))
    print("  %-34s %10.2f %10.2f %14d" % ("kiln, buckets P=" + buckets, tb / 1e6, tb / to,
                                          kres["buckets_context_bytes"]))
    print("  %-34s %10.2f %10.2f %14d" % ("kiln, fixed P=%d" % pmax, tf / 1e6, tf / to,
                                          kres["fixed_context_bytes"]))
    print("  %-34s %10.2f %10.2f %14s" % ("ONNX Runtime, dynamic P per event", to / 1e6, 1.0, "-"))
    print("  buckets / fixed: %.2f; outputs agree within rtol 1e-3, atol 1e-5 (largest %.3g)"
          % (tb / tf, float(np.abs(yb - yo).max())))


if __name__ == "__main__":
    main()
