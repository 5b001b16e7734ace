#!/bin/sh
# Control flow (If, Loop, Scan): the fixture cases compiled and run against
# numpy references, the exact one-line errors of the models kiln must
# reject, and outer weights stored once. The fixtures come from
# tests/fixtures/make_control_fixtures.py.
# usage: run.sh KILN FIXTURE_DIR   (FIXTURE_DIR = tests/fixtures/control)
set -u
KILN=$1
FIX=$2
pass=0
fail=0
out=$(mktemp) err=$(mktemp) dir=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$dir"' EXIT
. "$(cd "$(dirname "$0")/../cli" && pwd)/expect.sh"
cd "$FIX" || exit 2

# check NAME COMMAND...: the command must succeed.
check() {
	name=$1
	shift
	if "$@" >/dev/null 2>&1; then
		pass=$((pass + 1))
	else
		echo "FAIL: $name"
		fail=$((fail + 1))
	fi
}

# ---- cases that must compile, run and match their references
expect 0 "" -- verify loop_unrolled loop_runtime_cond loop_swap scan_axes scan8_batch nested if_static \
	loop_edges if_folded
grep -q "^verify: 9 passed, 0 failed, 0 skipped$" "$out" && pass=$((pass + 1)) || {
	echo "FAIL: verify summary:"; cat "$out"; fail=$((fail + 1)); }

# ---- models kiln must reject, with one line naming the node
E="kiln: error:"
expect 2 "$E bad_loop_grows.onnx: node 0 \"grower\" (Loop, ai.onnx opset 13): body changes the shape of loop-carried value \"v_in\" from [2] to [3] (output \"v_out\"); kiln needs the same shapes in every iteration (batch 1)" -- info --batch 1 bad_loop_grows.onnx
expect 2 "$E bad_if_shapes.onnx: node 0 \"pick\" (If, ai.onnx opset 13): input 0 \"c\" must be known at compile time: it decides the shape of output 0 ([4] in then_branch, [2] in else_branch) (--freeze c=V0,V1,...) (batch 1)" -- info --batch 1 bad_if_shapes.onnx
expect 2 "$E bad_loop_trip_input.onnx: node 1 \"loop\" (Loop, ai.onnx opset 13): input 0 \"trips\" is computed from graph input \"n\", which must be known at compile time (the trip count) (--freeze n=V0,V1,...) (batch 1)" -- info --batch 1 bad_loop_trip_input.onnx
expect 2 "$E bad_loop_scan_cond.onnx: node 0 \"loop\" (Loop, ai.onnx opset 13): the body computes its condition at run time, so the number of iterations, which decides the shape of the scan outputs, is not known at compile time (batch 1)" -- info --batch 1 bad_loop_scan_cond.onnx
expect 2 "$E bad_loop_grows.onnx: node 0 \"grower\" (Loop, ai.onnx opset 13): body changes the shape of loop-carried value \"v_in\" from [2] to [3] (output \"v_out\"); kiln needs the same shapes in every iteration (batch 1)" -- compile --batch 1 -o "$dir/bad" bad_loop_grows.onnx

# ---- an outer weight used by the main graph, a Loop body and an If branch
# inside it is one symbol of the weights object, read by all three.
check "compile nested" "$KILN" compile --batch 1 --name nested -o "$dir/nested" nested/model.onnx
check "W is stored once" test "$(grep -c '^extern const unsigned char nested_w[0-9]*_W\[\]' "$dir/nested/nested.c")" -eq 1
sym=$(sed -n 's/^extern const unsigned char \(nested_w[0-9]*_W\)\[\].*/\1/p' "$dir/nested/nested.c")
check "the branches read W" grep -q "^static int b1_n000_body_n002_then_n000_plus_w(" "$dir/nested/nested.c"
check "W is read at every level" test "$(grep -c "(const float \*)$sym;" "$dir/nested/nested.c")" -eq 3
check "the weights object holds W once" test "$(nm "$dir/nested/nested_weights.o" | grep -c "$sym")" -eq 1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
