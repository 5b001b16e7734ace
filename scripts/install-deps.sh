#!/bin/sh
# Installs every Debian package that kiln's build and test suite need, and nothing else.
# Idempotent: packages already present are left alone; safe to run again.
#
#   build:  meson, ninja, a C compiler, protobuf-c (library + protoc-c),
#           libonnx-dev (for /usr/include/onnx/onnx.proto), LLVM-C (llvm-dev)
#   tests:  libonnx-testdata (the ONNX backend suite), python3-onnx and
#           python3-numpy (fixture generators), python3-torch and
#           python3-torchvision (models exported by the tests and bench/),
#           python3-xgboost and python3-sklearn (tree ensembles), nodejs and
#           npm (ONNX Runtime from the npm registry: scripts/install-ort.sh),
#           libclang-rt-14-dev (sanitizer and libFuzzer runtimes), cmake,
#           g++ and make (the integration suite builds the examples against
#           an installed kiln), gcc-aarch64-linux-gnu, libc6-dev-arm64-cross
#           and qemu-user (the memory suite cross-compiles a model for
#           aarch64 and runs it under qemu-aarch64), python3-dev (the kiln
#           Python module), python3-dask and python3-distributed (the
#           examples/dask_jets test)
set -eu

PKGS="meson ninja-build pkg-config gcc clang
      protobuf-c-compiler libprotobuf-c-dev libonnx-dev llvm-dev
      libonnx-testdata python3-onnx python3-numpy
      python3-torch python3-torchvision python3-xgboost python3-sklearn
      libclang-rt-14-dev cmake g++ make
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      python3-dev python3-dask python3-distributed"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

# Node.js: the machine image may bring its own; Debian's otherwise.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
