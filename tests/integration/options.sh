#!/bin/sh
# The install commands of docs/integration.md: usage: options.sh SOURCE_ROOT OUTDIR
#  - -Dtests=false configures the compiler, the runtime (and the Python
#    module) and no test program;
#  - on a configured folder, `meson configure --prefix` changes the prefix
#    (where `meson setup --prefix` would keep the old one), as the docs say;
#  - the README's newcomer path and test.sh's stages (docs checks).
set -u
SRC=$1 OUT=$2
. "$(dirname "$0")/../tally.sh"
rm -rf "$OUT" && mkdir -p "$OUT"
prefix() { meson introspect "$1" --buildoptions | /usr/bin/python3 -c '
import json, sys
print({o["name"]: o["value"] for o in json.load(sys.stdin)}["prefix"])'; }

if meson setup "$OUT/b" "$SRC" -Dtests=false --prefix="$OUT/p1" >"$OUT/setup.log" 2>&1; then
	ok
	targets=$(meson introspect "$OUT/b" --targets | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')
	case " $targets " in *" kiln "*) ok ;; *) bad "-Dtests=false: no kiln target: $targets" ;; esac
	tests=$(meson introspect "$OUT/b" --targets | /usr/bin/python3 -c '
import json, sys
print(" ".join(t["name"] for t in json.load(sys.stdin) if "/tests/" in t["defined_in"]))')
	[ -z "$tests" ] && ok || bad "-Dtests=false still builds: $tests"
	meson introspect "$OUT/b" --tests | grep -q '"name"' && bad "-Dtests=false has tests" || ok
	# The documented way to change the prefix of a configured folder.
	grep -q '^    meson configure build --prefix=$HOME/opt/kiln && meson install -C build$' \
		"$SRC/docs/integration.md" && ok || bad "docs/integration.md lost its meson configure line"
	meson setup "$OUT/b" --prefix="$OUT/p2" >/dev/null 2>&1
	[ "$(prefix "$OUT/b")" = "$OUT/p1" ] && ok || bad "meson setup changed the prefix (the docs say it does not)"
	meson configure "$OUT/b" --prefix="$OUT/p2" >/dev/null 2>&1
	[ "$(prefix "$OUT/b")" = "$OUT/p2" ] && ok || bad "meson configure --prefix: $(prefix "$OUT/b")"
else
	bad "meson setup -Dtests=false: $(tail -5 "$OUT/setup.log")"
fi
# The README's newcomer path comes before the status tables and says where
# kiln is after scripts/build.sh; test.sh names its stages.
/usr/bin/python3 - "$SRC/README.md" <<'PY' && ok || bad "README: the start before the status, build/compiler/kiln"
import sys
text = open(sys.argv[1]).read()
start, status = text.index("## Start here"), text.index("## Status")
assert start < status and "build/compiler/kiln" in text[start:status], (start, status)
PY
[ "$(grep -c '^stage "[1-4]/4 ' "$SRC/scripts/test.sh")" -eq 4 ] && ok || bad "test.sh's stages"
tally
