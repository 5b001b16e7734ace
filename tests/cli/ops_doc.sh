#!/bin/sh
# docs/ops.md must be exactly what `kiln ops --markdown` prints: the table is
# generated from the compiler's op registry, never edited by hand.
#   usage: ops_doc.sh KILN DOCS_OPS_MD
# Regenerate: build/compiler/kiln ops --markdown > docs/ops.md
set -u
kiln=$1 doc=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$kiln" ops --markdown > "$tmp" || { echo "kiln ops --markdown failed"; exit 1; }
if ! diff -u "$doc" "$tmp"; then
	echo "docs/ops.md is out of date: run 'kiln ops --markdown > docs/ops.md'"
	exit 1
fi
rows=$(grep -c '^| [A-Za-z]' "$tmp")
echo "docs/ops.md is current ($((rows - 1)) operators)"
