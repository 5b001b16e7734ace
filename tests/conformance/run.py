#!/usr/bin/python3
"""The ONNX backend suite through `kiln verify`.

Every libonnx-testdata case (a folder with a model.onnx) is compiled, run and
compared with its reference outputs by `kiln verify` (float rtol 1e-3, atol
1e-5; integers and booleans exact). Each ends in one status:

  PASS         the outputs match
  FAIL         a wrong result                              -> the run fails
  ERROR        a crash, a build failure, a bad data file   -> the run fails
  UNSUPPORTED  kiln refused it with a reason, no code generated
  KNOWN        listed in known-differences.txt: the reference data itself is
               wrong by the current ONNX spec; such a case must FAIL

The run also fails if a case listed in expected-pass.txt does not pass, or
if a case listed in out-of-scope.txt ends other than UNSUPPORTED or PASS.

Writes a CSV (suite, case, status, worst abs/rel error, detail) and prints a
summary line; with --summary FILE the summary is written there too.
`--update` rewrites expected-pass.txt from this run.

usage: run.py KILN TESTDATA_DIR [--csv FILE] [--summary FILE] [--update] [-j N]
"""
import concurrent.futures
import csv
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected-pass.txt")
KNOWN = os.path.join(HERE, "known-differences.txt")
SCOPE = os.path.join(HERE, "out-of-scope.txt")
STATUSES = ("PASS", "FAIL", "UNSUPPORTED", "ERROR")


def verify(kiln, cases):
    """Runs one kiln verify over a chunk of cases: {case: (status, detail)}."""
    try:
        p = subprocess.run([kiln, "verify"] + cases, capture_output=True, text=True,
                           timeout=1800)
        stdout, code, stderr = p.stdout, p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        stdout, code, stderr = (e.stdout or b"").decode(errors="replace"), "timeout", ""
    got = {}
    for line in stdout.splitlines():
        status, _, rest = line.partition(" ")
        if status not in STATUSES:
            continue
        m = re.match(r"(\S+?):? (.*)$", rest) or re.match(r"(\S+)()$", rest)
        case, detail = m.group(1), m.group(2).strip()
        got[case] = (status, detail)
    # A crash or hang of kiln itself: every case of the chunk without a line.
    for c in cases:
        if c not in got:
            got[c] = ("ERROR", "kiln verify exited %s: %s" % (code, stderr.strip()[-300:]))
    return got


def errors_of(detail):
    """Worst abs and rel error from a PASS line's "(worst abs err A, rel err R...)"."""
    m = re.search(r"worst abs err ([^,]+), rel err ([^;)]+)", detail)
    return (m.group(1), m.group(2)) if m else ("", "")


def read_list(path, with_reason):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        case, _, reason = line.strip().partition(" ")
        out[case] = reason.strip() if with_reason else ""
    return out


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    kiln, root = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv
    jobs = int(arg("-j", os.cpu_count() or 2))
    csv_path = arg("--csv")
    summary_path = arg("--summary")
    cases = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "*", "model.onnx")))
    # Small chunks, many more than workers, so a slow case does not idle a core.
    nchunks = max(1, min(len(cases), jobs * 16))
    chunks = [cases[i::nchunks] for i in range(nchunks)]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for got in ex.map(lambda ch: verify(kiln, ch), chunks):
            for case, r in got.items():
                results[os.path.relpath(case, root)] = r

    expected = set(read_list(EXPECTED, False))
    known = read_list(KNOWN, True)
    scope = read_list(SCOPE, True)
    counts = {s: 0 for s in STATUSES + ("KNOWN",)}
    out_counts = {s: 0 for s in STATUSES}
    rows = []
    bad = 0
    for case in sorted(results):
        status, detail = results[case]
        abs_err, rel_err = errors_of(detail)
        if case in scope:
            out_counts[status] += 1
            if status not in ("UNSUPPORTED", "PASS"):
                print("%s %s: out of scope (%s) but ends %s: %s" % (status, case, scope[case],
                                                                    status, detail))
                bad += 1
            elif status == "UNSUPPORTED":
                detail = "out of scope (%s): %s" % (scope[case], detail)
        elif case in known:
            if status == "FAIL":
                status, detail = "KNOWN", "%s (%s)" % (known[case], detail)
            else:
                print("STALE %s is listed in known-differences.txt but ends %s" % (case, status))
                bad += 1
            counts[status] += 1
        else:
            counts[status] += 1
            if status in ("FAIL", "ERROR"):
                print("%s %s: %s" % (status, case, detail))
                bad += 1
            elif case in expected and status != "PASS":
                print("REGRESSION %s: expected to pass, ends %s: %s" % (case, status, detail))
                bad += 1
        rows.append((case.split("/")[0], case.split("/", 1)[1], status, abs_err, rel_err, detail))
    for case in sorted(expected - set(results)):
        print("REGRESSION %s: in expected-pass.txt but not in the test data" % case)
        bad += 1

    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(("suite", "case", "status", "worst_abs_err", "worst_rel_err", "detail"))
            w.writerows(rows)
    if update:
        with open(EXPECTED, "w") as f:
            f.write("# Cases of Debian's libonnx-testdata that kiln verify passes; a case\n"
                    "# listed here that stops passing fails the conformance test.\n"
                    "# Regenerate: tests/conformance/run.py build/compiler/kiln "
                    "/usr/share/libonnx-testdata/data --update\n")
            for case in sorted(results):
                if results[case][0] == "PASS":
                    f.write(case + "\n")

    nscope = len(results) - len(scope.keys() & results.keys())
    summary = ("conformance: %d cases; %d in scope: %d PASS, %d FAIL, %d ERROR, %d UNSUPPORTED, "
               "%d KNOWN differences; %d out of scope: %d UNSUPPORTED, %d PASS"
               % (len(results), nscope, counts["PASS"], counts["FAIL"], counts["ERROR"],
                  counts["UNSUPPORTED"], counts["KNOWN"], len(results) - nscope,
                  out_counts["UNSUPPORTED"], out_counts["PASS"]))
    print(summary)
    if csv_path:
        print("conformance: per-case results in %s" % csv_path)
    if summary_path:
        with open(summary_path, "w") as f:
            f.write(summary + "\n")
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], bad,
                                                 counts["UNSUPPORTED"] + counts["KNOWN"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
