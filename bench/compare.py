#!/usr/bin/python3
"""compare.py - kiln against ONNX Runtime 1.30, side by side on one core.

Run through bench/compare.sh (which builds kiln if needed and puts
onnxruntime-node on NODE_PATH); see bench/README.md. For every workload and
batch size it compiles the model with the current kiln, links kiln_time.c,
then runs kiln_time and ort_time.js pinned to one core (taskset), alternating
the two engines, for --passes passes, and reports per cell: both medians, the
kiln/ORT ratio (median of the per-pass ratios, with min-max), kiln GFLOP/s and
% of the FMA peak measured by peak.c, both engines' RSS growth against the
weight bytes, and the largest difference between their outputs.

Writes build/bench/results.json (everything, every pass), results.csv and
results.md; bench/report.py turns results.json into docs/performance.md.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The workloads: the eight of make_models.py, the test suite's DeepJet-style
# and ParticleNet-style models (test_models.py), the jet tagger example, and
# the trivial x + 1 model that measures each engine's per-call floor.
WORKLOADS = ["ff12_128", "ff25_256", "deepjet_like", "particlenet_like", "deepjet_test",
             "particlenet_test", "transformer_enc", "transformer_enc_einsum", "resnet18",
             "tied_embed_lm", "jet_tagger", "ff25_256+fp16w", "_probe_add", "mlp_bn_test",
             "resnet1d_test", "interaction_test", "part_test"]
# A workload NAME+VARIANT is NAME's model compiled with these extra kiln flags
# (opt-in modes, reported as rows of their own; ORT runs the same float32 model).
VARIANTS = {"fp16w": ["--weights-dtype", "fp16"]}
TEST_MODELS = ("deepjet_test", "particlenet_test", "mlp_bn_test",
               "resnet1d_test", "interaction_test", "part_test")  # made by bench/test_models.py
NOT_MADE = ("jet_tagger", "_probe_add") + TEST_MODELS  # not made by make_models.py
MAX_BATCH = {"resnet18": 16, "_probe_add": 1, "ff25_256+fp16w": 1}
# A cell fails the output check when max |kiln - ORT| > ATOL + RTOL * max |ORT|.
ATOL, RTOL = 1e-4, 1e-3
# Workloads whose outputs move with the last bit of their inputs: their own
# ATOL. part_test's pair features (ln m^2 of nearly collinear pairs) are
# ill-conditioned in float32: one ulp of its b64 inputs' 4-vectors moves
# ORT's own outputs by 1.0e-3 to 1.7e-3 (3 draws).
ATOL_FOR = {"part_test": 3e-3}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def safe_name(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def base_name(name):
    """The model a workload runs: NAME of NAME+VARIANT."""
    return name.split("+")[0]


def variant_flags(name):
    return VARIANTS[name.split("+")[1]] if "+" in name else []


def model_path(args, name):
    name = base_name(name)
    if name == "jet_tagger":
        return os.path.join(ROOT, "examples", "jet_tagger", "model.onnx")
    return os.path.join(args.models_dir, name + ".onnx")


def ensure_models(args, names):
    """Runs make_models.py for the workloads whose files are missing."""
    meta_path = os.path.join(args.models_dir, "models.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    names = sorted({base_name(n) for n in names})
    missing = [n for n in names if n not in NOT_MADE
               and (n not in meta or not os.path.exists(model_path(args, n)))]
    # FLOPs counted where ONNX Runtime was missing (make_models.py run on
    # its own) come from shape inference on a static export, wrong where
    # shapes are computed from shapes: such workloads are made again here,
    # where ONNX Runtime is installed
    stale = [n for n in names if n in meta and n not in missing
             and meta[n].get("flops_method", "ort_shapes") != "ort_shapes"]
    if stale:
        log(f"compare: {', '.join(stale)}: FLOPs in models.json were counted without ONNX Runtime; "
            "making them again")
        missing += stale
    if "_probe_add" in names and not os.path.exists(model_path(args, "_probe_add")) and not missing:
        missing = ["ff12_128"]  # make_models.py writes the probe with any workload
    if missing:
        log(f"compare: making {', '.join(missing)} with bench/make_models.py")
        env = dict(os.environ, BENCH_MODELS_DIR=args.models_dir)
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_models.py")] + missing, env=env)
        if r.returncode != 0:
            sys.exit("compare: make_models.py failed")
        meta = json.load(open(meta_path))
    tests = [n for n in names if n in TEST_MODELS and not os.path.exists(model_path(args, n))]
    if tests:
        log(f"compare: making {', '.join(tests)} with bench/test_models.py")
        env = dict(os.environ, BENCH_MODELS_DIR=args.models_dir)
        if subprocess.run(["/usr/bin/python3", os.path.join(HERE, "test_models.py")] + tests,
                          env=env).returncode != 0:
            sys.exit("compare: test_models.py failed")
    return meta


def onnx_facts(path, batch):
    """Weight bytes and dense FLOPs per sample of a model make_models.py did
    not make (the jet tagger, the test models), with its batch dims fixed to 1:
    the shapes from ONNX shape inference, or, where that leaves a dense op's
    shape unknown (shapes computed from shapes), from one ONNX Runtime run on
    normal noise (make_models.shapes_via_ort)."""
    import tempfile
    import onnx
    sys.path.insert(0, HERE)
    import make_models
    m = onnx.load(path)
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param:
                d.dim_value = 1
    dense, _, missing = make_models.count_flops(m)
    if missing:
        specs, _ = input_specs("", {}, path)
        with tempfile.TemporaryDirectory() as td:
            ref = dict(inputs=make_inputs("", specs, 1, td, noise=True))
            try:
                dense, _, _ = make_models.count_flops(m, make_models.shapes_via_ort(m, ref))
            except RuntimeError as e:
                log(f"compare: {os.path.basename(path)}: FLOPs from the shapes inference knows ({e})")
    _, nbytes, _, _ = make_models.param_stats(m)
    return nbytes, dense


def input_specs(name, meta, path):
    """[(name, numpy dtype, shape with 'N' for the batch)] from the ONNX graph."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    seq = (meta.get(name) or {}).get("seq_len") or 32
    out = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = []
        for i, d in enumerate(t.shape.dim):
            dims.append("N" if (i == 0 and not d.dim_value) else (d.dim_value or seq))
        dtype = {1: np.float32, 7: np.int64}[t.elem_type]
        out.append((vi.name, dtype, dims))
    outs = [o.name for o in m.graph.output]
    return out, outs


def make_inputs(name, specs, batch, in_dir, noise=False):
    """Writes the inputs both engines read: make_models.py's own input
    generator for its workloads (valid token ids, calibrated ranges), normal
    noise otherwise. Fixed seeds."""
    os.makedirs(in_dir, exist_ok=True)
    arrays = None
    if not noise and name not in NOT_MADE:
        sys.path.insert(0, HERE)
        import torch
        import make_models
        spec = make_models.build_specs()[name]
        g = torch.Generator().manual_seed(1000 + batch)
        arrays = [t.numpy() for t in spec["inputs"](batch, g)]
    elif not noise and name in TEST_MODELS:
        sys.path.insert(0, HERE)
        import test_models
        if name in test_models.INPUTS:
            arrays = test_models.INPUTS[name](batch, 1000 + batch)
    files = []
    rng = np.random.default_rng(1000 + batch)
    for k, (iname, dtype, dims) in enumerate(specs):
        shape = [batch if d == "N" else d for d in dims]
        a = arrays[k] if arrays is not None else rng.standard_normal(shape).astype(np.float32)
        a = np.ascontiguousarray(a, dtype=dtype)
        assert list(a.shape) == shape, (name, iname, a.shape, shape)
        f = os.path.join(in_dir, safe_name(iname) + ".bin")
        a.tofile(f)
        files.append(dict(name=iname, dtype="float32" if dtype == np.float32 else "int64",
                          shape=shape, dims=dims, file=f))
    return files


def build_kiln(args, name, path, batch, inputs, cell_dir, root=None):
    """kiln compile + link kiln_time; returns (binary, None) or (None, error).
    root: another kiln checkout (--baseline) built into cell_dir/baseline."""
    root = root or args.kiln_root
    kiln = os.path.join(root, "build", "compiler", "kiln")
    libkiln = os.path.join(root, "build", "runtime", "libkiln.a")
    kdir = os.path.join(cell_dir, "kiln" if root == args.kiln_root else "baseline")
    os.makedirs(kdir, exist_ok=True)
    cmd = [kiln, "compile", path, "--batch", str(batch), "--name", "bench", "-o", kdir]
    cmd += variant_flags(name)
    for i in inputs:  # fix non-batch symbolic dims (the LM's sequence length); the batch
        # stays N, as a user compiles it (a literal batch would leave no batch axis)
        cmd += ["--shape", f"{i['name']}=" + ",".join(str(d) for d in i["dims"])]
    t0 = time.time()
    r = run(cmd)
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        return None, f"kiln compile failed: {err}", time.time() - t0
    compile_s = time.time() - t0
    exe = os.path.join(kdir, "kiln_time")
    cc = os.environ.get("CC", "cc")
    r = run([cc, "-std=c11", "-O2", "-I" + kdir, "-I" + os.path.join(root, "include"), "-I" + HERE,
             os.path.join(HERE, "kiln_time.c"), os.path.join(kdir, "bench.o"),
             libkiln, "-lm", "-o", exe])
    if r.returncode != 0:
        return None, "link failed: " + (r.stderr.strip().splitlines() or ["?"])[-1], compile_s
    return exe, None, compile_s


def pinned(args, cmd):
    return ["taskset", "-c", str(args.core)] + cmd


def time_kiln(args, exe, in_dir, out_dir, p):
    """Pass p of a kiln executable, from its own copy of the file (exe.passP,
    kept until the cell's passes are done: kiln_copies_done): its weights
    (.rodata) are read through the page cache, and which physical pages a
    file gets decides the cache set conflicts of the weights. Six copies of
    one ff12_128 executable ran b1 in 3.9 to 4.8 us, each steady; one file
    for every pass measured one such draw (kiln or the baseline 1.2 x the
    other in one run, 0.95 in the next), and so did a copy deleted after
    each pass (the next copy got the freed pages back: ff25_256 b1 62 us in
    all five passes of one run, 54-56 us in seven of nine of the next). A
    live copy per pass takes new pages each pass."""
    os.makedirs(out_dir, exist_ok=True)
    fresh = pass_copy(exe, p)
    shutil.copy2(exe, fresh)
    r = run(pinned(args, [fresh, str(args.min_time), str(args.min_calls), str(args.slow), in_dir,
                          out_dir]))
    if r.returncode != 0:
        return None, "kiln run failed (exit %d): %s" % (r.returncode, r.stderr.strip()[-300:])
    return json.loads(r.stdout), None


def pass_copy(exe, p):
    """time_kiln's copy of exe for pass p"""
    return "%s.pass%d" % (exe, p)


def kiln_copies_done(exe, passes):
    """time_kiln's copies of exe, deleted once the cell is measured"""
    for p in range(passes):
        if exe and os.path.exists(pass_copy(exe, p)):
            os.unlink(pass_copy(exe, p))


def time_ort(args, path, spec_file):
    r = run(pinned(args, ["node", os.path.join(HERE, "ort_time.js"), path, spec_file,
                          str(args.min_time), str(args.min_calls), str(args.slow)]))
    if r.returncode != 0:
        return None, "ORT run failed (exit %d): %s" % (r.returncode, r.stderr.strip()[-300:])
    return json.loads(r.stdout), None


def compare_outputs(outputs, kiln_dir, ort_dir):
    """max |kiln - ORT| and max |ORT| over all outputs; (None, msg) if unreadable."""
    diff, ref = 0.0, 0.0
    for o in outputs:
        f = safe_name(o) + ".bin"
        a = np.fromfile(os.path.join(kiln_dir, f), dtype=np.float32)
        b = np.fromfile(os.path.join(ort_dir, f), dtype=np.float32)
        if a.shape != b.shape:
            return None, None, f"output {o}: kiln {a.size} values, ORT {b.size}"
        if not np.all(np.isfinite(a)) and np.all(np.isfinite(b)):
            return float("inf"), float(np.max(np.abs(b))), f"output {o}: kiln has NaN/Inf"
        diff = max(diff, float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0)
        ref = max(ref, float(np.max(np.abs(b))) if b.size else 0.0)
    return diff, ref, None


def machine_info(args):
    def first(cmd):
        try:
            return run(cmd).stdout.strip().splitlines()[0]
        except Exception:
            return "?"
    cpu = "?"
    flags = set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and cpu == "?":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    ort_ver = "?"
    try:
        np_ = os.environ.get("NODE_PATH", "").split(":")[0]
        ort_ver = json.load(open(os.path.join(np_, "onnxruntime-node", "package.json")))["version"]
    except Exception:
        pass
    kr = args.kiln_root
    commit = first(["git", "-C", kr, "rev-parse", "--short=12", "HEAD"])
    subject = first(["git", "-C", kr, "log", "-1", "--format=%s"])
    dirty = run(["git", "-C", kr, "status", "--porcelain", "--", "compiler", "runtime",
                 "include"]).stdout.strip() != ""
    return dict(cpu=cpu, ncpu=os.cpu_count(), kernel=platform.release(),
                isa=[f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl") if f in flags],
                cc=first([os.environ.get("CC", "cc"), "--version"]), node=first(["node", "--version"]),
                ort=ort_ver, kiln_commit=commit, kiln_subject=subject, kiln_dirty=dirty,
                loadavg=open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else None)


def peak_probe(args):
    exe = os.path.join(args.out, "peak")
    r = run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-march=native", "-I" + HERE,
             os.path.join(HERE, "peak.c"), "-o", exe])
    if r.returncode != 0:
        sys.exit("compare: cannot build peak.c: " + r.stderr)
    r = run(pinned(args, [exe, "5"]))
    return json.loads(r.stdout)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def summarize(cell, meta_w, flops, peak):
    """Per-cell summary from its passes: wall-clock medians and CPU-time
    means, the median (and range) of the per-pass kiln/ORT ratios of each,
    GFLOP/s by CPU time, RSS growth."""
    s = {}
    for e in ("kiln", "ort"):
        runs = [p[e] for p in cell["passes"] if p.get(e)]
        s[e + "_ns"] = median([r["median_ns"] for r in runs]) if runs else None
        s[e + "_cpu_ns"] = median([r["cpu_median_ns"] for r in runs]) if runs else None
        g = [r["rss_after"] - r["rss_before"] for r in runs]
        s[e + "_rss"] = median(g) if g else None
        s[e + "_rss_x_w"] = median(g) / meta_w if (g and meta_w > 16) else None
    both = [p for p in cell["passes"] if p.get("kiln") and p.get("ort")]
    for suffix, key in (("", "median_ns"), ("_cpu", "cpu_median_ns")):
        rs = [p["kiln"][key] / p["ort"][key] for p in both if p["ort"][key] > 0]
        s["ratio" + suffix] = median(rs) if rs else None
        s["ratio" + suffix + "_min"] = min(rs) if rs else None
        s["ratio" + suffix + "_max"] = max(rs) if rs else None
    # --baseline: the median (and range) of the per-pass kiln/baseline CPU-time ratios
    runs = [p["baseline"] for p in cell["passes"] if p.get("baseline")]
    if runs:
        s["baseline_cpu_ns"] = median([r["cpu_median_ns"] for r in runs])
        rs = [p["kiln"]["cpu_median_ns"] / p["baseline"]["cpu_median_ns"] for p in cell["passes"]
              if p.get("kiln") and p.get("baseline") and p["baseline"]["cpu_median_ns"] > 0]
        s["vs_base_cpu"] = median(rs) if rs else None
        s["vs_base_cpu_min"] = min(rs) if rs else None
        s["vs_base_cpu_max"] = max(rs) if rs else None
    b = cell["batch"]
    for e in ("kiln", "ort"):
        t = s[e + "_cpu_ns"]
        s[e + "_gflops"] = flops * b / t if (t and flops) else None
        s[e + "_peak_pct"] = 100 * s[e + "_gflops"] / peak if (s[e + "_gflops"] and peak) else None
    return s


def fmt_time(ns):
    if ns is None:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_ratio(r):
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def fmt_mib(b):
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


def table(results, before=None):
    """The markdown table (also used by report.py); `before`, another run's
    results, adds its kiln/ORT ratio (CPU time) per cell."""
    old = {}
    for c in (before or {}).get("cells", []):
        old[(c["model"], c["batch"])] = c["summary"].get("ratio_cpu")
    rows = ["| model | batch | kiln | ORT | kiln/ORT (min-max) | wall-clock kiln/ORT (min-max) |"
            + (" before |" if before else "")
            + " kiln GFLOP/s | kiln % peak | ORT GFLOP/s "
            "| kiln RSS growth (x w) | ORT RSS growth (x w) | max abs diff | check |",
            "|---|---:|---:|---:|---:|---:|" + ("---:|" if before else "") + "---:|---:|---:|---:|---:|---:|---|"]
    for c in results["cells"]:
        s = c["summary"]
        r = " | ".join("-" if s["ratio" + x] is None else
                       f"{fmt_ratio(s['ratio' + x])} ({fmt_ratio(s['ratio' + x + '_min'])}-"
                       f"{fmt_ratio(s['ratio' + x + '_max'])})" for x in ("_cpu", ""))
        g = lambda v, f="{:.1f}": "-" if v is None else f.format(v)
        rss = lambda e: "-" if s[e + "_rss"] is None else fmt_mib(s[e + "_rss"]) + (
            "" if s[e + "_rss_x_w"] is None else f" ({s[e + '_rss_x_w']:.2f})")
        d = "-" if c.get("max_abs_diff") is None else f"{c['max_abs_diff']:.2g}"
        if before:
            b = old.get((c["model"], c["batch"]))
            r += " | " + ("-" if b is None else fmt_ratio(b))
        rows.append(f"| {c['model']} | {c['batch']} | {fmt_time(s['kiln_cpu_ns'])} | {fmt_time(s['ort_cpu_ns'])} "
                    f"| {r} | {g(s['kiln_gflops'])} | {g(s['kiln_peak_pct'], '{:.1f}%')} | {g(s['ort_gflops'])} "
                    f"| {rss('kiln')} | {rss('ort')} | {d} | {c['check']} |")
    return "\n".join(rows)


def write_outputs(args, results):
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        keys = ["kiln_ns", "ort_ns", "ratio", "ratio_min", "ratio_max", "kiln_cpu_ns", "ort_cpu_ns",
                "ratio_cpu", "ratio_cpu_min", "ratio_cpu_max", "kiln_gflops", "kiln_peak_pct",
                "ort_gflops", "ort_peak_pct", "kiln_rss", "kiln_rss_x_w", "ort_rss", "ort_rss_x_w"]
        w.writerow(["model", "batch"] + keys + ["max_abs_diff", "check"])
        for c in results["cells"]:
            w.writerow([c["model"], c["batch"]] + [c["summary"][k] for k in keys]
                       + [c.get("max_abs_diff"), c["check"]])
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table(results) + "\n")


def main():
    ap = argparse.ArgumentParser(description="kiln vs ONNX Runtime, one core, alternating")
    ap.add_argument("--models", default=",".join(WORKLOADS))
    ap.add_argument("--batches", default="1,16,256")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds timed per engine and pass")
    ap.add_argument("--min-calls", type=int, default=3, help="at least this many timed calls")
    ap.add_argument("--slow", type=float, default=2.0,
                    help="a call longer than this many seconds is timed once (after one warm-up call)")
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--kiln-root", default=ROOT,
                    help="the kiln checkout to measure, built in its build/ (default: this one)")
    ap.add_argument("--baseline", metavar="CHECKOUT",
                    help="another kiln checkout (built in its build/), timed as a third engine in "
                         "the same alternation: each cell also reports kiln/baseline")
    args = ap.parse_args()
    args.kiln_root = os.path.abspath(args.kiln_root)
    args.kiln = os.path.join(args.kiln_root, "build", "compiler", "kiln")
    args.libkiln = os.path.join(args.kiln_root, "build", "runtime", "libkiln.a")
    for root in [args.kiln_root] + ([os.path.abspath(args.baseline)] if args.baseline else []):
        if not (os.access(os.path.join(root, "build", "compiler", "kiln"), os.X_OK) and
                os.path.exists(os.path.join(root, "build", "runtime", "libkiln.a"))):
            sys.exit(f"compare: {root} has no build/compiler/kiln and build/runtime/libkiln.a "
                     "(scripts/build.sh there)")
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    args.out = os.path.abspath(args.out)
    args.models_dir = os.path.abspath(os.environ.get("BENCH_MODELS_DIR",
                                                     os.path.join(ROOT, "build", "bench", "models")))
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in WORKLOADS and not (base_name(n) in WORKLOADS and n.split("+")[1] in VARIANTS):
            sys.exit(f"compare: unknown workload {n} (known: {', '.join(WORKLOADS)})")
    batches = [int(b) for b in args.batches.split(",") if b]
    if args.passes < 1 or args.min_calls < 1 or not batches:
        sys.exit("compare: --passes, --min-calls and --batches need positive values")
    if not shutil.which("taskset"):
        sys.exit("compare: taskset not found (util-linux)")
    os.makedirs(args.out, exist_ok=True)
    meta = ensure_models(args, names)

    info = machine_info(args)
    log(f"compare: kiln {info['kiln_commit']}{' (modified)' if info['kiln_dirty'] else ''}, "
        f"ONNX Runtime {info['ort']}, core {args.core}")
    peak0 = peak_probe(args)
    log(f"compare: FMA peak probe {json.dumps(peak0)}")

    # Prepare every cell first (inputs, kiln build), so that no compile runs
    # while timing.
    cells = []
    for name in names:
        path, mname = model_path(args, name), base_name(name)
        if mname in meta:
            w, flops = meta[mname]["weight_bytes"], meta[mname]["flops_dense_per_sample"]
        else:
            w, flops = onnx_facts(path, 1)
        specs, outputs = input_specs(mname, meta, path)
        for b in batches:
            if b > MAX_BATCH.get(name, 1 << 30):
                continue
            cdir = os.path.join(args.out, "cells", f"{name}_b{b}")
            inputs = make_inputs(mname, specs, b, os.path.join(cdir, "in"))
            spec_file = os.path.join(cdir, "ort_spec.json")
            os.makedirs(os.path.join(cdir, "ort_out"), exist_ok=True)
            json.dump(dict(batch=b, inputs=inputs, outputs=[
                dict(name=o, file=os.path.join(cdir, "ort_out", safe_name(o) + ".bin")) for o in outputs]),
                open(spec_file, "w"))
            exe, err, cs = build_kiln(args, name, path, b, inputs, cdir)
            log(f"compare: {name} b{b}: " + (err or f"kiln compile {cs:.1f} s"))
            base_exe = None
            if args.baseline:
                base_exe, berr, _ = build_kiln(args, name, path, b, inputs, cdir, args.baseline)
                if berr:
                    log(f"compare: {name} b{b}: baseline: {berr}")
            cells.append(dict(model=name, batch=b, weight_bytes=w, flops_per_sample=flops, dir=cdir,
                              exe=exe, base_exe=base_exe, spec=spec_file, outputs=outputs,
                              errors=[err] if err else [], compile_s=cs, passes=[]))

    started = datetime.datetime.now(datetime.timezone.utc)
    for c in cells:
        for p in range(args.passes):
            rec = dict(pass_=p, start=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
            engines = ["kiln", "ort"] + (["baseline"] if c["base_exe"] else [])
            order = engines[p % len(engines):] + engines[:p % len(engines)]   # rotate
            for e in order:
                if e == "kiln" and c["exe"]:
                    rec["kiln"], err = time_kiln(args, c["exe"], os.path.join(c["dir"], "in"),
                                                 os.path.join(c["dir"], f"kiln_out{p}"), p)
                elif e == "baseline":
                    rec["baseline"], err = time_kiln(args, c["base_exe"], os.path.join(c["dir"], "in"),
                                                     os.path.join(c["dir"], f"baseline_out{p}"), p)
                elif e == "ort":
                    rec["ort"], err = time_ort(args, model_path(args, c["model"]), c["spec"])
                else:
                    continue
                if err and err not in c["errors"]:
                    c["errors"].append(err)
            c["passes"].append(rec)
        kiln_copies_done(c["exe"], args.passes)
        kiln_copies_done(c["base_exe"], args.passes)
        # Outputs: kiln's against ORT's (first pass), and kiln's passes against each other.
        kdirs = [os.path.join(c["dir"], f"kiln_out{p}") for p in range(args.passes)
                 if c["passes"][p].get("kiln")]
        c["max_abs_diff"] = c["max_abs_ort"] = None
        c["check"] = "n/a"
        if kdirs and any(p.get("ort") for p in c["passes"]):
            d, ref, err = compare_outputs(c["outputs"], kdirs[0], os.path.join(c["dir"], "ort_out"))
            c["max_abs_diff"], c["max_abs_ort"] = d, ref
            if err or d > ATOL_FOR.get(base_name(c["model"]), ATOL) + RTOL * ref:
                c["check"] = "MISMATCH"
                c["errors"].append(err or f"max |kiln - ORT| = {d:.3g} (max |ORT| = {ref:.3g})")
            else:
                c["check"] = "ok"
            for kd in kdirs[1:]:
                d2, _, _ = compare_outputs(c["outputs"], kdirs[0], kd)
                if d2 != 0.0:
                    c["check"] += " NONDETERMINISTIC"
                    c["errors"].append(f"kiln outputs differ between passes by {d2:.3g}")
                    break
        elif c["errors"]:
            c["check"] = "FAILED"
        c["summary"] = summarize(c, c["weight_bytes"], c["flops_per_sample"],
                                 peak0[peak0["isa"]]["median"] if peak0.get("isa") else None)
        s = c["summary"]
        if s.get("vs_base_cpu") is not None:
            log(f"compare: {c['model']:>22} b{c['batch']:<4} kiln/baseline "
                f"{fmt_ratio(s['vs_base_cpu'])} ({fmt_ratio(s['vs_base_cpu_min'])}-"
                f"{fmt_ratio(s['vs_base_cpu_max'])}), baseline {fmt_time(s['baseline_cpu_ns'])}")
        log(f"compare: {c['model']:>22} b{c['batch']:<4} kiln {fmt_time(s['kiln_cpu_ns']):>10}  "
            f"ORT {fmt_time(s['ort_cpu_ns']):>10}  kiln/ORT "
            + ("-" if s["ratio_cpu"] is None else
               f"{fmt_ratio(s['ratio_cpu'])} ({fmt_ratio(s['ratio_cpu_min'])}-{fmt_ratio(s['ratio_cpu_max'])})")
            + ("" if s["ratio"] is None else f"  wall {fmt_ratio(s['ratio'])}")
            + f"  diff {c['max_abs_diff'] if c['max_abs_diff'] is None else format(c['max_abs_diff'], '.2g')}"
            + f"  {c['check']}" + ("".join("\n    !! " + e for e in c["errors"])))

    peak1 = peak_probe(args)
    isa = peak0.get("isa")
    peak = max(peak0[isa]["median"], peak1[isa]["median"]) if isa else None
    for c in cells:  # % of peak against the best of both probes
        c["summary"] = summarize(c, c["weight_bytes"], c["flops_per_sample"], peak)
        for k in ("exe", "base_exe", "dir", "spec"):
            c.pop(k, None)
    results = dict(
        machine=info, peak=dict(before=peak0, after=peak1, isa=isa, gflops=peak),
        method=dict(passes=args.passes, min_time_s=args.min_time, min_calls=args.min_calls, slow_s=args.slow,
                core=args.core,
                    atol=ATOL, rtol=RTOL, started=started.isoformat(timespec="seconds"),
                    finished=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    kiln_isa=next((p["kiln"]["isa"] for c in cells for p in c["passes"] if p.get("kiln")), None),
                    KILN_ISA=os.environ.get("KILN_ISA")),
        cells=cells)
    write_outputs(args, results)
    print(table(results))
    bad = [c for c in cells if c["check"] != "ok" and c["model"] != "_probe_add" or c["errors"]]
    if bad:
        print("\n!! PROBLEMS:")
        for c in bad:
            for e in c["errors"] or [c["check"]]:
                print(f"!! {c['model']} b{c['batch']}: {e}")
    log(f"compare: wrote {os.path.join(args.out, 'results.json')} (.csv, .md); "
        "bench/report.py writes docs/performance.md from it")


if __name__ == "__main__":
    main()
