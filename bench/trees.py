#!/usr/bin/python3
"""Straight-line C against node arrays for a small XGBoost model (issue 15).

Trains an XGBoost binary classifier (Debian's python3-xgboost; 100 trees of
depth 4 on 10 features, about the size of an L1-trigger BDT), writes it as a
TreeEnsembleClassifier (tests/trees/make_cases.py's converter), compiles it
with --trees=code and --trees=arrays at each batch size, and runs every
row of a 4096-row sample through each build (bench/trees_time.c), printing
the median CPU time per row over the repeats. The two forms' scores must be
bitwise equal.

usage: bench/trees.py KILN_ROOT [OUTDIR]   (KILN_ROOT: a checkout with build/)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(sys.argv[1])
OUT = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "/tmp/kiln-bench-trees")
sys.path.insert(0, os.path.join(ROOT, "tests", "trees"))
import make_cases  # noqa: E402
import xgboost as xgb  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

KILN = os.path.join(ROOT, "build", "compiler", "kiln")
ROWS, REPEATS, F = 4096, 31, 10
BATCHES = (1, 64)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, F)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] > 0.1).astype(int)
    clf = xgb.XGBClassifier(n_estimators=100, max_depth=4, base_score=0.5, tree_method="exact")
    clf.fit(X, y)
    dumps = clf.get_booster().get_dump(dump_format="json")
    trees = [make_cases.xgb_tree(json.loads(d)) for d in dumps]
    trees = [make_cases.with_leaf(t, lambda v: [(0, v)]) for t in trees]
    a = make_cases.tree_attrs(trees, "class")
    outs = [helper.make_tensor_value_info("label", TensorProto.INT64, None),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, None)]
    m = make_cases.ml_model("TreeEnsembleClassifier",
                            dict(a, classlabels_int64s=[0, 1], post_transform="LOGISTIC",
                                 base_values=[0.0]), TensorProto.FLOAT, F, outs)
    model = os.path.join(OUT, "xgb.onnx")
    with open(model, "wb") as f:
        f.write(m.SerializeToString())
    x = rng.normal(size=(ROWS, F)).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan
    xf = os.path.join(OUT, "x.bin")
    x.tofile(xf)
    print("model: %d trees, %d nodes, %d features; %d rows, median of %d passes, CPU time"
          % (len(trees), len(a["nodes_treeids"]), F, ROWS, REPEATS))
    print("| batch | straight-line C (ns/row) | node arrays (ns/row) | arrays / C |")
    print("|---|---|---|---|")
    for b in BATCHES:
        ns, zs = {}, {}
        for form in ("code", "arrays"):
            d = os.path.join(OUT, "%s-b%d" % (form, b))
            subprocess.run([KILN, "compile", model, "--batch", str(b), "--name", "m", "-o", d,
                            "--trees=" + form], check=True, capture_output=True)
            exe = os.path.join(d, "time")
            subprocess.run(["cc", "-std=c11", "-O2", "-D_POSIX_C_SOURCE=200809L", "-I", d,
                            "-I", os.path.join(ROOT, "include"),
                            "-I", os.path.join(ROOT, "bench"), "-DRUN=m_run_b%d" % b,
                            "-DBATCH=%d" % b, "-include", os.path.join(d, "m.h"),
                            os.path.join(ROOT, "bench", "trees_time.c"), os.path.join(d, "m.o"),
                            os.path.join(ROOT, "build", "runtime", "libkiln.a"), "-lm", "-o", exe],
                           check=True)
            zf = os.path.join(d, "z.bin")
            r = subprocess.run([exe, xf, str(ROWS), str(REPEATS), zf], check=True,
                               capture_output=True, text=True)
            ns[form] = float(r.stdout)
            zs[form] = np.fromfile(zf, np.float32)
        if not np.array_equal(zs["code"], zs["arrays"], equal_nan=True):
            sys.exit("the two forms' scores differ at batch %d" % b)
        print("| %d | %.1f | %.1f | %.2f |" % (b, ns["code"], ns["arrays"],
                                               ns["arrays"] / ns["code"]))


main()
