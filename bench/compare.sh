#!/bin/sh
# kiln against ONNX Runtime 1.30 on one core, alternating, several passes:
#
#   bench/compare.sh [--models a,b] [--batches 1,16,256] [--passes 3]
#                    [--min-time S] [--min-calls N] [--slow S] [--core C] [--out DIR]
#                    [--kiln-root CHECKOUT] [--baseline CHECKOUT]
#
# Builds kiln (scripts/build.sh) if build/compiler/kiln is missing, installs
# ONNX Runtime from npm (scripts/install-ort.sh; bench-only), makes the
# workloads with bench/make_models.py into build/bench/models if missing, and
# runs bench/compare.py, which prints the table and writes
# build/bench/results.{json,csv,md}. `bench/report.py` then rewrites
# docs/performance.md. See bench/README.md.
set -eu
cd "$(dirname "$0")/.."
[ -x build/compiler/kiln ] && [ -f build/runtime/libkiln.a ] || scripts/build.sh build >&2
NODE_PATH=$(scripts/install-ort.sh) || { echo "compare: ONNX Runtime is needed (scripts/install-ort.sh failed)" >&2; exit 1; }
export NODE_PATH
exec /usr/bin/python3 bench/compare.py "$@"
