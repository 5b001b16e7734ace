#!/bin/sh
# Batch stitching end to end: usage: run.sh KILN SOURCE_ROOT LIBKILN_A OUTDIR
#  - compiles tests/batch/*.onnx at {1,4,16} and, as the direct computation,
#    at every size 1..70; runs test_batch.c (kiln_run for n = 0..70, costs,
#    rules, statuses, the model that mixes rows);
#  - `kiln compile` warns, naming the node, for a model that mixes rows, and
#    rejects bad --batch-rule values with one clear line;
#  - test_threads.c: 16 threads on one model, built with ThreadSanitizer
#    (or, in a sanitizer build, with that build's SANFLAGS).
set -u
KILN=$1 SRC=$2 LIBKILN=$3 OUT=$4
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
CCBIN=${CC:-cc}
M=$SRC/tests/batch
ALL=$(seq -s, 1 70)

compile() { # NAME MODEL ARGS...
	name=$1 model=$2
	shift 2
	"$KILN" compile "$model" --name "$name" -o "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1 \
		&& ok || { bad "compile $name"; cat "$OUT/$name.log"; }
}
compile rows "$M/rows.onnx" --batch 1,4,16
compile rows_ref "$M/rows.onnx" --batch "$ALL"
compile rows_baked "$M/rows.onnx" --batch 1,4,16 --batch-rule 7:1,1,1,4
compile seq "$M/seq.onnx" --batch 1,4,16 --batch-dim x=1
compile seq_ref "$M/seq.onnx" --batch "$ALL" --batch-dim x=1
compile mixes "$M/mixes.onnx" --batch 1,4
compile nibbles "$M/nibbles.onnx" --batch 1,4,16
compile nibbles_ref "$M/nibbles.onnx" --batch "$ALL"
compile nibbles_seq "$M/nibbles_seq.onnx" --batch 1,4,16 --batch-dim q=1
compile nibbles_seq_ref "$M/nibbles_seq.onnx" --batch "$ALL" --batch-dim q=1

# The compiler's verdicts.
grep -q 'context: [0-9]* bytes per thread for kiln_run (any batch size)' "$OUT/rows.log" \
	&& ok || bad "rows: no context line"
ctx=$(sed -n 's/^context: \([0-9]*\) bytes.*/\1/p' "$OUT/rows.log")
grep -q "^#define ROWS_CONTEXT_BYTES $ctx\$" "$OUT/rows/rows.h" && ok || bad "rows: NAME_CONTEXT_BYTES is not $ctx"
"$KILN" info --plan --batch 1,4,16 "$M/rows.onnx" | grep -q "^kiln_run context: $ctx bytes per thread" \
	&& ok || bad "rows: kiln info --plan does not report $ctx context bytes"
want='kiln: warning: '"$M"'/mixes.onnx: only the compiled batch sizes can run: node 1 "over_batch" (Softmax, ai.onnx opset 13): normalizes over the batch axis 0'
grep -qxF "$want" "$OUT/mixes.log" && ok || { bad "mixes: warning"; cat "$OUT/mixes.log"; }
grep -q warning "$OUT/rows.log" && bad "rows: unexpected warning" || ok
expect_error() { # LINE ARGS...
	line=$1
	shift
	got=$("$KILN" compile "$@" -o "$OUT/err" 2>&1 >/dev/null)
	st=$?
	[ $st -eq 2 ] && [ "$got" = "$line" ] && ok || bad "kiln compile $*: status $st, got '$got', want '$line'"
}
E="kiln: error: $M/rows.onnx: --batch-rule"
expect_error "$E \"5:3\": batch rule names a batch size that is not compiled" \
	"$M/rows.onnx" --batch 1,4,16 --batch-rule 5:3
expect_error "$E \"5\": batch rule syntax: expected B:s1,...,sk with positive decimal sizes" \
	"$M/rows.onnx" --batch 1,4,16 --batch-rule 5
expect_error "$E \"9:4,4\": batch rule sizes add up to less than its batch" \
	"$M/rows.onnx" --batch 1,4,16 --batch-rule 9:4,4
expect_error "$E \"5:4,1,4\": batch rule pads as many rows as its last size or more" \
	"$M/rows.onnx" --batch 1,4,16 --batch-rule 5:4,1,4
expect_error "$E \"5:1,4\": batch 5 has a rule already" \
	"$M/rows.onnx" --batch 1,4,16 --batch-rule 5:4,1 --batch-rule 5:1,4
expect_error "kiln: error: $M/mixes.onnx: --batch-rule \"3:4\": the model is not batch independent: node 1 \"over_batch\" (Softmax, ai.onnx opset 13): normalizes over the batch axis 0" \
	"$M/mixes.onnx" --batch 1,4 --batch-rule 3:4

got=$("$KILN" info --batch-rule 5:4,1 "$M/rows.onnx" 2>&1)
[ "$got" = "kiln: error: --batch-rule goes with 'compile', not 'info'
Try 'kiln --help'." ] && ok || bad "--batch-rule with info: got '$got'"

# The batch-independence verdicts of `kiln info --plan` (compiler/batchdep.c).
verdict() { # MODEL LINE [ARGS... instead of --batch 1,4]
	model=$1 line=$2
	shift 2
	[ $# -gt 0 ] || set -- --batch 1,4
	got=$("$KILN" info --plan "$@" "$M/$model.onnx" 2>&1 | grep '^batch independent:')
	[ "$got" = "$line" ] && ok || bad "$model: got '$got', want '$line'"
}
Y="batch independent: yes, any batch size can be stitched"
N="batch independent: no, only the compiled sizes run:"
verdict ok_shape_reshape "$Y"
verdict ok_conv "$Y"
verdict rows "$Y"
verdict mix_reduce "$N node 0 \"mean_over_jets\" (ReduceMean, ai.onnx opset 13): reduces over the batch axis 0"
verdict mix_matmul "$N node 1 \"gram\" (MatMul, ai.onnx opset 13): contracts over the batch axis (of its first input)"
verdict mix_concat "$N node 0 \"twice\" (Concat, ai.onnx opset 13): concatenates along the batch axis 0"
verdict mix_reshape "$N node 0 \"columns\" (Reshape, ai.onnx opset 13): reshapes across the batch axis 0: samples' elements would interleave"
verdict mix_size "$N node 2 \"per_batch\" (Div, ai.onnx opset 13): input 1 \"sf\" depends on the batch size"
verdict mix_shape_out "$N node 1 \"shape\" (Shape, ai.onnx opset 13): graph output \"y\" depends on the batch size"
verdict mix_unknown "$N node 0 \"pick\" (Compress, ai.onnx opset 13): kiln's batch analysis does not know Compress, so it may mix rows"
verdict ok_per_sample "$Y"
verdict mix_mvn "$N node 0 \"mvn\" (MeanVarianceNormalization, ai.onnx opset 13): normalizes over the batch axis 0"
verdict ok_lpnorm "$Y"
verdict mix_lpnorm "$N node 0 \"lp_over_jets\" (LpNormalization, ai.onnx opset 13): normalizes over the batch axis 0"
verdict mix_roipool "$N node 0 \"roi_pool\" (MaxRoiPool, ai.onnx opset 13): each ROI reads the image its batch index (column 0 of rois) names"
# The reason names what the fused op does (its record's `along`), not TopK's "sorts".
verdict mix_select "$N node \"select_samples\" (the KilnSelect the optimizer made of it): selects columns along the batch axis 1" \
	--batch 2 --batch-dim x=1

INC="-I$SRC/include -I$OUT/rows -I$OUT/rows_ref -I$OUT/rows_baked -I$OUT/seq -I$OUT/seq_ref -I$OUT/mixes"
OBJS="$OUT/rows/rows.o $OUT/rows_ref/rows_ref.o $OUT/rows_baked/rows_baked.o $OUT/seq/seq.o $OUT/seq_ref/seq_ref.o $OUT/mixes/mixes.o"
for n in nibbles nibbles_ref nibbles_seq nibbles_seq_ref; do
	INC="$INC -I$OUT/$n"
	OBJS="$OBJS $OUT/$n/$n.o"
done
# shellcheck disable=SC2086  # INC, OBJS and SANFLAGS are word lists
if $CCBIN -std=c11 -O1 -g -Wall -Wextra -Werror ${SANFLAGS:-} $INC "$M/test_batch.c" $OBJS "$LIBKILN" \
	-lm -o "$OUT/test_batch"; then
	ok
	"$OUT/test_batch" && ok || bad "test_batch"
else
	bad "build test_batch"
fi

# Threads. ThreadSanitizer needs every racing access instrumented: the
# generated code and libkiln's run.c are built from source here; the
# kernels (stateless) come from libkiln.a.
if [ -z "${SANFLAGS:-}" ]; then
	TFLAGS="-fsanitize=thread"
	TSRC="$OUT/rows/rows.c $OUT/rows/rows_weights.o $OUT/seq/seq.c $OUT/seq/seq_weights.o $SRC/runtime/run.c $SRC/runtime/status.c"
else
	TFLAGS=$SANFLAGS
	TSRC="$OUT/rows/rows.o $OUT/seq/seq.o"
fi
# shellcheck disable=SC2086
if $CCBIN -std=c11 -O1 -g -Wall -Wextra -Werror $TFLAGS -pthread $INC "$M/test_threads.c" $TSRC \
	"$LIBKILN" -lm -o "$OUT/test_threads"; then
	ok
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 "$OUT/test_threads" 60 && ok || bad "test_threads"
else
	bad "build test_threads ($TFLAGS)"
fi

tally batch
