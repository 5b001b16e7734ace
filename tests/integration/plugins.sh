#!/bin/sh
# Safe embedding: usage: plugins.sh KILN SOURCE_ROOT LIBKILN_A OUTDIR
#  - two plugin shared libraries, each linking a DIFFERENT model compiled
#    under the SAME name (`data`) with libkiln.a, export only their own two
#    functions: none of kiln's symbols (weights, data_model, data_run*,
#    kiln_*);
#  - a program linked with both, and one dlopening both with RTLD_GLOBAL,
#    get from each plugin exactly what its model gives linked alone;
#  - a context made for another model is refused (contexts.c), and one
#    memory serves two models in turn;
#  - the C++ face (cxx.cpp), run_lengths on a bucketed model included.
# CC (default cc) and SANFLAGS (a -fsanitize= flag or nothing) build it all.
set -u
KILN=$1 SRC=$2 LIBKILN=$3 OUT=$4
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
CCBIN=${CC:-cc}
HERE=$(dirname "$0")
A=$SRC/examples/jet_tagger/model.onnx B=$SRC/tests/fixtures/mlp.onnx
# shellcheck disable=SC2086  # CCBIN may be "ccache gcc"; SANFLAGS none or one flag
cc_() { $CCBIN -std=c11 -Wall -Wextra -Werror ${SANFLAGS:-} -I"$SRC/include" "$@"; }

"$KILN" compile "$A" --batch 1,4 --name data -o "$OUT/a" >/dev/null && ok || bad "compile A"
"$KILN" compile "$B" --batch 1,4 --name data -o "$OUT/b" >/dev/null && ok || bad "compile B"
"$KILN" compile "$B" --batch 2,8 --name other -o "$OUT/other" >/dev/null && ok || bad "compile other"
"$KILN" compile "$SRC/tests/fixtures/lengths.onnx" --batch 1,4 --dim P=4,8,16 --name lens -o "$OUT/lens" \
	>/dev/null && ok || bad "compile lens (buckets)"

for p in a b; do
	cc_ -fPIC -shared -DPLUGIN=plugin_$p -I"$OUT/$p" "$HERE/plugin.c" "$OUT/$p/data.o" "$LIBKILN" \
		-lm -o "$OUT/libplugin_$p.so" && ok || bad "link plugin $p"
	# Exactly the plugin's own two functions are exported.
	got=$(nm -D --defined-only "$OUT/libplugin_$p.so" | awk '{ print $3 }' | sort | tr '\n' ' ')
	[ "$got" = "plugin_${p}_elems plugin_${p}_eval " ] && ok ||
		bad "libplugin_$p.so exports: $got"
	cc_ -I"$OUT/$p" "$HERE/ref.c" "$OUT/$p/data.o" "$LIBKILN" -lm -o "$OUT/ref_$p" &&
		"$OUT/ref_$p" "$p" >"$OUT/ref_$p.txt" && ok || bad "reference $p"
done
cat "$OUT/ref_a.txt" "$OUT/ref_b.txt" >"$OUT/want.txt"
# The two models really differ (else the test could not tell them apart).
[ "$(sed 's/^a //' "$OUT/ref_a.txt")" != "$(sed 's/^b //' "$OUT/ref_b.txt")" ] && ok ||
	bad "models A and B give the same outputs"

cc_ "$HERE/host.c" -L"$OUT" -lplugin_a -lplugin_b -Wl,-rpath,"$OUT" -lm -o "$OUT/host_linked" &&
	"$OUT/host_linked" >"$OUT/linked.txt" && ok || bad "linked host"
cmp -s "$OUT/want.txt" "$OUT/linked.txt" && ok ||
	bad "linked host: plugins compute other models: $(diff "$OUT/want.txt" "$OUT/linked.txt" | head -3)"
cc_ -DUSE_DLOPEN "$HERE/host.c" -ldl -lm -o "$OUT/host_dlopen" &&
	"$OUT/host_dlopen" "$OUT" >"$OUT/dlopen.txt" && ok || bad "dlopen host"
cmp -s "$OUT/want.txt" "$OUT/dlopen.txt" && ok ||
	bad "dlopen host: plugins compute other models: $(diff "$OUT/want.txt" "$OUT/dlopen.txt" | head -3)"

cc_ -I"$OUT/a" -I"$OUT/other" "$HERE/contexts.c" "$OUT/a/data.o" "$OUT/other/other.o" "$LIBKILN" \
	-lm -o "$OUT/contexts" && ok || bad "link contexts"
"$OUT/contexts" && ok || bad "contexts"

# The C++ face (kiln/kiln.hpp): warning-free with g++ and clang++, C++17 and C++20
# (with a sanitizer, only the C++ compiler of CC's family shares its runtime).
cxxs="g++ clang++"
if [ -n "${SANFLAGS:-}" ]; then
	case $CCBIN in *clang*) cxxs=clang++ ;; *) cxxs=g++ ;; esac
fi
for cxx in $cxxs; do
	command -v $cxx >/dev/null || { echo "SKIP: $cxx not found"; continue; }
	for std in c++17 c++20; do
		# shellcheck disable=SC2086
		$cxx -std=$std -Wall -Wextra -pedantic -Werror ${SANFLAGS:-} -I"$SRC/include" -I"$OUT/a" \
			-I"$OUT/other" -I"$OUT/lens" "$HERE/cxx.cpp" "$OUT/a/data.o" "$OUT/other/other.o" \
			"$OUT/lens/lens.o" "$LIBKILN" -lm \
			-o "$OUT/cxx_${cxx}_$std" && "$OUT/cxx_${cxx}_$std" && ok || bad "C++: $cxx -std=$std"
	done
done

tally
