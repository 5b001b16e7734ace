#!/bin/sh
# Install the Debian packages kiln needs (idempotent), then configure and build.
#   scripts/build.sh                  -> build/ with the default compiler
#   scripts/build.sh DIR [MESON-ARGS] -> another build folder, e.g. with sanitizers
# Safe to run again: an existing build folder is reconfigured, not recreated.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "$@" >/dev/null
else
	meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir"
