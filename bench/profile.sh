#!/bin/sh
# Where kiln spends its time in one benchmark cell, by function:
#
#   bench/profile.sh WORKLOAD BATCH [SECONDS]      e.g. bench/profile.sh resnet18 16
#
# Rebuilds and times the cell with bench/compare.sh (one short pass, so the
# line with kiln/ORT is printed too), then samples kiln_time for SECONDS
# (default 3) of timed calls with `perf record -e cpu-clock` pinned to core 1,
# and prints the functions with the most self time (`perf report`): kernels
# of libkiln, and the generated model's run function, into which the per-node
# functions are inlined. Needs perf (Debian: linux-perf); the data stays in
# build/bench/profile-WORKLOAD-bBATCH.data for `perf report -i`.
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/profile.sh WORKLOAD BATCH [SECONDS]" >&2; exit 2; }
w=$1 b=$2 s=${3:-3}
command -v perf >/dev/null 2>&1 || { echo "profile: perf not found (apt-get install linux-perf)" >&2; exit 1; }
bench/compare.sh --models "$w" --batches "$b" --passes 1 --min-time 0.2 --out build/bench/profile >/dev/null
cell=build/bench/profile/cells/${w}_b$b
[ -x "$cell/kiln/kiln_time" ] || { echo "profile: no kiln build for $w b$b (see the messages above)" >&2; exit 1; }
data=build/bench/profile-$w-b$b.data
mkdir -p "$cell/prof_out"
taskset -c 1 perf record -q -e cpu-clock -F 1999 -o "$data" \
	"$cell/kiln/kiln_time" "$s" 3 2 "$cell/in" "$cell/prof_out" >/dev/null
perf report -i "$data" --stdio --no-children --sort symbol 2>/dev/null |
	grep -E '^ +[0-9].*\[\.\]' | sed 's/ *- *- *$//' | head -25
