#!/bin/sh
# The whole test suite, as the README and CI run it:
#   1. install the Debian packages and build (scripts/build.sh; idempotent), and
#      ONNX Runtime from npm for the tests that compare with it (scripts/install-ort.sh),
#   2. build with the default compiler in build/ and run every suite (unit, cli, testdata, memory),
#   3. build with clang + AddressSanitizer/UBSan (LeakSanitizer included) in
#      build-asan/ and run every suite but memory, agree, types and repro there,
#   4. print one line "tests: N passed, N failed" and the conformance counts.
# Exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.." || exit 2
status=0
stage() { echo "test.sh: $*" >&2; }
stage "1/4 installing the Debian packages and building build/ (scripts/build.sh)"
./scripts/build.sh build || exit 2
# ONNX Runtime (npm) is the reference of the tests that compare with it; where it
# cannot be installed those tests say so and skip.
if ORT_PATH=$(./scripts/install-ort.sh); then
	NODE_PATH=$ORT_PATH${NODE_PATH:+:$NODE_PATH}
	export NODE_PATH
else
	echo "tests: ONNX Runtime unavailable: the tests that compare with it will skip"
fi
rm -f build/tests/conformance-summary.txt build-asan/tests/conformance-summary.txt
stage "2/4 running every suite in build/"
meson test -C build --print-errorlogs --num-processes 2 || status=1

stage "3/4 building build-asan/ (clang, AddressSanitizer, UBSan) and running every suite but memory, agree, types and repro there"
CC=clang ./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
	-Dc_args=-fno-sanitize-recover=all || exit 2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	meson test -C build-asan --print-errorlogs --num-processes 2 \
	--suite unit --suite cli --suite testdata --suite obj --suite kernels --suite batch --suite opt --suite conformance --suite cases --suite realmodels --suite hostile --suite integration --suite trees --suite fuzz --suite python || status=1

stage "4/4 the summary"
# One summary line over both runs, from meson's JSON logs.
/usr/bin/python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print("tests: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
PY
# The conformance counts (per-case CSV: build/tests/conformance.csv).
for dir in build build-asan; do
	[ -f $dir/tests/conformance-summary.txt ] && sed "s|^|$dir: |" $dir/tests/conformance-summary.txt
done
exit $status
