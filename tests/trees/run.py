# The `trees` suite: ai.onnx.ml tree ensembles and their companions.
#   1. make_cases.py writes the cases (hand-built trees, XGBoost and
#      scikit-learn ensembles, the companions) with ONNX Runtime or numpy
#      references; `kiln verify` compiles and checks each at batch 1 and 37
#      (rtol 1e-3, atol 1e-5; labels exact).
#   2. Stitched batches: some cases compiled at batch sizes {1, 4} only and
#      run through kiln_run at n = 37 (stitch_main.c), checked against the
#      same references and, for the trained ensembles, against the
#      library's own predictions (labels exact, probabilities and values
#      within rtol 1e-4, atol 1e-5).
#   3. Hostile and unsupported models: one clear error line, exit 2.
#   4. A tree too deep for straight-line C: auto gives node arrays, code an error.
#   usage: run.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [FORM]   (env CC, SANFLAGS)
# FORM (code, arrays; default auto) forces that form of the ensembles (kiln
# --trees); meson runs the suite once with each, and checks the form was the
# one asked.
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, load_tensor, numpy_helper

KILN, SRC, LIBKILN, OUT = sys.argv[1:5]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_cases  # noqa: E402

failures = []
FORM = sys.argv[5] if len(sys.argv) > 5 else "auto"
TREES = ["--trees=" + FORM]
FORM_TEXT = {"code": "straight-line C", "arrays": "node arrays"}.get(FORM)


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


shutil.rmtree(OUT, ignore_errors=True)
cases_dir = os.path.join(OUT, "cases")
r = run([sys.executable, os.path.join(HERE, "make_cases.py"), cases_dir])
sys.stderr.write(r.stderr)
if r.returncode:
    print(r.stdout)
    sys.exit("FAIL: make_cases.py")
cases = sorted(line.split()[0] for line in r.stdout.splitlines())
print("%d cases (%d ONNX Runtime references, %d numpy)" % (
    len(cases), r.stdout.count(" ort"), r.stdout.count(" numpy")))

# 1. kiln verify at the data's batch sizes (1 and 37).
r = run([KILN, "verify"] + TREES + [os.path.join(cases_dir, c) for c in cases])
for line in r.stdout.splitlines() + r.stderr.splitlines():
    if not line.startswith("PASS"):
        print(line)
if r.returncode:
    fail("kiln verify")

# 2. Stitched batches through kiln_run.
STITCHED = ["reg_sum", "reg_min", "cls3_none", "bin_mixed_logistic", "bin_positive_class1",
            "reg_input_f64", "xgb_binary", "xgb_multiclass", "xgb_regressor", "sklearn_gbr",
            "sklearn_gbc_binary", "sklearn_gbc_multiclass", "sklearn_rf", "lincls3_softmax",
            "scaler"]
cc = os.environ.get("CC", "cc").split()
san = os.environ.get("SANFLAGS", "").split()
for name in STITCHED:
    if name not in cases:
        continue
    case = os.path.join(cases_dir, name)
    d = os.path.join(OUT, "stitch", name)
    os.makedirs(d)
    r = run([KILN, "compile", os.path.join(case, "model.onnx"), "--batch", "1,4", "--name", "t",
             "-o", d] + TREES)
    if r.returncode or "warning" in r.stderr:
        fail("%s: kiln compile: %s" % (name, r.stderr.strip()))
        continue
    with open(os.path.join(d, "t.c")) as f:
        src = f.read()
    if FORM_TEXT and "kiln_tree_ensemble" in src and FORM_TEXT not in src:
        fail("%s: --trees=%s did not give %s" % (name, FORM, FORM_TEXT))
    exe = os.path.join(d, "stitch")
    r = run(cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(SRC, "include"),
                  "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                  os.path.join(HERE, "stitch_main.c"), os.path.join(d, "t.o"), LIBKILN, "-lm"]
            + san + ["-o", exe])
    if r.returncode:
        fail("%s: cc: %s" % (name, r.stderr.strip()))
        continue
    sd = os.path.join(case, "test_data_set_1")
    x = numpy_helper.to_array(load_tensor(os.path.join(sd, "input_0.pb")))
    refs = []
    i = 0
    while os.path.exists(os.path.join(sd, "output_%d.pb" % i)):
        refs.append(numpy_helper.to_array(load_tensor(os.path.join(sd, "output_%d.pb" % i))))
        i += 1
    xf = os.path.join(d, "x.bin")
    x.tofile(xf)
    outs = [os.path.join(d, "y%d.bin" % i) for i in range(len(refs))]
    r = run([exe, str(len(x)), xf] + outs)
    if r.returncode:
        fail("%s: stitched run: %s" % (name, r.stderr.strip()))
        continue
    got = [np.fromfile(f, ref.dtype).reshape(ref.shape) for f, ref in zip(outs, refs)]
    for i, (g, ref) in enumerate(zip(got, refs)):
        ok = np.array_equal(g, ref) if ref.dtype == np.int64 else \
            np.allclose(g, ref, rtol=1e-3, atol=1e-5, equal_nan=True)
        if not ok:
            fail("%s: kiln_run n=%d output %d differs from the reference" % (name, len(x), i))
    lib = os.path.join(case, "library.npz")
    if os.path.exists(lib):
        L = np.load(lib)
        assert np.array_equal(L["x"], x, equal_nan=True)
        scores = got[-1]
        if "label" in L and not np.array_equal(got[0], L["label"]):
            fail("%s: labels differ from the library's predict: %d of %d" % (
                name, int((got[0] != L["label"]).sum()), len(x)))
        if not np.allclose(scores, L["scores"], rtol=1e-4, atol=1e-5):
            fail("%s: scores differ from the library's: worst %.3g" % (
                name, float(np.abs(scores - L["scores"]).max())))
print("stitched: %d models at n = 37 from batch sizes {1, 4} (--trees=%s)" % (len(STITCHED), FORM))

# The large-data path (emit_obj.h), forced on a small model: the weights in
# .lrodata flagged SHF_X86_64_LARGE, the code built with -mcmodel=medium, and
# the linked program still right (tests/memory/large_weights.py does it with
# over 2 GiB).
if os.uname().machine == "x86_64" and "xgb_binary" in cases:
    d = os.path.join(OUT, "large")
    os.makedirs(d)
    r = run([KILN, "compile", os.path.join(cases_dir, "xgb_binary", "model.onnx"), "--batch",
             "1,4", "--name", "t", "-o", d] + TREES,
            env=dict(os.environ, KILN_LARGE_DATA_BYTES="0"))
    secs = run(["readelf", "-S", "-W", os.path.join(d, "t.o")]).stdout
    flags = re.findall(r"\.lrodata\s+PROGBITS\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)", secs)
    if r.returncode or not flags or not all("l" in f for f in flags):
        fail("large data: %s %r" % (r.stderr.strip(), flags))
    exe = os.path.join(d, "stitch")
    r = run(cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(SRC, "include"),
                  "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                  os.path.join(HERE, "stitch_main.c"), os.path.join(d, "t.o"), LIBKILN, "-lm"]
            + san + ["-o", exe])
    x = os.path.join(OUT, "stitch", "xgb_binary", "x.bin")
    ys = [os.path.join(d, "y%d.bin" % i) for i in range(2)]
    if r.returncode or run([exe, "37", x] + ys).returncode:
        fail("large data: the program does not build or run: %s" % r.stderr.strip())
    else:
        for i, y in enumerate(ys):
            with open(y, "rb") as f1, open(os.path.join(OUT, "stitch", "xgb_binary",
                                                         "y%d.bin" % i), "rb") as f2:
                if f1.read() != f2.read():
                    fail("large data: output %d differs from the default build's" % i)
    print("large data: .lrodata %s, -mcmodel=medium, same outputs" % flags)


# 3. Errors: one line naming the node, exit 2.
def ens_model(name, attrs, op="TreeEnsembleRegressor", outputs=1):
    outs = [helper.make_tensor_value_info("Y%d" % i, TensorProto.FLOAT, None)
            for i in range(outputs)]
    if outputs == 2:
        outs[0] = helper.make_tensor_value_info("Y0", TensorProto.INT64, None)
    m = make_cases.ml_model(op, attrs, TensorProto.FLOAT, 3, outs)
    path = os.path.join(OUT, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def tree(tree_ids, node_ids, modes, feats, trues, falses, leaf_nodes, prefix="target"):
    n = len(node_ids)
    return dict(nodes_treeids=tree_ids, nodes_nodeids=node_ids, nodes_modes=modes,
                nodes_featureids=feats, nodes_values=[0.5] * n, nodes_truenodeids=trues,
                nodes_falsenodeids=falses, **{prefix + "_treeids": [tree_ids[0]] * len(leaf_nodes),
                                              prefix + "_nodeids": leaf_nodes,
                                              prefix + "_ids": [0] * len(leaf_nodes),
                                              prefix + "_weights": [1.0] * len(leaf_nodes)})


ok_tree = ([0, 0, 0], [0, 1, 2], ["BRANCH_LEQ", "LEAF", "LEAF"], [0, 0, 0], [1, 0, 0],
           [2, 0, 0], [1, 2])
errors = {
    "cycle": (tree([0, 0, 0], [0, 1, 2], ["BRANCH_LEQ", "BRANCH_GT", "LEAF"], [0, 1, 0],
                   [1, 0, 0], [2, 2, 0], [2]),
              "is reached twice: the tree has a cycle or a shared node"),
    "missing_child": (tree([0, 0, 0], [0, 1, 2], ["BRANCH_LEQ", "LEAF", "LEAF"], [0, 0, 0],
                           [1, 0, 0], [7, 0, 0], [1, 2]),
                      "node 0 of tree 0 branches to node 7, which is not in the tree"),
    "feature": (tree([0, 0, 0], [0, 1, 2], ["BRANCH_LEQ", "LEAF", "LEAF"], [3, 0, 0],
                     [1, 0, 0], [2, 0, 0], [1, 2]),
                "a node reads feature 3; the input has 3"),
    "mode": (tree([0, 0, 0], [0, 1, 2], ["BRANCH_XY", "LEAF", "LEAF"], [0, 0, 0], [1, 0, 0],
                  [2, 0, 0], [1, 2]),
             "nodes_modes[0] is not LEAF or a BRANCH_ mode"),
    "lengths": (dict(tree(*ok_tree), nodes_featureids=[0, 0]),
                "the nodes_* attributes must all have 3 entries (nodes_treeids)"),
}
for name, (attrs, msg) in errors.items():
    path = ens_model(name, attrs)
    r = run([KILN, "compile", path, "--batch", "1", "-o", os.path.join(OUT, "err")])
    want = 'kiln: error: %s: node 0 "ens" (TreeEnsembleRegressor, ai.onnx.ml opset 3' % path
    if r.returncode != 2 or not r.stderr.startswith(want) or msg not in r.stderr \
            or r.stderr.count("\n") != 1:
        fail("%s: status %d, got %r, want %r ... %r" % (name, r.returncode, r.stderr, want, msg))
# String labels and ZipMap: refused with advice.
attrs = dict(tree(*ok_tree, prefix="class"), classlabels_strings=["a", "b"])
path = ens_model("strings", attrs, op="TreeEnsembleClassifier", outputs=2)
r = run([KILN, "compile", path, "--batch", "1", "-o", os.path.join(OUT, "err")])
if r.returncode != 2 or "string class labels (classlabels_strings) are not supported" not in r.stderr:
    fail("string labels: status %d, %r" % (r.returncode, r.stderr))
zm = helper.make_model(helper.make_graph(
    [helper.make_node("ZipMap", ["X"], ["Z"], domain="ai.onnx.ml", classlabels_int64s=[0, 1])],
    "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 2])],
    [helper.make_tensor_value_info("Z", TensorProto.FLOAT, None)]),
    opset_imports=[helper.make_opsetid("", 15), helper.make_opsetid("ai.onnx.ml", 1)])
path = os.path.join(OUT, "zipmap.onnx")
with open(path, "wb") as f:
    f.write(zm.SerializeToString())
r = run([KILN, "check", path])
if r.returncode != 1 or "options={'zipmap': False}" not in r.stdout + r.stderr:
    fail("zipmap: status %d, %r" % (r.returncode, r.stdout + r.stderr))
print("errors: %d hostile or unsupported models" % (len(errors) + 2))

# 4. A chain 70 levels deep: past TREE_CODE_MAX_DEPTH (64) for straight-line C.
DEEP = 70
deep = tree([0] * (2 * DEEP + 1), list(range(2 * DEEP + 1)),
            ["BRANCH_LEQ"] * DEEP + ["LEAF"] * (DEEP + 1), [0] * (2 * DEEP + 1),
            [DEEP + k for k in range(DEEP)] + [0] * (DEEP + 1),
            list(range(1, DEEP)) + [2 * DEEP] + [0] * (DEEP + 1), list(range(DEEP, 2 * DEEP + 1)))
path = ens_model("deep", deep)
d = os.path.join(OUT, "deep")
r = run([KILN, "compile", path, "--batch", "1", "--no-cc", "--name", "t", "-o", d])
if r.returncode or "node arrays" not in open(os.path.join(d, "t.c")).read():
    fail("deep tree, --trees=auto: status %d, %r" % (r.returncode, r.stderr))
r = run([KILN, "compile", path, "--batch", "1", "--no-cc", "-o", d, "--trees=code"])
if r.returncode != 2 or r.stderr.count("\n") != 1 or "more than 64 levels deep" not in r.stderr:
    fail("deep tree, --trees=code: status %d, %r" % (r.returncode, r.stderr))
print("deep tree: node arrays (auto), refused by --trees=code")

if failures:
    sys.exit("trees: %d failures" % len(failures))
print("trees: all passed")
