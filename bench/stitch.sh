#!/bin/sh
# Batch stitching versus exact compilation: bench/stitch.sh [MODEL] [SIZES] [NMAX] [REPS] [calibrate]
# Defaults: the jet tagger, compiled sizes 1,4,16,64,256, n = 1..256, 51 calls
# per median. Compiles MODEL at SIZES (run through kiln_run) and at every
# size 1..NMAX (called directly), then prints per n the time per sample of
# both, of the same chunk sizes called directly, and the overheads
# (bench/stitch.c). Float32 inputs only. Builds into build/bench-stitch/.
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:-examples/jet_tagger/model.onnx}
SIZES=${2:-1,4,16,64,256}
NMAX=${3:-256}
REPS=${4:-51}
CAL=${5:-}
OUT=build/bench-stitch
KILN=${KILN:-build/compiler/kiln}
mkdir -p $OUT
$KILN compile "$MODEL" --batch "$SIZES" --name stitch -o $OUT/stitch >/dev/null
$KILN compile "$MODEL" --batch "$(seq -s, 1 "$NMAX")" --name exact -o $OUT/exact >/dev/null
${CC:-cc} -std=c11 -O2 -I$OUT/stitch -I$OUT/exact -Iinclude bench/stitch.c $OUT/stitch/stitch.o \
	$OUT/exact/exact.o "${LIBKILN:-build/runtime/libkiln.a}" -lm -o $OUT/stitch-bench
echo "model: $MODEL"
$OUT/stitch-bench "$NMAX" "$REPS" $CAL
