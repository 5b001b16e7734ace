#!/usr/bin/python3
"""Writes docs/integration.svg: how a model gets into a program (build flow)
and what one kiln_run context holds (memory layout, the jet tagger compiled
at batch sizes 1 and 8: KILN_CONTEXT_BYTES of run.h, 11648 bytes).
Plain SVG text, no dependencies, the same bytes on every run.

usage: /usr/bin/python3 scripts/gen-integration-svg.py [OUT.svg]
       (default docs/integration.svg; --check compares instead of writing)
"""
import os
import sys

W, H = 860, 420
out = []


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def box(x, y, w, h, lines, fill="#eef3fb", stroke="#3b5b8c", size=12):
    out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="%s"/>'
               % (x, y, w, h, fill, stroke))
    n = len(lines)
    for i, line in enumerate(lines):
        ty = y + h / 2 + (i - (n - 1) / 2) * (size + 3) + size * 0.35
        out.append('<text x="%d" y="%.1f" font-size="%d" text-anchor="middle">%s</text>'
                   % (x + w / 2, ty, size, esc(line)))


def arrow(x1, y1, x2, y2, label=None):
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333" marker-end="url(#a)"/>'
               % (x1, y1, x2, y2))
    if label:
        out.append('<text x="%d" y="%d" font-size="11" text-anchor="middle" fill="#555">%s</text>'
                   % ((x1 + x2) / 2, min(y1, y2) - 5, esc(label)))


def text(x, y, s, size=14, weight="bold", anchor="start"):
    out.append('<text x="%d" y="%d" font-size="%d" font-weight="%s" text-anchor="%s">%s</text>'
               % (x, y, size, weight, anchor, esc(s)))


out.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Arial, sans-serif">' % (W, H, W, H))
out.append('<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>')
out.append('<rect width="100%" height="100%" fill="white"/>')

# ---- build flow
text(20, 28, "Build: ONNX -> kiln -> your library (kiln_add_model, or by hand)")
box(20, 60, 120, 50, ["model.onnx"], fill="#fff6e5", stroke="#a66b00")
box(190, 60, 130, 50, ["kiln compile", "--batch 1,8 --no-cc"], fill="#e8f5e9", stroke="#2e7d32")
box(370, 42, 150, 26, ["NAME.h (constants)"], size=11)
box(370, 72, 150, 26, ["NAME.c (code)"], size=11)
box(370, 102, 150, 26, ["NAME_weights.o"], size=11)
box(570, 60, 120, 50, ["libNAME.a", "(your C compiler)"])
box(730, 50, 110, 70, ["plugin.so", "+ libkiln.a", "(symbols hidden)"], fill="#f3e5f5", stroke="#6a1b9a")
arrow(140, 85, 190, 85)
arrow(320, 85, 370, 55)
arrow(320, 85, 370, 85)
arrow(320, 85, 370, 115)
arrow(520, 85, 570, 85, "cc")
arrow(690, 85, 730, 85)
out.append('<text x="20" y="150" font-size="11" fill="#555">Every symbol of the model (weights, '
           'NAME_model, NAME_run*) and of libkiln.a is hidden:</text>')
out.append('<text x="20" y="166" font-size="11" fill="#555">two plugins with models of the same '
           'NAME never see each other, even loaded with RTLD_GLOBAL.</text>')

# ---- context memory
text(20, 200, "One context (per thread): jet tagger at batch sizes 1 and 8, 11648 bytes")
parts = [  # (label, bytes, fill)
    ("slack", 64, "#eeeeee"),
    ("header", 4096, "#e3f2fd"),
    ("costs", 64, "#fff3e0"),
    ("plans (n <= 256)", 2624, "#fff3e0"),
    ("staging", 704, "#fce4ec"),
    ("arena", 4096, "#e8f5e9"),
]
total = sum(p[1] for p in parts)
x0, width, y = 20, 820, 225
x = x0
for label, b, fill in parts:
    w = max(26, round(width * b / total))
    if label == "arena":
        w = x0 + width - x
    box(x, y, w, 50, [label, str(b)] if w > 60 else [str(b)], fill=fill, stroke="#555", size=11)
    if w <= 60:
        out.append('<text x="%d" y="%d" font-size="10" text-anchor="middle" fill="#555">%s</text>'
                   % (x + w / 2, y + 64, esc(label)))
    x += w
notes = [
    "header: the model (its identity, checked by NAME_run), rules, pointers; plans: the chunk sizes of every n up to the bound;",
    "staging: the one padded chunk's inputs and outputs; arena: the largest compiled batch's temporaries (static plan).",
    "Weights are not here: read-only, once per process. Several models run in turn share one memory of the largest",
    "context bytes (max of NAME_CONTEXT_BYTES, or kiln_context_bytes_max at run time), not their sum.",
]
for i, n in enumerate(notes):
    out.append('<text x="20" y="%d" font-size="11" fill="#333">%s</text>' % (312 + 18 * i, esc(n)))
out.append("</svg>")
svg = "\n".join(out) + "\n"

args = [a for a in sys.argv[1:] if a != "--check"]
path = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs",
                                         "integration.svg")
if "--check" in sys.argv:
    with open(path) as f:
        if f.read() != svg:
            sys.exit("%s is out of date: run scripts/gen-integration-svg.py" % path)
    print("%s is up to date" % path)
else:
    with open(path, "w") as f:
        f.write(svg)
