#!/usr/bin/python3
"""The ONNX backend suite through `kiln verify`: every libonnx-testdata case
whose ops `kiln check` accepts is compiled, run and compared with its
reference outputs (rtol 1e-3, atol 1e-5; integers exact). The run fails if a
case ends FAIL or ERROR (a wrong result, a crash, a build failure), or if a
case listed in expected-pass.txt does not pass. UNSUPPORTED cases (a clear
reason, no code generated) are counted; `--update` rewrites the list. Cases
in known-differences.txt, where the reference data itself is wrong by the
current ONNX spec, must fail and are reported as KNOWN with the reason.

usage: run.py KILN TESTDATA_DIR [--update] [-j N]
"""
import concurrent.futures
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected-pass.txt")
KNOWN = os.path.join(HERE, "known-differences.txt")


def verify(kiln, cases):
    p = subprocess.run([kiln, "verify"] + cases, capture_output=True, text=True, timeout=1800)
    lines = [l for l in p.stdout.splitlines() if l.split(" ", 1)[0] in
             ("PASS", "FAIL", "UNSUPPORTED", "ERROR")]
    if len(lines) != len(cases):
        # A crash of kiln itself: name every case of the chunk that has no line.
        seen = {l.split(" ", 2)[1].rstrip(":") for l in lines}
        lines += ["ERROR %s: kiln verify exited %d: %s" % (c, p.returncode, p.stderr.strip()[-300:])
                  for c in cases if c not in seen]
    return lines


def main():
    kiln, root = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv
    jobs = int(sys.argv[sys.argv.index("-j") + 1]) if "-j" in sys.argv else (os.cpu_count() or 2)
    cases = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "*", "model.onnx")))
    supported = [c for c in cases
                 if subprocess.run([kiln, "check", os.path.join(c, "model.onnx")],
                                   capture_output=True).returncode == 0]
    chunks = [supported[i::jobs * 4] for i in range(jobs * 4)]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for lines in ex.map(lambda ch: verify(kiln, ch) if ch else [], chunks):
            for l in lines:
                status, rest = l.split(" ", 1)
                case = rest.split(" ", 1)[0].rstrip(":")
                results[os.path.relpath(case, root)] = (status, l)
    expected = set()
    if os.path.exists(EXPECTED):
        expected = {l.strip() for l in open(EXPECTED) if l.strip() and not l.startswith("#")}
    known = {}
    for l in open(KNOWN):
        if l.strip() and not l.startswith("#"):
            case, reason = l.split(None, 1)
            known[case] = reason.strip()
    counts = {"PASS": 0, "FAIL": 0, "UNSUPPORTED": 0, "ERROR": 0, "KNOWN": 0}
    bad = 0
    for case in sorted(results):
        status, line = results[case]
        if case in known:
            if status == "FAIL":
                print("KNOWN %s: %s" % (case, known[case]))
                counts["KNOWN"] += 1
                continue
            print("STALE %s is listed in known-differences.txt but ends %s" % (case, status))
            bad += 1
        counts[status] += 1
        if status in ("FAIL", "ERROR"):
            print(line)
            bad += 1
        elif case in expected and status != "PASS":
            print("REGRESSION %s" % line)
            bad += 1
    for case in sorted(expected - set(results)):
        print("REGRESSION %s: no longer attempted (kiln check rejects it?)" % case)
        bad += 1
    if update:
        with open(EXPECTED, "w") as f:
            f.write("# Cases of Debian's libonnx-testdata that kiln verify passes; a case\n"
                    "# listed here that stops passing fails the conformance test.\n"
                    "# Regenerate: tests/conformance/run.py build/compiler/kiln "
                    "/usr/share/libonnx-testdata/data --update\n")
            for case in sorted(results):
                if results[case][0] == "PASS":
                    f.write(case + "\n")
    print("conformance: %d cases of %d attempted (%d rejected by kiln check): %d PASS, %d FAIL, "
          "%d ERROR, %d UNSUPPORTED, %d KNOWN differences"
          % (len(results), len(cases), len(cases) - len(supported), counts["PASS"],
             counts["FAIL"], counts["ERROR"], counts["UNSUPPORTED"], counts["KNOWN"]))
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], bad,
                                                 counts["UNSUPPORTED"] + counts["KNOWN"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
