#!/bin/sh
# Weights-object test: runs test_emit_obj, then checks its objects with readelf
# and links the host object into programs that read every byte back.
# usage: run.sh TEST_EMIT_OBJ OUTDIR CHUNK CC [CC-ARGS...]
#   OUTDIR is created if needed and holds every file written here.
#   CHUNK is 0, or the chunk size test_emit_obj was built with (symbols over
#   CHUNK bytes then have their size rounded up to a multiple of CHUNK).
#   CC... is the C compiler command (e.g. cc, "ccache gcc", clang); it is
#   word-split, so its path must not contain spaces.
# Prints one closing line "N passed, N failed"; exits 1 on any failure.
# shellcheck disable=SC2015 # "A && ok || bad": ok always succeeds
set -u
if [ $# -lt 4 ]; then
	echo "usage: run.sh TEST_EMIT_OBJ OUTDIR CHUNK CC [CC-ARGS...]" >&2
	exit 2
fi
TEST=$1
OUT=$2
CHUNK=$3
shift 3
CC_CMD="$*"
. "$(dirname "$0")/../tally.sh"

mkdir -p "$OUT" || exit 2
rm -f "$OUT"/*.o "$OUT"/check_* "$OUT"/libkilnw.so

# ---- 1. the C test: writes host.o, host2.o, aarch64.o; determinism; error cases
if "$TEST" "$OUT"; then ok; else bad "test_emit_obj (see its FAIL lines above)"; fi

# ---- 2. ELF headers
for f in host.o aarch64.o; do
	[ -f "$OUT/$f" ] || { bad "$f was not written"; continue; }
	readelf -h "$OUT/$f" | grep -q '^ *Type: *REL (Relocatable file)$' && ok || bad "$f: Type is not REL"
done
if [ -f "$OUT/aarch64.o" ]; then
	readelf -h "$OUT/aarch64.o" | grep -q '^ *Machine: *AArch64$' && ok ||
		bad "aarch64.o: $(readelf -h "$OUT/aarch64.o" | grep Machine:), want AArch64"
fi

# sym OBJ NAME: "Size Type Bind Vis Ndx" of NAME in readelf -s
# (columns Num: Value Size Type Bind Vis Ndx Name).
sym() {
	readelf -s -W "$1" | awk -v n="$2" '$8 == n { print $3, $4, $5, $6, $7; exit }'
}
# sec OBJ INDEX: "Name Type Flags Al" of section INDEX in readelf -S
# (columns [Nr] Name Type Address Off Size ES Flg Lk Inf Al, after the [Nr]).
sec() {
	readelf -S -W "$1" | sed -n "s/^ *\[ *$2\] *//p" | awk 'NF == 10 { print $1, $2, $7, $10 }'
}

# ---- 3. symbols: defined global objects, sizes as written, all in one section
#         that is allocated, not writable, not executable, aligned >= 64
for f in host.o aarch64.o; do
	obj=$OUT/$f
	[ -f "$obj" ] || continue
	ndx=$(sym "$obj" kiln_w_a | awk '{ print $5 }')
	case $ndx in
	'' | *[!0-9]*) bad "$f: kiln_w_a is not defined in a section (Ndx '$ndx')"; continue ;;
	esac
	for s in kiln_w_a:256 kiln_w_b:1000 kiln_w_c:300 kiln_w_empty:1; do
		name=${s%%:*} size=${s#*:}
		if [ "$CHUNK" -gt 0 ] && [ "$size" -gt "$CHUNK" ]; then
			size=$(((size + CHUNK - 1) / CHUNK * CHUNK))
		fi
		got=$(sym "$obj" "$name")
		want="$size OBJECT GLOBAL DEFAULT $ndx"
		[ "$got" = "$want" ] && ok || bad "$f: $name is '$got', want '$want'"
	done
	line=$(sec "$obj" "$ndx")
	if [ -z "$line" ]; then
		bad "$f: cannot read section $ndx: $(readelf -S -W "$obj" | grep "\[ *$ndx\]")"
		continue
	fi
	read -r secname type flags al <<-LINE
	$line
	LINE
	echo "$f: symbols in section [$ndx] $secname, type $type, flags $flags, alignment $al"
	[ "$type" = PROGBITS ] && ok || bad "$f: section $secname has type $type, want PROGBITS"
	case $flags in *A*) ok ;; *) bad "$f: section $secname flags $flags lack A (alloc)" ;; esac
	case $flags in *W*) bad "$f: section $secname flags $flags include W (write)" ;; *) ok ;; esac
	case $flags in *X*) bad "$f: section $secname flags $flags include X (exec)" ;; *) ok ;; esac
	[ "$al" -ge 64 ] 2>/dev/null && ok || bad "$f: section $secname alignment $al < 64"
	# Plain data: no relocations at all.
	readelf -r -W "$obj" | grep -q 'There are no relocations in this file' && ok ||
		bad "$f: has relocations"
	# The output path must not leak into the object.
	if grep -q -F "$OUT" "$obj"; then bad "$f: contains the output folder's path"; else ok; fi
done

# ---- 3b. a hidden symbol stays global in the object (NAME.c refers to it)
#          with hidden visibility, so no shared library exports it
if [ -f "$OUT/hidden.o" ]; then
	got=$(sym "$OUT/hidden.o" kiln_w_hidden | awk '{ print $2, $3, $4 }')
	[ "$got" = "OBJECT GLOBAL HIDDEN" ] && ok || bad "hidden.o: kiln_w_hidden is '$got', want 'OBJECT GLOBAL HIDDEN'"
else
	bad "hidden.o was not written"
fi

# ---- 4. link the host object and read every byte back
cat >"$OUT/check_main.c" <<'C'
#include <stdint.h>
#include <stdio.h>

extern const unsigned char kiln_w_a[256], kiln_w_b[1000], kiln_w_c[300], kiln_w_empty[1];

int main(void)
{
	int bad = 0;
	for (int i = 0; i < 256; i++)
		bad += kiln_w_a[i] != (unsigned char)i;
	for (int i = 0; i < 1000; i++)
		bad += kiln_w_b[i] != (unsigned char)((i * 7 + 3) & 255);
	for (int i = 0; i < 300; i++)
		bad += kiln_w_c[i] != (i >= 100 && i < 200 ? 0 : (unsigned char)((i * 13 + 1) & 255));
	bad += kiln_w_empty[0] != 0;
	const void *p[] = { kiln_w_a, kiln_w_b, kiln_w_c, kiln_w_empty };
	for (int i = 0; i < 4; i++)
		bad += ((uintptr_t)p[i] % 64) != 0;
	puts(bad ? "BAD" : "OK");
	return bad != 0;
}
C
# try NAME CC-ARGS...: run "$CC_CMD CC-ARGS..." (must succeed without a word
# of output), then run $OUT/check_NAME, which must print OK.
try() {
	name=$1
	shift
	log=$OUT/check_$name.log
	# shellcheck disable=SC2086 # CC_CMD is a command line
	if ! $CC_CMD "$@" >"$log" 2>&1; then
		bad "link ($name): $(head -5 "$log")"
		return
	fi
	[ -s "$log" ] && bad "link ($name) printed: $(head -5 "$log")"
	got=$(LD_LIBRARY_PATH=$OUT "$OUT/check_$name" 2>&1)
	[ "$got" = OK ] && ok || bad "run ($name): '$got'"
}
if [ -f "$OUT/host.o" ]; then
	M=$OUT/check_main.c H=$OUT/host.o
	try default -o "$OUT/check_default" "$M" "$H"
	try pie -fPIE -pie -o "$OUT/check_pie" "$M" "$H"
	try nopie -fno-PIE -no-pie -o "$OUT/check_nopie" "$M" "$H"
	# In a shared library (needs PIC-compatible data), used from an executable.
	if $CC_CMD -shared -o "$OUT/libkilnw.so" "$H" >"$OUT/check_so.log" 2>&1; then
		ok
		try shared -o "$OUT/check_shared" "$M" -L"$OUT" -lkilnw
	else
		bad "shared library: $(head -5 "$OUT/check_so.log")"
	fi
fi

tally
