#!/bin/sh
# Extra op cases in libonnx-testdata format, generated with numpy references
# by the gen_*.py scripts here (covering what the ONNX 1.12 backend data does
# not: RNN directions and activations, DFT/STFT lengths and windows, integer
# and quantized op layouts, TfIdfVectorizer's IDF/TFIDF modes, LpNormalization
# where float sums over- or underflow), then run
# through `kiln verify` (its tolerances: rtol 1e-3, atol 1e-5; integers exact).
#   usage: run.sh KILN OUTDIR
set -u
KILN=$1 OUT=$2 HERE=$(dirname "$0")
rm -rf "$OUT" && mkdir -p "$OUT"
for gen in rnn signal quant text lpnorm; do
	/usr/bin/python3 "$HERE/gen_$gen.py" "$OUT/$gen" >/dev/null || { echo "FAIL: gen_$gen.py"; exit 1; }
done
"$KILN" verify "$OUT"/*/*/ > "$OUT/verify.out" 2>&1
status=$?
grep -v '^PASS' "$OUT/verify.out"
exit $status
