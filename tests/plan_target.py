#!/usr/bin/python3
"""The buffer plan's target on the multi-layer models of the test suite and
examples/: for batch sizes 1, 7 and 64, arena_bytes <= 1.10 x
lower_bound_bytes (the most bytes live at one step of the schedule).

usage: plan_target.py KILN MODEL...
"""
import json
import subprocess
import sys


def main():
    kiln, models = sys.argv[1], sys.argv[2:]
    passed = failed = 0
    for m in models:
        p = subprocess.run([kiln, "info", "--json", "--plan", "--batch=1,7,64", m],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("FAIL %s: %s" % (m, p.stderr.strip()))
            failed += 1
            continue
        for s in json.loads(p.stdout)["signatures"]:
            ratio = s["arena_bytes"] / max(1, s["lower_bound_bytes"])
            ok = s["arena_bytes"] <= 1.10 * s["lower_bound_bytes"]
            print("%s %s batch %d: arena %d bytes, lower bound %d, ratio %.3f"
                  % ("ok  " if ok else "FAIL", m, s["batch"], s["arena_bytes"],
                     s["lower_bound_bytes"], ratio))
            passed, failed = passed + ok, failed + (not ok)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
