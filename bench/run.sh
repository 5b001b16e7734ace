#!/bin/sh
# Time a model compiled by kiln: bench/run.sh [MODEL] [BATCHES] [REPS]
# Defaults: the jet tagger example, batch sizes 1,8,64,256, 200 calls each.
# KILN_FLAGS adds options to kiln compile (e.g. --no-pass=ewchain).
# Builds into build/bench/ with -O2 and prints median/p90 per call and the
# process's peak RSS. (The side-by-side comparison with ONNX Runtime comes
# with the fast-kernels issue.)
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:-examples/jet_tagger/model.onnx}
BATCHES=${2:-1,8,64,256}
REPS=${3:-200}
OUT=build/bench
build/compiler/kiln compile "$MODEL" --batch "$BATCHES" --name bench -o $OUT ${KILN_FLAGS:-} >/dev/null
${CC:-cc} -std=c11 -O2 -I$OUT -Iinclude bench/harness.c $OUT/bench.o build/runtime/libkiln.a \
	-lm -o $OUT/harness
echo "model: $MODEL"
$OUT/harness "$REPS"
