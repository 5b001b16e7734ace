#!/bin/sh
# The README's main job: inspect the bundled jet tagger, compile it to C,
# link it with a small C driver and libkiln, and run it on events of 0, 3, 8
# and 11 jets through kiln_run (compiled sizes 1 and 8, the others stitched
# and padded). Each step is printed before it runs, so you can copy them.
# Needs scripts/build.sh first.
set -eu
cd "$(dirname "$0")/.."
OUT=build/jet_tagger
run() { echo "+ $*"; "$@"; }
run build/compiler/kiln info examples/jet_tagger/model.onnx
run build/compiler/kiln check examples/jet_tagger/model.onnx
run build/compiler/kiln compile examples/jet_tagger/model.onnx --batch 1,8 --name jet_tagger -o $OUT
run ${CC:-cc} -std=c11 -O2 -I$OUT -Iinclude examples/jet_tagger/main.c $OUT/jet_tagger.o \
	build/runtime/libkiln.a -lm -o $OUT/demo
run $OUT/demo
