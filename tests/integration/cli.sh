#!/bin/sh
# The CLI as an integrator meets it: usage: cli.sh KILN SOURCE_ROOT OUTDIR
#  - each command's --help is its own; -O 0 and -O0 both work;
#  - CC, CFLAGS and LD are the ones kiln compile runs; --no-cc runs none;
#  - a symbolic dim past axis 0 names --batch-dim; kiln check warns about
#    symbolic dims other than the batch, and --shape x=N,20,3 compiles them;
#    -v reports the compile's stages;
#  - a misspelled flag is answered with the nearest one; --shared;
#  - --dim SYMBOL=V; check's advice only for dims still open (--pad-check
#    binds one too); a --shape against the model's declared dims; a QONNX
#    model's nodes listed with a hint;
#  - --svg pictures labelled (axes in bytes and node names, largest buffers);
#    info --plan's stitching weights are not worded as times.
set -u
KILN=$1 SRC=$2 OUT=$3
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
M=$SRC/tests/fixtures/mlp.onnx

"$KILN" compile --help >"$OUT/h" 2>&1 && head -1 "$OUT/h" | grep -q '^usage: kiln compile MODEL' &&
	grep -q -- '--no-cc' "$OUT/h" && ! grep -q -- '--json' "$OUT/h" && ok || bad "compile --help: $(head -3 "$OUT/h")"
"$KILN" info --help >"$OUT/h" 2>&1 && head -1 "$OUT/h" | grep -q '^usage: kiln info MODEL' &&
	grep -q -- '--json' "$OUT/h" && ! grep -q -- '--no-cc' "$OUT/h" && ok || bad "info --help: $(head -3 "$OUT/h")"
"$KILN" --help | head -1 | grep -q '^usage: kiln <command>' && ok || bad "kiln --help"

"$KILN" compile "$M" --batch 2 -O 0 -o "$OUT/o_0" >/dev/null && ok || bad "-O 0"
"$KILN" compile "$M" --batch 2 -O0 -o "$OUT/o0" >/dev/null && ok || bad "-O0"
got=$("$KILN" compile "$M" --batch 2 -O 7 2>&1)
[ "$got" = "kiln: error: -O needs a level 0 to 3, got '7'
Try 'kiln --help'." ] && ok || bad "-O 7: $got"

# The tools kiln runs: a bad CFLAGS or LD makes it fail, naming them.
CFLAGS=-fno-such-flag-kiln "$KILN" compile "$M" --batch 2 -o "$OUT/cf" >"$OUT/cf.log" 2>&1 &&
	bad "CFLAGS is not passed to the C compiler" || ok
LD=false "$KILN" compile "$M" --batch 2 -o "$OUT/ld" >"$OUT/ld.log" 2>&1 && bad "LD is not used" ||
	{ grep -q "^kiln: error: .*false failed to merge" "$OUT/ld.log" && ok || bad "LD=false: $(cat "$OUT/ld.log")"; }
CC=false "$KILN" compile "$M" --batch 2 -o "$OUT/cc" >"$OUT/cc.log" 2>&1 && bad "CC is not used" || ok
CC=false LD=false "$KILN" compile "$M" --batch 2 --no-cc -o "$OUT/nocc" >/dev/null &&
	[ -f "$OUT/nocc/mlp.h" ] && [ -f "$OUT/nocc/mlp.c" ] && [ -f "$OUT/nocc/mlp_weights.o" ] &&
	[ ! -e "$OUT/nocc/mlp.o" ] && ok || bad "--no-cc"

# Names that would collide with libkiln's own symbols.
got=$("$KILN" compile "$M" --batch 2 --name kiln_context -o "$OUT/r" 2>&1)
[ "$got" = "kiln: error: $M: --name \"kiln_context\": names kiln and kiln_... are libkiln's own" ] &&
	ok || bad "--name kiln_context: $got"
cp "$M" "$OUT/kiln.onnx"
"$KILN" compile "$OUT/kiln.onnx" --batch 2 -o "$OUT/r" >/dev/null && [ -f "$OUT/r/m_kiln.h" ] &&
	ok || bad "kiln.onnx's default name is not m_kiln"

# A second symbolic axis.
/usr/bin/python3 - "$OUT" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
for name, shape in (("ax1", [4, "N"]), ("seq", ["N", "seq", 3])):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, "%s/%s.onnx" % (sys.argv[1], name))
PY
got=$("$KILN" compile "$OUT/ax1.onnx" --batch 2 -o "$OUT/ax1" 2>&1)
[ "$got" = "kiln: error: $OUT/ax1.onnx: graph input \"x\" dim 1 (N) is not static: if it is the batch axis, say so with --batch-dim x=1; else fix it with --shape x=..." ] &&
	ok || bad "batch axis 1: $got"
"$KILN" compile "$OUT/ax1.onnx" --batch 2 --batch-dim x=1 -o "$OUT/ax1" >/dev/null && ok || bad "--batch-dim x=1"
"$KILN" check "$OUT/seq.onnx" >"$OUT/check.out" 2>&1 &&
	grep -q "^$OUT/seq.onnx: graph input \"x\" has more than one symbolic dim: compile with --shape x=N,<seq>,3" "$OUT/check.out" &&
	ok || bad "check seq.onnx: $(cat "$OUT/check.out")"
"$KILN" compile "$OUT/seq.onnx" --batch 1,4 --shape x=N,20,3 -o "$OUT/seq" >/dev/null &&
	grep -q "^#define SEQ_IN0_ELEMS 60$" "$OUT/seq/seq.h" && grep -q "^#define SEQ_IN0_BATCH_AXIS 0$" "$OUT/seq/seq.h" &&
	ok || bad "the second-axis idiom"

# kiln info --plan --svg: valid SVG, one rectangle per arena buffer, names
# from the model escaped (a value named with markup).
/usr/bin/python3 - "$OUT" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
nodes = [helper.make_node("Relu", ["x"], ['<b a="1">&amp;</b>'], name="r1"),
         helper.make_node("Sigmoid", ['<b a="1">&amp;</b>'], ["y"], name="r2")]
g = helper.make_graph(nodes, "markup", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/markup.onnx")
PY
for model in "$SRC/tests/fixtures/encoder.onnx" "$OUT/markup.onnx"; do
	"$KILN" info --plan --batch 1,4 --svg "$OUT/plan.svg" "$model" >"$OUT/plan.txt" &&
	/usr/bin/python3 - "$OUT/plan.svg" "$OUT/plan.txt" <<'PY' && ok || bad "--svg of $model"
import re, sys
import xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
text = open(sys.argv[2]).read()
titles = [t.firstChild.data if t.firstChild else "" for t in doc.getElementsByTagName("text")]
want = re.findall(r"signature batch (\d+):\n  arena (\d+) bytes in (\d+) buffers \(lower bound (\d+) bytes\)", text)
got = [re.match(r"batch (\d+): arena (\d+) bytes in (\d+) buffers, lower bound (\d+) bytes", t) for t in titles]
got = [g.groups() for g in got if g]
assert want and got == want, (got, want)
# Named when rendered: the offset axis in bytes, steps with node names, and
# each panel's largest buffers labelled in the picture, not only on hover.
assert "arena offset (bytes)" in titles and "0 B" in titles, titles[:12]
arenas = [w[1] + " B" for w in want]
assert all(a in titles for a in arenas), arenas
assert sum(t.startswith("0 ") and t != "0 B" for t in titles) == len(want), titles
rects = [r for r in doc.getElementsByTagName("rect") if r.getElementsByTagName("title")]
panels, cur = [], None
for r in doc.documentElement.childNodes:
    if r.nodeType == r.ELEMENT_NODE and r.tagName == "text" and r.getAttribute("font-weight") == "bold":
        cur = []
        panels.append(cur)
    elif r.nodeType == r.ELEMENT_NODE and r.tagName == "rect" and r.getElementsByTagName("title"):
        title = r.getElementsByTagName("title")[0].firstChild.data
        label = r.nextSibling.nextSibling if r.nextSibling and r.nextSibling.nextSibling else None
        text = label.firstChild.data if label is not None and getattr(label, "tagName", "") == "text" and label.firstChild else ""
        cur.append((int(re.search(r": (\d+) bytes at", title).group(1)), title.split(":")[0], text))
for bufs in panels:
    for nbytes, name, text in sorted(bufs, key=lambda b: -b[0])[:3]:
        assert text.startswith(name[:8]), (name, text, nbytes)
PY
done
"$KILN" info --plan --batch 1,4 "$M" >"$OUT/cost.txt" &&
	grep -q "^stitching weights (.*not a time" "$OUT/cost.txt" && grep -q "^  batch 4: weight [0-9]* (" "$OUT/cost.txt" &&
	! grep -q " ns " "$OUT/cost.txt" && ok || bad "the cost model reads as a time: $(tail -3 "$OUT/cost.txt")"
"$KILN" info --svg "$OUT/x.svg" "$M" 2>/dev/null && bad "--svg without --plan" || ok

# Stages.
"$KILN" compile -v "$M" --batch 2 -o "$OUT/v" >/dev/null 2>"$OUT/v.err" &&
	grep -q "^kiln: model loaded: " "$OUT/v.err" && grep -q "^kiln: C compiled: " "$OUT/v.err" &&
	ok || bad "-v: $(cat "$OUT/v.err")"
"$KILN" compile "$M" --batch 2 -o "$OUT/q" >/dev/null 2>"$OUT/q.err" && [ ! -s "$OUT/q.err" ] &&
	ok || bad "a short compile printed: $(cat "$OUT/q.err")"

# --dim: one symbol fixed in every input (two inputs share P); check no longer
# repeats advice the flags follow; a --shape against a declared dim is named.
/usr/bin/python3 - "$OUT" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("Concat", ["points", "features"], ["y"], axis=1, name="cat")],
                      "pn", [helper.make_tensor_value_info("points", TensorProto.FLOAT, ["N", 2, "P"]),
                             helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", 4, "P"])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6, "P"])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/pn.onnx")
PY
"$KILN" check "$OUT/pn.onnx" >"$OUT/pn.check" && [ "$(grep -c 'compile with --shape' "$OUT/pn.check")" -eq 2 ] &&
	ok || bad "check without --dim: $(cat "$OUT/pn.check")"
"$KILN" check "$OUT/pn.onnx" --dim P=20 >"$OUT/pn.check2" && ! grep -q -- '--shape' "$OUT/pn.check2" &&
	ok || bad "check --dim P=20 repeats advice: $(cat "$OUT/pn.check2")"
for b in "" "--batch 1,4"; do   # --pad-check binds P too (with and without --batch)
	# shellcheck disable=SC2086
	"$KILN" check "$OUT/pn.onnx" --pad-check P=8,16 $b >"$OUT/pn.check4" &&
		grep -q 'padding on P proven harmless' "$OUT/pn.check4" && ! grep -q -- '--shape' "$OUT/pn.check4" &&
		ok || bad "check --pad-check P=8,16 $b repeats advice: $(cat "$OUT/pn.check4")"
done
"$KILN" check "$OUT/pn.onnx" --shape points=N,2,20 --shape features=N,4,20 >"$OUT/pn.check3" &&
	! grep -q -- '--shape' "$OUT/pn.check3" && ok || bad "check --shape repeats advice: $(cat "$OUT/pn.check3")"
"$KILN" compile "$OUT/pn.onnx" --batch 1,4 --dim P=20 -o "$OUT/pn" >/dev/null &&
	grep -q "PN_IN1_SHAPE {1, 4, 20}" "$OUT/pn/pn.h" && grep -q "PN_OUT0_SHAPE {1, 6, 20}" "$OUT/pn/pn.h" &&
	ok || bad "compile --dim P=20: $(grep SHAPE "$OUT/pn/pn.h")"
got=$("$KILN" compile "$OUT/pn.onnx" --batch 1 --dim Q=20 2>&1)
[ "$got" = "kiln: error: $OUT/pn.onnx: --dim names \"Q\", which is not a symbolic dim of any graph input" ] &&
	ok || bad "--dim Q: $got"
got=$("$KILN" compile "$OUT/pn.onnx" --batch 1 --shape features=N,5,20 --dim P=20 2>&1)
[ "$got" = "kiln: error: $OUT/pn.onnx: --shape features: dim 1 is 5; the model declares 4" ] &&
	ok || bad "--shape against a declared dim: $got"

# A QONNX model (Quant in qonnx.custom_op.general, with no opset import for
# that domain, as QONNX exports are): check lists the node, exit 1, with the hint.
/usr/bin/python3 - "$OUT" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
inits = [numpy_helper.from_array(np.float32(v), n) for v, n in ((0.1, "scale"), (0, "zeropt"), (4, "bitwidth"))]
nodes = [helper.make_node("Quant", ["x", "scale", "zeropt", "bitwidth"], ["q"], name="quant0",
                          domain="qonnx.custom_op.general", signed=1, narrow=0, rounding_mode="ROUND"),
         helper.make_node("Relu", ["q"], ["y"], name="relu")]
g = helper.make_graph(nodes, "qonnx", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1] + "/qonnx.onnx")
PY
"$KILN" check "$OUT/qonnx.onnx" >"$OUT/qonnx.check" 2>&1
st=$?
[ $st -eq 1 ] && grep -q '^'"$OUT"'/qonnx.onnx: node 0 "quant0" (Quant, qonnx.custom_op.general' "$OUT/qonnx.check" &&
	grep -q "hint: 1 QONNX node (Quant, BipolarQuant, Trunc, ...): convert Quant to QuantizeLinear/DequantizeLinear" "$OUT/qonnx.check" &&
	grep -q "1 of 2 nodes or interface values unsupported" "$OUT/qonnx.check" &&
	ok || bad "check of a QONNX model: exit $st: $(cat "$OUT/qonnx.check")"

# A misspelled flag gets the nearest one; a made-up one gets none.
for pair in "--shapes --shape" "--bacth --batch" "--batch-rules --batch-rule" "--no-c --no-cc" \
            "--weights-type --weights-dtype" "--sharde --shared" "--verison --version"; do
	set -- $pair
	got=$("$KILN" compile "$M" --batch 2 "$1" 2>&1 | head -1)
	[ "$got" = "kiln: error: unknown option '$1' (did you mean '$2'?)" ] && ok || bad "$1: $got"
done
got=$("$KILN" compile "$M" --batch 2 --frobnicate 2>&1 | head -1)
[ "$got" = "kiln: error: unknown option '--frobnicate'" ] && ok || bad "--frobnicate: $got"

# --shared: NAME.so exporting the entry points and kiln_shared_model() only.
"$KILN" compile "$M" --batch 1,2 --shared -o "$OUT/so" >"$OUT/so.log" &&
	grep -q "mlp.so (load this one)" "$OUT/so.log" && [ ! -e "$OUT/so/mlp.o" ] &&
	[ "$(nm -D --defined-only "$OUT/so/mlp.so" | awk '{ print $3 }' | sort | tr '\n' ' ')" = \
	  "kiln_shared_model mlp_model mlp_run mlp_run_b1 mlp_run_b2 " ] && ok ||
	bad "--shared: $(cat "$OUT/so.log"; nm -D --defined-only "$OUT/so/mlp.so" | head -20)"
"$KILN" compile "$M" --batch 1,2 -o "$OUT/noso" >/dev/null && ! grep -q kiln_shared_model "$OUT/noso/mlp.c" &&
	ok || bad "kiln_shared_model without --shared"
got=$("$KILN" compile "$M" --batch 2 --shared --no-cc 2>&1 | head -1)
[ "$got" = "kiln: error: --shared builds NAME.so for this host: not with --no-cc" ] && ok || bad "--shared --no-cc: $got"
got=$("$KILN" info "$M" --shared 2>&1 | head -1)
[ "$got" = "kiln: error: --export, --no-cc, --depfile, --shared and -v go with 'compile', not 'info'" ] && ok ||
	bad "info --shared: $got"

tally
