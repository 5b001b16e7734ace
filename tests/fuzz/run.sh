#!/bin/sh
# Run one libFuzzer target of tests/fuzz for a while.
#   usage: tests/fuzz/run.sh TARGET SECONDS [BUILD_DIR]
#   TARGET: load (the loader), plan (load + shapes + plan), emit (+ generated C)
# The targets are built in the clang sanitizer build (BUILD_DIR, default
# build-asan: see scripts/test.sh). The corpus grows in
# BUILD_DIR/tests/fuzz/corpus-TARGET, seeded from tests/fixtures and the
# libonnx-testdata models; a crash is saved as BUILD_DIR/tests/fuzz/crash-*
# and makes the script exit non-zero. Reproduce one with
#   BUILD_DIR/tests/fuzz/fuzz_TARGET CRASH_FILE
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 load|plan|emit SECONDS [BUILD_DIR]" >&2; exit 2; }
T=$1 SECS=$2 B=${3:-$SRC/build-asan}
EXE=$B/tests/fuzz/fuzz_$T
TESTDATA=${KILN_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -x "$EXE" ]; then
	echo "run.sh: $EXE is not built (a clang build with libFuzzer: scripts/test.sh makes build-asan)" >&2
	exit 2
fi
OUT=$B/tests/fuzz
mkdir -p "$OUT/corpus-$T"
SEEDS="$SRC/tests/fixtures"
[ -d "$TESTDATA" ] && SEEDS="$SEEDS $TESTDATA"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# shellcheck disable=SC2086  # SEEDS: several folders
exec "$EXE" -max_total_time="$SECS" -max_len=65536 -timeout=20 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$OUT/" "$OUT/corpus-$T" $SEEDS
