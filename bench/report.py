#!/usr/bin/python3
"""report.py - docs/performance.md and docs/performance.svg from the results
of bench/compare.sh.

    bench/report.py [RESULTS.json] [--before OLD.json] [--md docs/performance.md] [--svg ...]

RESULTS.json defaults to build/bench/results.json. The page holds the
machine, the method, the table with its noise (the per-pass ratio spread and
every pass), a plot of kiln/ORT per model and batch (an SVG written here, no
plotting library) and any failed or mismatching cell. --before adds another
run's kiln/ORT ratio per cell as a column (bench/results-before.json holds
the run before the fast kernels of issue #10). Output depends only on the
results files.
"""
import argparse
import math
import re
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare import fmt_mib, fmt_ratio, fmt_time, table  # noqa: E402

import json  # noqa: E402

# One colour per batch size (colour-blind safe), others fall back to grey.
COLOURS = {1: "#0072b2", 16: "#e69f00", 256: "#009e73"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def short_paths(s):
    """Paths in messages relative to the checkout that measured them."""
    return re.sub(r"/\S*?/(build/bench[^/\s]*/)", r"\1", s)


def svg_plot(results):
    """Grouped bars of kiln/ORT (log scale) per model, one bar per batch size,
    with the per-pass min-max as a whisker and the parity line at 1."""
    every = [c for c in results["cells"] if c["model"] != "_probe_add"]
    cells = [c for c in every if c["summary"].get("ratio_cpu") is not None]
    models = []
    for c in every:
        if c["model"] not in models:
            models.append(c["model"])
    batches = sorted({c["batch"] for c in every})
    if not cells:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="10" y="25">no data</text></svg>\n'
    lo = min([c["summary"]["ratio_cpu_min"] for c in cells] + [c["summary"]["ratio"] for c in cells
                                                               if c["summary"].get("ratio")] + [0.5])
    hi = max([c["summary"]["ratio_cpu_max"] for c in cells] + [c["summary"]["ratio"] for c in cells
                                                              if c["summary"].get("ratio")] + [2.0])
    e_lo, e_hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    left, right, top, bottom = 70, 20, 62, 120
    group_w = 24 * len(batches) + 26
    w = max(left + right + group_w * len(models), 720)
    h = 360
    ph = h - top - bottom

    def y(v):
        return top + ph * (e_hi - math.log10(v)) / (e_hi - e_lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13">kiln time / ONNX Runtime time, one core '
           f'(kiln {esc(results["machine"]["kiln_commit"])})</text>',
           f'<text x="{left}" y="32">bars: median of the per-pass ratios of CPU time per call, whiskers: their '
           'min-max, circles: the wall-clock ratio;</text>',
           f'<text x="{left}" y="45">below 1: kiln is faster; red x: no kiln time (hover for the error)</text>']
    for e in range(e_lo, e_hi + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if v < 10.0 ** e_lo or v > 10.0 ** e_hi:
                continue
            yy = y(v)
            out.append(f'<line x1="{left}" x2="{w - right}" y1="{yy:.1f}" y2="{yy:.1f}" '
                       f'stroke="{"#bbb" if m == 1 else "#eee"}"/>')
            out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{v:g}</text>')
    y1 = y(1.0)
    out.append(f'<line x1="{left}" x2="{w - right}" y1="{y1:.1f}" y2="{y1:.1f}" stroke="black" stroke-width="1.5"/>')
    for i, mname in enumerate(models):
        gx = left + i * group_w + 13
        for j, b in enumerate(batches):
            c = next((c for c in every if c["model"] == mname and c["batch"] == b), None)
            if c is None:
                continue
            s = c["summary"]
            x = gx + 24 * j
            if s.get("ratio_cpu") is None:  # no kiln time: a failed compile or run
                why = esc(short_paths("; ".join(c["errors"]) or c["check"]))
                out.append(f'<text x="{x + 10}" y="{y1 - 4:.1f}" text-anchor="middle" fill="red" '
                           f'font-weight="bold">x<title>{esc(mname)} b{b}: {why}</title></text>')
                continue
            yv = y(s["ratio_cpu"])
            top_y, hgt = min(yv, y1), abs(yv - y1)
            colour = COLOURS.get(b, "#999")
            out.append(f'<rect x="{x}" y="{top_y:.1f}" width="20" height="{max(hgt, 0.5):.1f}" fill="{colour}">'
                       f'<title>{esc(mname)} b{b}: {s["ratio_cpu"]:.3g} ({s["ratio_cpu_min"]:.3g}-{s["ratio_cpu_max"]:.3g})'
                       f'</title></rect>')
            out.append(f'<line x1="{x + 10}" x2="{x + 10}" y1="{y(s["ratio_cpu_min"]):.1f}" '
                       f'y2="{y(s["ratio_cpu_max"]):.1f}" stroke="black"/>')
            if s.get("ratio"):
                out.append(f'<circle cx="{x + 10}" cy="{y(s["ratio"]):.1f}" r="3" fill="white" '
                           f'stroke="black"><title>wall-clock ratio {s["ratio"]:.3g}</title></circle>')
            if c["check"] != "ok":
                out.append(f'<text x="{x + 10}" y="{top - 4}" text-anchor="middle" fill="red" '
                           f'font-weight="bold">!</text>')
        lx = gx + 12 * len(batches) - 2
        out.append(f'<text x="{lx}" y="{h - bottom + 12}" text-anchor="end" '
                   f'transform="rotate(-40 {lx} {h - bottom + 12})">{esc(mname)}</text>')
    lx = left
    for b in batches:
        out.append(f'<rect x="{lx}" y="{h - 18}" width="12" height="12" fill="{COLOURS.get(b, "#999")}"/>')
        out.append(f'<text x="{lx + 16}" y="{h - 8}">batch {b}</text>')
        lx += 80
    out.append("</svg>")
    return "\n".join(out) + "\n"


def passes_table(results):
    rows = ["| model | batch | " + " | ".join(f"pass {p + 1}: kiln / ORT (ratio; CPU ratio)" for p in
                                            range(results["method"]["passes"])) + " |",
            "|---|---:|" + "---:|" * results["method"]["passes"]]
    for c in results["cells"]:
        cols = []
        for p in c["passes"]:
            k, o = p.get("kiln"), p.get("ort")
            r = (f" ({fmt_ratio(k['median_ns'] / o['median_ns'])}; "
                 f"{fmt_ratio(k['cpu_median_ns'] / o['cpu_median_ns']) if o.get('cpu_median_ns') else '-'})"
                 if k and o else "")
            cols.append(f"{fmt_time(k['median_ns']) if k else '-'} / {fmt_time(o['median_ns']) if o else '-'}{r}")
        rows.append(f"| {c['model']} | {c['batch']} | " + " | ".join(cols) + " |")
    return "\n".join(rows)


def summary_lines(results):
    cells = [c for c in results["cells"] if c["summary"].get("ratio_cpu") is not None and c["model"] != "_probe_add"
             and "+" not in c["model"]]   # opt-in variants (NAME+fp16w) are rows of their own, not counted
    if not cells:
        return "No cell has both engines' times."
    lines = []
    for key, what in (("ratio_cpu", "CPU time"), ("ratio", "wall-clock time")):
        rs = sorted(c["summary"][key] for c in cells if c["summary"].get(key) is not None)
        if not rs:
            continue
        med = rs[len(rs) // 2] if len(rs) % 2 else 0.5 * (rs[len(rs) // 2 - 1] + rs[len(rs) // 2])
        lines.append(f"- kiln/ORT by {what} over {len(rs)} cells: {fmt_ratio(rs[0])} to {fmt_ratio(rs[-1])}, "
                     f"median {fmt_ratio(med)}; kiln is faster in {sum(1 for r in rs if r < 1)} of them.")
    best = max(cells, key=lambda c: c["summary"]["kiln_peak_pct"] or 0)
    if best["summary"]["kiln_peak_pct"]:
        lines.append(f"- kiln's best arithmetic rate: {best['summary']['kiln_gflops']:.1f} GFLOP/s "
                     f"({best['summary']['kiln_peak_pct']:.1f}% of peak) on {best['model']} b{best['batch']}.")
    probe = next((c for c in results["cells"] if c["model"] == "_probe_add"), None)
    if probe and probe["summary"].get("ort_cpu_ns"):
        lines.append(f"- Per-call floor (`_probe_add`, y = x + 1 on [1,32]): ORT {fmt_time(probe['summary']['ort_cpu_ns'])} "
                     f"CPU, {fmt_time(probe['summary']['ort_ns'])} wall-clock (Node binding and session run), "
                     f"kiln {fmt_time(probe['summary']['kiln_cpu_ns'])} CPU; "
                     f"RSS growth of an ORT session with no weights: {fmt_mib(probe['summary']['ort_rss'])}.")
    bad = [c for c in results["cells"] if c["check"] != "ok" or c["errors"]]
    lines.append(f"- Output check: {len(results['cells']) - len(bad)} of {len(results['cells'])} cells ran and match ORT "
                 f"(max |kiln - ORT| <= {results['method']['atol']:g} + {results['method']['rtol']:g} x max |ORT|)"
                 + ("." if not bad else "; see Problems below."))
    return "\n".join(lines)


def page(results, svg_name, before=None, source="build/bench/results.json", note=None):
    m, me, pk = results["machine"], results["method"], results["peak"]
    dirty = " plus uncommitted changes to compiler/, runtime/ or include/" if m["kiln_dirty"] else ""
    peak_s = ", ".join(f"{isa} {pk['before'][isa]['median']:.1f} / {pk['after'][isa]['median']:.1f}"
                       for isa in ("avx512", "avx2") if isa in pk["before"] and isa in pk["after"])
    wall_s = ", ".join(f"{isa} {pk['before'][isa].get('wall_best', 0):.1f} / {pk['after'][isa].get('wall_best', 0):.1f}"
                       for isa in ("avx512", "avx2") if isa in pk["before"] and isa in pk["after"])
    out = [
        "# Performance: kiln against ONNX Runtime",
        "",
        f"<!-- Generated by bench/report.py from {source}; do not edit by hand. -->",
        "",
    ] + ([note, ""] if note else []) + [
        f"Measured by `bench/compare.sh` on kiln commit **{m['kiln_commit']}** (\"{esc(m['kiln_subject'])}\"){dirty}, "
        f"{me['started']} to {me['finished']}, kiln kernel variant `{me['kiln_isa']}`"
        + (f" (forced by KILN_ISA={me['KILN_ISA']})" if me.get("KILN_ISA") else "") + ", against ONNX Runtime "
        f"{m['ort']} (npm onnxruntime-node, Node {m['node']}). Regenerate with:",
        "",
        "    bench/compare.sh && bench/report.py",
        "",
        "(bench/README.md explains the options and every column.)",
        "",
        "## Summary",
        "",
        summary_lines(results),
        "",
        "## Table",
        "",
    ]
    if before:
        bm = before["machine"]
        out += [f"`before` is kiln/ORT measured on kiln commit {bm['kiln_commit']} (\"{esc(bm['kiln_subject'])}\"), "
                f"{before['method']['started']}, by the same script.", ""]
    out += [
        "`kiln` and `ORT` are CPU times per call (the process's CPU time, which leaves out the time it "
        "waited while another process held the core; the median over the passes of each run's median); "
        "`kiln/ORT` is the median of the per-pass ratios of those, with their min-max (the noise); "
        "`wall-clock kiln/ORT` the same with wall-clock times (every pass's wall-clock medians are below). "
        "GFLOP/s counts the dense FLOPs (MatMul/Gemm/Conv/LSTM/Einsum) "
        "per sample from models.json over CPU time; `% peak` is against the single-core FMA peak measured "
        f"the same way ({pk['gflops']:.1f} GFLOP/s). RSS growth is resident memory after the timed calls "
        "minus before the model was loaded or the session created, with `(x w)` its ratio to the weight "
        "bytes. A row `NAME+fp16w` is NAME compiled with the opt-in `--weights-dtype fp16` (weights stored "
        "as float16 and widened as they are read; ORT runs the float32 model): its `max abs diff` is the "
        "float16 rounding, and the summary above leaves such rows out.",
        "",
        table(results, before),
        "",
        f"![kiln/ORT per model and batch]({svg_name})",
        "",
        "## Every pass",
        "",
        "Wall-clock median per call of each engine in each pass, that pass's ratio, and its CPU-time ratio. "
        "Within a pass the two engines ran one after the other (kiln first in odd passes, ORT first in even "
        "ones).",
        "",
        passes_table(results),
        "",
        "## Machine",
        "",
        f"- CPU: {esc(m['cpu'])}, {m['ncpu']} logical cores, kernel {esc(m['kernel'])}; "
        f"flags {', '.join(m['isa'])}.",
        f"- Single-core fp32 FMA peak (bench/peak.c, by CPU time, median of 5 runs, before / after the cells): "
        f"{peak_s} GFLOP/s; by wall-clock time the best was {wall_s} GFLOP/s, the difference being the share "
        "of the core other processes took. The host's clock varies from run to run, and the peak with it.",
        f"- C compiler: {esc(m['cc'])}; load average when the run started: "
        f"{' '.join(m['loadavg']) if m.get('loadavg') else '?'}.",
        "",
        "## Method",
        "",
        f"- Each engine runs in its own process pinned to core {me['core']} (`taskset`): kiln through "
        "bench/kiln_time.c linked with the model compiled by `kiln compile MODEL --batch B` (its default "
        "-O2), ORT through bench/ort_time.js with one intra-op and one inter-op thread, "
        "graphOptimizationLevel 'all', sequential execution; the timed ORT call is `await session.run()`, "
        "binding included.",
        f"- {me['passes']} passes per cell in one run, the engines alternating. Each run warms up (at least "
        f"one call and {0.2 * me['min_time_s']:g} s), then times calls until at least {me['min_calls']} calls "
        f"and {me['min_time_s']:g} s (a call longer than {me.get('slow_s', 10 * me['min_time_s']):g} s is timed once; kiln "
        "times calls under 20 us in groups).",
        "- Both engines read the same inputs (make_models.py's own generators, fixed seeds); kiln's outputs "
        "are compared with ORT's after the first pass, and kiln's passes with each other (determinism).",
        "- The machine is shared (other processes compile on the other core and sometimes on this one) and "
        "the host clock drifts, so absolute times move by tens of percent between runs: compare ratios "
        "from one run, not times across runs.",
    ]
    bad = [c for c in results["cells"] if c["check"] != "ok" or c["errors"]]
    if bad:
        out += ["", "## Problems", ""]
        for c in bad:
            for e in c["errors"] or [c["check"]]:
                out.append(f"- **{c['model']} b{c['batch']}**: {esc(short_paths(e))}")
    if before:
        bm, bme = before["machine"], before["method"]
        out += ["", f"## Before: kiln {bm['kiln_commit']}", "",
                f"The `before` run, measured the same way on kiln commit {bm['kiln_commit']} "
                f"(\"{esc(bm['kiln_subject'])}\"), {bme['started']} to {bme['finished']}, kernel variant "
                f"`{bme['kiln_isa']}`, FMA peak {before['peak']['gflops']:.1f} GFLOP/s:", "",
                summary_lines(before), "", table(before)]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description="docs/performance.md from bench results")
    ap.add_argument("results", nargs="?", default=os.path.join(ROOT, "build", "bench", "results.json"))
    ap.add_argument("--before", help="another run's results.json: its kiln/ORT ratios as a column")
    ap.add_argument("--note", help="a paragraph to put under the title")
    ap.add_argument("--md", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--svg", default=None, help="default: beside --md, same name with .svg")
    args = ap.parse_args()
    results = json.load(open(args.results))
    svg = args.svg or os.path.splitext(args.md)[0] + ".svg"
    with open(svg, "w") as f:
        f.write(svg_plot(results))
    with open(args.md, "w") as f:
        src = os.path.relpath(os.path.abspath(args.results), ROOT)
        f.write(page(results, os.path.relpath(svg, os.path.dirname(os.path.abspath(args.md))),
                     json.load(open(args.before)) if args.before else None, src, args.note))
    print(f"report: wrote {args.md} and {svg}")


if __name__ == "__main__":
    main()
