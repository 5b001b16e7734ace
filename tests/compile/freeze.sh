#!/bin/sh
# --freeze end to end: usage: freeze.sh KILN SOURCE_ROOT LIBKILN_A OUTDIR
#  - a model whose shapes depend on input values does not compile without
#    --freeze, and the error says which input to freeze and how;
#  - with the values frozen it compiles, runs right on those values and
#    refuses other values with KILN_FROZEN_INPUT;
#  - bad --freeze values give one clear line and exit 2.
set -u
KILN=$1 SRC=$2 LIBKILN=$3 OUT=$4
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
M=$SRC/tests/fixtures/range_inputs.onnx

err=$("$KILN" compile "$M" --batch 1 -o "$OUT" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && ok || bad "compile without --freeze exits $rc"
case $err in
*'input 0 "start" must be known at compile time (--freeze start=V0,V1,...)'*) ok ;;
*) bad "unfrozen error: $err" ;;
esac

"$KILN" compile "$M" --batch 1 --freeze start=1 --freeze limit=7 --freeze=delta=2 \
	--name range_inputs -o "$OUT" >/dev/null && ok || bad "compile with --freeze"
grep -q 'was frozen at compile time' "$OUT/range_inputs.c" && ok || bad "no run-time check in the C"
# shellcheck disable=SC2086
${CC:-cc} -std=c11 -Wall -Wextra -Werror ${SANFLAGS:-} -I"$OUT" -I"$SRC/include" \
	"$SRC/tests/compile/freeze_main.c" "$OUT/range_inputs.o" "$LIBKILN" -lm -o "$OUT/run" \
	&& ok || bad "link"
"$OUT/run" && ok || bad "run"

check_err() {  # expected-substring, then kiln arguments
	want=$1; shift
	e=$("$KILN" "$@" 2>&1 >/dev/null); rc=$?
	if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$e" | grep -c .)" -le 2 ] && \
	   printf '%s' "$e" | grep -qF -- "$want"; then ok; else bad "kiln $*: rc $rc: $e"; fi
}
check_err "'abc' is not a int64 value" compile "$M" --batch 1 -o "$OUT/x" --freeze limit=abc
check_err 'has 2 elements; its shape holds 1' compile "$M" --batch 1 -o "$OUT/x" --freeze start=1,2
check_err '--freeze names "nope", which is not a graph input' compile "$M" --batch 1 -o "$OUT/x" --freeze nope=1
check_err "--freeze needs INPUT=V0,V1,..., got 'limit'" compile "$M" --batch 1 -o "$OUT/x" --freeze limit
# check --freeze infers shapes as compile does: a finding on stdout, exit 1
out=$("$KILN" check "$M" --freeze limit=1 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$out" | grep -qF 'input 0 "start" must be known at compile time' \
	&& ok || bad "check with start not frozen: rc $rc: $out"
out=$("$KILN" check "$M" --freeze start=1 --freeze limit=7 --freeze=delta=2 2>&1); rc=$?
[ $rc -eq 0 ] && printf '%s' "$out" | grep -qF 'shapes inferred and buffers planned at batch 1' \
	&& ok || bad "check with all frozen: rc $rc: $out"
# OneHot's depth is named by its value (verify and --freeze find it by that name)
out=$("$KILN" check "$SRC/tests/fixtures/onehot_depth.onnx" --batch 1 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$out" | grep -qF \
	'input 1 "n_classes" must be known at compile time (--freeze n_classes=V0,V1,...)' \
	&& ok || bad "OneHot depth not frozen: rc $rc: $out"
out=$("$KILN" check "$SRC/tests/fixtures/onehot_depth.onnx" --batch 1 --freeze n_classes=4 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "OneHot depth frozen: rc $rc: $out"
check_err "'99999999999999999999' is not a int64 value" compile "$M" --batch 1 -o "$OUT/x" --freeze limit=99999999999999999999

tally freeze
