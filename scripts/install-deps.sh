#!/bin/sh
# Installs every Debian package that kiln's build and test suite need, and nothing else.
# Idempotent: packages already present are left alone; safe to run again.
#
#   build:  meson, ninja, a C compiler, protobuf-c (library + protoc-c),
#           libonnx-dev (for /usr/include/onnx/onnx.proto), LLVM-C (llvm-dev)
#   tests:  libonnx-testdata (the ONNX backend suite), python3-onnx and
#           python3-numpy (fixture generators; the C tests themselves need no Python)
set -eu

PKGS="meson ninja-build pkg-config gcc clang
      protobuf-c-compiler libprotobuf-c-dev libonnx-dev llvm-dev
      libonnx-testdata python3-onnx python3-numpy"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

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
