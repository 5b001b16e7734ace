#!/bin/sh
# `kiln compile` end to end: usage: run.sh KILN SOURCE_ROOT LIBKILN_A OUTDIR
#  - the README's path: compile the example, link it with examples/jet_tagger/main.c
#    and libkiln, run it;
#  - generated C is warning-free under gcc and clang (-Wall -Wextra -Werror);
#  - output is deterministic: compiling twice gives identical .h, .c and weights object;
#  - --target aarch64-linux-gnu gives an AArch64 relocatable weights object,
#    with the weights in .ldata past KILN_LARGE_DATA_BYTES;
#  - each weight is stored once: the weights object's symbols hold the model's
#    unique weight bytes;
#  - bad flags give one clear line and exit 2.
set -u
KILN=$1 SRC=$2 LIBKILN=$3 OUT=$4
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
CCBIN=${CC:-cc}

# README path
"$KILN" compile "$SRC/examples/jet_tagger/model.onnx" --batch 1,8 --name jet_tagger -o "$OUT/jt" >/dev/null \
	&& ok || bad "compile jet_tagger"
# shellcheck disable=SC2086  # SANFLAGS: none, or one -fsanitize= flag
$CCBIN -std=c11 -Wall -Wextra -Werror ${SANFLAGS:-} -I"$OUT/jt" -I"$SRC/include" \
	"$SRC/examples/jet_tagger/main.c" "$OUT/jt/jet_tagger.o" "$LIBKILN" -lm -o "$OUT/jt/demo" \
	&& ok || bad "link the example"
if "$OUT/jt/demo" >"$OUT/jt/demo.out"; then
	grep -q "^event 3: 11 jets, run as " "$OUT/jt/demo.out" && grep -q "^  jet 10:" "$OUT/jt/demo.out" \
		&& ok || bad "example output"
else
	bad "example run"
fi

for m in "$SRC/examples/jet_tagger/model.onnx" "$SRC/tests/fixtures/mlp.onnx" \
         "$SRC/tests/fixtures/cnn.onnx" "$SRC/tests/fixtures/encoder.onnx"; do
	name=$(basename "$(dirname "$m")")_$(basename "$m" .onnx)
	for run in a b; do
		"$KILN" compile "$m" --batch 1,4,16 --name net -o "$OUT/$name.$run" >/dev/null \
			|| bad "compile $m"
	done
	for f in net.h net.c net_weights.o; do
		cmp -s "$OUT/$name.a/$f" "$OUT/$name.b/$f" && ok || bad "$name: $f differs between two compiles"
	done
	for c in gcc clang; do
		command -v $c >/dev/null || continue
		$c -std=c11 -Wall -Wextra -Werror -Wshadow -I"$SRC/include" -I"$OUT/$name.a" \
			-c "$OUT/$name.a/net.c" -o /dev/null && ok || bad "$name: $c warns"
	done
	# Weights stored once: symbol bytes == the model's unique weight bytes.
	want=$("$KILN" info --json "$m" | sed -n 's/.*"unique_weight_bytes": \([0-9]*\).*/\1/p')
	got=$(readelf -sW "$OUT/$name.a/net_weights.o" | awk '$8 ~ /^net_w/ {s += $3} END {print s + 0}')
	[ "$got" -gt 0 ] && [ "$got" -le "$want" ] && ok || bad "$name: weights object holds $got bytes, unique weights are $want"
done

# Cross target
"$KILN" compile "$SRC/tests/fixtures/mlp.onnx" --batch 2 --target aarch64-linux-gnu -o "$OUT/arm" >/dev/null \
	&& ok || bad "compile for aarch64"
readelf -h "$OUT/arm/mlp_weights.o" | grep -q "Machine:.*AArch64" && ok || bad "aarch64 weights object"
readelf -h "$OUT/arm/mlp_weights.o" | grep -q "Type:.*REL" && ok || bad "aarch64 object is not relocatable"
# Past the large-data threshold (forced to 0): one writable .ldata section,
# nothing in .rodata (tests/memory/large_weights_aarch64.py links and runs it).
KILN_LARGE_DATA_BYTES=0 "$KILN" compile "$SRC/tests/fixtures/mlp.onnx" --batch 2 \
	--target aarch64-linux-gnu -o "$OUT/arm-large" >/dev/null && ok || bad "large compile for aarch64"
readelf -S -W "$OUT/arm-large/mlp_weights.o" | grep -Eq '\.ldata +PROGBITS .* WA ' && ok \
	|| bad "aarch64 large weights are not in a writable .ldata section"
readelf -S -W "$OUT/arm-large/mlp_weights.o" | grep -Eq '\.rodata +PROGBITS +[0-9a-f]+ [0-9a-f]+ 0*[1-9a-f]' \
	&& bad "aarch64 large weights left bytes in .rodata" || ok

# Errors
expect() {
	want_line=$1
	shift
	got=$("$KILN" "$@" 2>&1 >/dev/null)
	rc=$?
	[ $rc -eq 2 ] && [ "$got" = "$want_line" ] && ok || bad "kiln $*: exit $rc, got '$got', want '$want_line'"
}
expect "kiln: error: compile needs --batch, e.g. --batch=1,8
Try 'kiln --help'." compile "$SRC/tests/fixtures/mlp.onnx"
expect "kiln: error: $SRC/tests/fixtures/mlp.onnx: --name \"1abc\" is not a C identifier" \
	compile "$SRC/tests/fixtures/mlp.onnx" --batch 1 --name 1abc -o "$OUT/x"
expect "kiln: error: $SRC/tests/fixtures/unsupported.onnx: node 1 \"svm\" (SVMRegressor, ai.onnx.ml opset 3): not supported by kiln yet" \
	compile "$SRC/tests/fixtures/unsupported.onnx" --batch 1 -o "$OUT/x"

tally
