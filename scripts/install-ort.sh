#!/bin/sh
# Installs ONNX Runtime 1.30 (npm package onnxruntime-node) for the tests and
# benchmarks that use it as a reference or a peer, and prints the folder to put
# on NODE_PATH. A test/bench-only dependency: building and using kiln never
# needs it. Idempotent; --ignore-scripts because the package's install script
# would try to download, while its bundled CPU library works without it.
#
#   NODE_PATH=$(scripts/install-ort.sh) node script.js
#
# The folder is $KILN_ORT_DIR, default ~/.cache/kiln/ort. Exits 1 (printing
# nothing on stdout) if node or npm is missing or the install fails.
set -eu
dir=${KILN_ORT_DIR:-${HOME:-/tmp}/.cache/kiln/ort}
if [ ! -f "$dir/node_modules/onnxruntime-node/package.json" ]; then
	command -v npm >/dev/null 2>&1 || { echo "install-ort: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund \
		onnxruntime-node@1.30.0 >/dev/null 2>&1) ||
		{ echo "install-ort: npm install onnxruntime-node@1.30.0 failed" >&2; exit 1; }
fi
# Check that it loads (the bundled CPU library), once per call.
NODE_PATH="$dir/node_modules" node -e 'require("onnxruntime-node")' >/dev/null 2>&1 ||
	{ echo "install-ort: onnxruntime-node does not load from $dir" >&2; exit 1; }
echo "$dir/node_modules"
