#!/bin/sh
# Install and find: usage: install.sh BUILD_DIR SOURCE_ROOT OUTDIR
#  - `meson install` (into OUTDIR/root with --destdir, then moved to
#    OUTDIR/kiln: a relocated prefix) gives bin/kiln, include/kiln/*.h and
#    kiln.hpp, libkiln.a, libkiln.so.MAJOR with its SONAME, kiln.pc,
#    kilnConfig.cmake and kilnConfigVersion.cmake, all of one version;
#  - the installed kiln compiles a model with the installed headers;
#  - pkg-config: examples/pkg_config with plain make and with meson;
#  - CMake: examples/cmake_event_loop (two models named `net` via
#    kiln_add_model, each in its own plugin, 4 threads, 0..300 jets per
#    event, every result against batch 1; linked and dlopen'ed RTLD_GLOBAL),
#    rebuilt only when kiln changes; find_package(kiln 9.0) is refused.
# CC and SANFLAGS (a -fsanitize= flag or nothing) as for the other suites.
set -u
BUILD=$1 SRC=$2 OUT=$3
. "$(dirname "$0")/../tally.sh"
skip() { echo "SKIP: $*"; }
rm -rf "$OUT" && mkdir -p "$OUT"
CCBIN=${CC:-cc}
case $CCBIN in *clang*) CXXBIN=clang++ ;; *) CXXBIN=g++ ;; esac
SAN=${SANFLAGS:-}

prefix=$(meson introspect "$BUILD" --buildoptions | /usr/bin/python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"], o["includedir"], o["bindir"])')
set -- $prefix
PREFIX=$1 LIBDIR=$2 INCDIR=$3 BINDIR=$4
version=$(meson introspect "$BUILD" --projectinfo | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
major=${version%%.*}

if ! meson install -C "$BUILD" --no-rebuild --destdir "$OUT/root" >"$OUT/install.log" 2>&1; then
	bad "meson install: $(tail -3 "$OUT/install.log")"
	tally
	exit 1
fi
# Relocate: nothing may depend on the configured prefix.
mv "$OUT/root$PREFIX" "$OUT/kiln" && rm -rf "$OUT/root"
P=$OUT/kiln
for f in "$BINDIR/kiln" "$INCDIR/kiln/kiln.h" "$INCDIR/kiln/model.h" "$INCDIR/kiln/run.h" \
         "$INCDIR/kiln/kernels.h" "$INCDIR/kiln/float8.h" "$INCDIR/kiln/int4.h" "$INCDIR/kiln/kiln.hpp" "$LIBDIR/libkiln.a" "$LIBDIR/libkiln.so.$major" \
         "$LIBDIR/pkgconfig/kiln.pc" "$LIBDIR/cmake/kiln/kilnConfig.cmake" \
         "$LIBDIR/cmake/kiln/kilnConfigVersion.cmake"; do
	[ -e "$P/$f" ] && ok || bad "not installed: $f"
done
soname=$(readelf -d "$P/$LIBDIR/libkiln.so.$major" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libkiln.so.$major" ] && ok || bad "SONAME '$soname', want libkiln.so.$major"
# The shared library exports kiln's API only; the archive hides everything.
others=$(nm -D --defined-only "$P/$LIBDIR/libkiln.so.$major" | awk '$3 !~ /^kiln_/ { print $3 }')
[ -z "$others" ] && ok || bad "libkiln.so exports non-kiln symbols: $others"
visible=$(readelf -sW "$P/$LIBDIR/libkiln.a" | awk '$5 == "GLOBAL" && $7 != "UND" && $6 != "HIDDEN" { print $8 }')
[ -z "$visible" ] && ok || bad "libkiln.a has visible symbols: $(echo $visible | head -c 200)"

# One version everywhere.
KILN=$P/$BINDIR/kiln
[ "$("$KILN" --version)" = "kiln $version" ] && ok || bad "kiln --version: $("$KILN" --version)"
grep -q "^set(PACKAGE_VERSION \"$version\")" "$P/$LIBDIR/cmake/kiln/kilnConfigVersion.cmake" && ok ||
	bad "kilnConfigVersion.cmake is not $version"
export PKG_CONFIG_PATH="$P/$LIBDIR/pkgconfig"
[ "$(pkg-config --modversion kiln)" = "$version" ] && ok || bad "pkg-config --modversion: $(pkg-config --modversion kiln)"
[ "$(pkg-config --variable=kiln kiln)" -ef "$KILN" ] && ok || bad "pkg-config kiln variable"

# The installed kiln alone: it compiles a model, and (where strace is
# installed) opens nothing of the source or build tree but the model.
if command -v strace >/dev/null; then
	# (meson test's LD_LIBRARY_PATH names the build tree; the installed kiln needs none)
	# (LeakSanitizer cannot run under ptrace: leaks are not checked in this one run)
	env -u LD_LIBRARY_PATH ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -s 4096 -e trace=file -o "$OUT/strace.log" \
		"$KILN" compile "$SRC/examples/jet_tagger/model.onnx" --batch 1,8 --name jt -o "$OUT/jt" >/dev/null &&
		[ -f "$OUT/jt/jt.o" ] && ok || bad "installed kiln compile"
	# What a kiln run from its build tree reads: the source headers, the build's libkiln.a.
	used=$(grep -F -e "\"$SRC/include" -e "\"$(cd "$BUILD" && pwd)/runtime" "$OUT/strace.log" | head -3)
	[ -z "$used" ] && ok || bad "the installed kiln reads the source or build tree: $used"
else
	skip "strace not found: the installed kiln's file accesses are not checked"
	"$KILN" compile "$SRC/examples/jet_tagger/model.onnx" --batch 1,8 --name jt -o "$OUT/jt" >/dev/null &&
		[ -f "$OUT/jt/jt.o" ] && ok || bad "installed kiln compile"
fi

# pkg-config: plain make and meson.
mkdir -p "$OUT/make"
# shellcheck disable=SC2086
if make -s -C "$SRC/examples/pkg_config" O="$OUT/make" CC="$CCBIN" CFLAGS="-O2 $SAN" >"$OUT/make.log" 2>&1 &&
	"$OUT/make/demo" >"$OUT/make/demo.out" && grep -q "^  jet 10:" "$OUT/make/demo.out"; then
	ok
else
	bad "make example: $(tail -3 "$OUT/make.log")"
fi
if CC="$CCBIN" meson setup "$OUT/meson" "$SRC/examples/pkg_config" ${SAN:+-Db_sanitize=address,undefined -Db_lundef=false} \
	>"$OUT/meson.log" 2>&1 && ninja -C "$OUT/meson" >>"$OUT/meson.log" 2>&1 &&
	"$OUT/meson/demo" >"$OUT/meson/demo.out" && grep -q "^  jet 10:" "$OUT/meson/demo.out"; then
	ok
else
	bad "meson example: $(tail -3 "$OUT/meson.log")"
fi
# docs/integration.md's plain snippet, `pkg-config --cflags --libs kiln` and
# nothing else: the rpath in kiln.pc finds libkiln.so.0 (no LD_LIBRARY_PATH).
# shellcheck disable=SC2046
if $CCBIN -std=c11 -O2 $SAN -I"$OUT/make" "$SRC/examples/jet_tagger/main.c" "$OUT/make/jet_tagger.o" \
	$(pkg-config --cflags --libs kiln) -o "$OUT/snippet" 2>"$OUT/snippet.log" &&
	env -u LD_LIBRARY_PATH "$OUT/snippet" >"$OUT/snippet.out" 2>&1 && grep -q "^  jet 10:" "$OUT/snippet.out"; then
	ok
else
	bad "the pkg-config snippet: $(tail -3 "$OUT/snippet.log" "$OUT/snippet.out" 2>/dev/null)"
fi
readelf -d "$OUT/snippet" 2>/dev/null | grep -q "R.*PATH.*$P/$LIBDIR" && ok || bad "no rpath to $P/$LIBDIR in the snippet's program"

# CMake.
if ! command -v cmake >/dev/null; then
	skip "cmake not found: run scripts/install-deps.sh"
else
	B=$OUT/cmake
	cmake -S "$SRC/examples/cmake_event_loop" -B "$B" -DCMAKE_PREFIX_PATH="$P" \
		-DCMAKE_C_COMPILER="$CCBIN" -DCMAKE_CXX_COMPILER="$CXXBIN" \
		-DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
		>"$OUT/cmake.log" 2>&1 &&
		cmake --build "$B" -j 2 >>"$OUT/cmake.log" 2>&1 && ok || bad "cmake example: $(tail -5 "$OUT/cmake.log")"
	# No build type: the models' C gets -O2 (kiln_add_model), the rest what the project says.
	/usr/bin/python3 - "$B/compile_commands.json" <<'PY' && ok || bad "kiln_add_model's -O2 without a build type"
import json, sys
cmds = json.load(open(sys.argv[1]))
models = [c for c in cmds if "/kiln_models/" in c["file"]]
others = [c for c in cmds if "/kiln_models/" not in c["file"]]
assert len(models) == 2 and all(" -O2" in c["command"] for c in models), models
assert others and not any(" -O2" in c["command"] for c in others), others
PY
	"$B/event_loop" && ok || bad "event_loop"
	"$B/event_loop_dlopen" "$B" && ok || bad "event_loop_dlopen"
	nm -D --defined-only "$B/libtagger.so" | awk '{ print $3 }' | grep -E '^(net_|kiln_)' >"$OUT/leak.txt" &&
		bad "libtagger.so exports kiln symbols: $(head -3 "$OUT/leak.txt")" || ok
	# Nothing to do again; a changed kiln regenerates both models.
	cmake --build "$B" >"$OUT/again.log" 2>&1
	grep -q "kiln: compiling" "$OUT/again.log" && bad "the models were compiled again for nothing" || ok
	touch "$KILN"
	cmake --build "$B" >"$OUT/touched.log" 2>&1
	[ "$(grep -c "kiln: compiling" "$OUT/touched.log")" -eq 2 ] && ok ||
		bad "a changed kiln did not recompile both models: $(tail -3 "$OUT/touched.log")"
	# A version that is not installed is refused.
	mkdir -p "$OUT/v9"
	printf 'cmake_minimum_required(VERSION 3.16)\nproject(v9 C)\nfind_package(kiln 9.0 REQUIRED)\n' \
		>"$OUT/v9/CMakeLists.txt"
	cmake -S "$OUT/v9" -B "$OUT/v9/build" -DCMAKE_PREFIX_PATH="$P" >"$OUT/v9.log" 2>&1 &&
		bad "find_package(kiln 9.0) succeeded" || {
		grep -q "$version" "$OUT/v9.log" && ok || bad "find_package(kiln 9.0): $(tail -3 "$OUT/v9.log")"
	}
	# A MODEL that does not exist fails at configure time, naming it.
	mkdir -p "$OUT/nomodel"
	printf 'cmake_minimum_required(VERSION 3.16)\nproject(nomodel C)\nfind_package(kiln REQUIRED)\nkiln_add_model(net MODEL no_such.onnx BATCH 1)\n' \
		>"$OUT/nomodel/CMakeLists.txt"
	cmake -S "$OUT/nomodel" -B "$OUT/nomodel/build" -DCMAKE_PREFIX_PATH="$P" >"$OUT/nomodel.log" 2>&1 &&
		bad "kiln_add_model with a missing MODEL configured" || {
		tr -s ' \n' '  ' <"$OUT/nomodel.log" | grep -q "kiln_add_model(net): MODEL .*no_such.onnx does not exist" && ok ||
			bad "missing MODEL: $(tail -5 "$OUT/nomodel.log")"
	}
fi

tally
