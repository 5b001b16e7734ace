# Tree-ensemble and ai.onnx.ml cases in the ONNX backend-test layout
# (model.onnx, test_data_set_0 at batch 1 and test_data_set_1 at batch 37):
#   - hand-built trees covering every node mode, missing-value tracks, the
#     aggregate functions, post-transforms, base values, the binary and
#     multi-class classifier conventions, double thresholds and double and
#     int64 inputs;
#   - ensembles trained with XGBoost and scikit-learn, written as
#     TreeEnsemble nodes here (no converter package is installed);
#   - the companions (LinearClassifier/Regressor, Scaler, Normalizer,
#     Binarizer, Imputer, ArrayFeatureExtractor).
# References: ONNX Runtime 1.30 (tests/trees/ort_ref.js) where it follows
# the spec; numpy (the spec's formulas, below) where it departs; and, for
# the trained ensembles, the library's own predictions (library.npz, checked
# by run.py). A case whose reference is ONNX Runtime is left out, with one
# line saying so, when ONNX Runtime cannot load.
#   usage: make_cases.py OUTDIR   (prints one line per case: NAME REF)
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from scipy.special import ndtri

HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = (1, 37)
rng = np.random.default_rng(15)
ORT_OK = None


def ort_available():
    global ORT_OK
    if ORT_OK is None:
        r = subprocess.run(["node", "-e", 'require("onnxruntime-node")'],
                           capture_output=True, text=True)
        ORT_OK = r.returncode == 0
        if not ORT_OK:
            print("SKIP: ONNX Runtime cannot load (NODE_PATH=$(scripts/install-ort.sh)): "
                  "the cases it references are left out", file=sys.stderr)
    return ORT_OK


ORT_TYPES = {np.float32: "float32", np.float64: "float64", np.int32: "int32",
             np.int64: "int64"}


JOBS = []   # ONNX Runtime runs, made at the end in one node process


def ort_run_all(out):
    jobs = os.path.join(out, "ort-jobs.json")
    with open(jobs, "w") as f:
        json.dump([j["job"] for j in JOBS], f)
    subprocess.run(["node", os.path.join(HERE, "ort_ref.js"), jobs], check=True)
    for j in JOBS:
        d, x = j["job"]["outdir"], j["x"]
        ys = [np.fromfile(os.path.join(d, "output_%d.bin" % i), t)
              for i, t in enumerate(j["types"])]
        # labels [N], scores [N, -1]
        ys = [y if t == np.int64 else y.reshape(len(x), -1) for y, t in zip(ys, j["types"])]
        j["done"](ys)


# ---- trees as nested tuples -------------------------------------------------
# ("LEAF", [(target, weight), ...]) or
# (MODE, feature, threshold, true_subtree, false_subtree, missing_tracks_true)

def flatten(trees):
    """The TreeEnsemble attributes of trees: tree ids 3t+1 (not contiguous),
    node ids depth first, each tree's nodes after its root shuffled."""
    nodes, leaves = [], []
    for t, tree in enumerate(trees):
        tid, local = 3 * t + 1, []

        def visit(n):
            nid = len(local)
            local.append(None)
            if n[0] == "LEAF":
                local[nid] = ("LEAF", 0, 0.0, 0, 0, 0)
                leaves.extend((tid, nid, tg, w) for tg, w in n[1])
            else:
                mode, f, thr, ts, fs, miss = n
                a, b = visit(ts), visit(fs)
                local[nid] = ("BRANCH_" + mode, f, thr, a, b, miss)
            return nid
        visit(tree)
        order = [0] + list(rng.permutation(np.arange(1, len(local))))
        nodes.extend((tid, int(i)) + local[i] for i in order)
    return nodes, leaves


def tree_attrs(trees, prefix, double=False):
    nodes, leaves = flatten(trees)
    a = dict(nodes_treeids=[n[0] for n in nodes], nodes_nodeids=[n[1] for n in nodes],
             nodes_modes=[n[2] for n in nodes], nodes_featureids=[n[3] for n in nodes],
             nodes_truenodeids=[n[5] for n in nodes], nodes_falsenodeids=[n[6] for n in nodes],
             nodes_missing_value_tracks_true=[n[7] for n in nodes])
    a[prefix + "_treeids"] = [l[0] for l in leaves]
    a[prefix + "_nodeids"] = [l[1] for l in leaves]
    a[prefix + "_ids"] = [l[2] for l in leaves]
    thr = [float(n[4]) for n in nodes]
    w = [float(l[3]) for l in leaves]
    if double:
        a["nodes_values_as_tensor"] = numpy_helper.from_array(np.array(thr, np.float64), "t")
        a[prefix + "_weights_as_tensor"] = numpy_helper.from_array(np.array(w, np.float64), "w")
    else:
        a["nodes_values"] = thr
        a[prefix + "_weights"] = w
    return a


def walk(n, x, double):
    while n[0] != "LEAF":
        mode, f, thr, ts, fs, miss = n
        v = float(x[f])
        th = float(thr) if double else float(np.float32(thr))
        go = {"LEQ": v <= th, "LT": v < th, "GTE": v >= th, "GT": v > th, "EQ": v == th,
              "NEQ": v != th}[mode]
        if miss and np.isnan(v):
            go = True
        n = ts if go else fs
    return n[1]


def post_transform(s, post):
    s = np.asarray(s, np.float64)
    if post == "LOGISTIC":
        return 1 / (1 + np.exp(-s))
    if post == "SOFTMAX":
        e = np.exp(s - s.max())
        return e / e.sum()
    if post == "PROBIT":
        return ndtri(s)    # sqrt(2) erfinv(2p - 1), the spec's PROBIT
    return s


def regressor_reference(trees, X, nt, agg="SUM", base=None, post="NONE", double=False):
    """The spec's TreeEnsembleRegressor, in double."""
    out = np.zeros((len(X), nt))
    for r, x in enumerate(X):
        s, has = np.zeros(nt), np.zeros(nt, bool)
        for tree in trees:
            for tg, w in walk(tree, x, double):
                w = float(w) if double else float(np.float32(w))
                if agg in ("SUM", "AVERAGE"):
                    s[tg] += w
                elif not has[tg] or (w < s[tg] if agg == "MIN" else w > s[tg]):
                    s[tg] = w
                has[tg] = True
        if agg == "AVERAGE":
            s /= len(trees)
        if base is not None:
            s += np.array(base, np.float32 if not double else np.float64)
        out[r] = post_transform(s, post)
    return out.astype(np.float32)


# ---- models and cases -------------------------------------------------------

def ml_model(op, attrs, x_type, nfeat, outputs, ml_opset=3, extra_inputs=(), inits=()):
    inputs = ["X"] + [i.name for i in extra_inputs]   # initializers only
    node = helper.make_node(op, inputs, [o.name for o in outputs], domain="ai.onnx.ml",
                            name="ens", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", x_type, ["N", nfeat])],
                          list(outputs), initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15),
                                               helper.make_opsetid("ai.onnx.ml", ml_opset)],
                             ir_version=8)


def write_case(out, name, model, xs, refs, library=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for s, (x, ys) in enumerate(zip(xs, refs)):
        sd = os.path.join(d, "test_data_set_%d" % s)
        os.makedirs(sd, exist_ok=True)
        with open(os.path.join(sd, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "X").SerializeToString())
        for i, y in enumerate(ys):
            with open(os.path.join(sd, "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(y).SerializeToString())
    if library is not None:
        np.savez(os.path.join(d, "library.npz"), **library)


def inputs(nfeat, dtype=np.float32, grid=True, nan=0.1):
    """Batches of 1 and 37 rows; on a grid of quarters, so thresholds are hit
    exactly (EQ, NEQ, LEQ at the boundary), with some NaNs."""
    xs = []
    for n in BATCHES:
        x = rng.integers(-8, 9, (n, nfeat)) / 4.0 if grid else rng.normal(size=(n, nfeat))
        if nan and np.issubdtype(dtype, np.floating):
            x[rng.random(x.shape) < nan] = np.nan
        xs.append(x.astype(dtype))
    return xs


def case(out, name, model, xs, reference, out_types, library=None):
    """xs: the batch of 37 rows (the batch of 1 is its first row).
    reference: 'ort' or a function of x giving the outputs."""
    xs = [xs[1][:1], xs[1]]
    if reference != "ort":
        write_case(out, name, model, xs, [reference(x) for x in xs], library)
        print(name, "numpy")
        return
    if not ort_available():
        return
    d = os.path.join(out, "ort", name)
    os.makedirs(d, exist_ok=True)
    mp, xf = os.path.join(d, "model.onnx"), os.path.join(d, "x.bin")
    with open(mp, "wb") as f:
        f.write(model.SerializeToString())
    x = xs[1]
    x.tofile(xf)
    job = dict(model=mp, outdir=d, inputs=[dict(name="X", file=xf, type=ORT_TYPES[x.dtype.type],
                                                dims=list(x.shape))])

    def done(ys):
        write_case(out, name, model, xs, [[y[:1] for y in ys], ys], library)
        print(name, "ort")
    JOBS.append(dict(job=job, x=x, types=out_types, done=done))


def random_tree(depth, nfeat, leaf, modes, miss_p=0.3):
    if depth == 0 or rng.random() < 0.15:
        return ("LEAF", leaf())
    return (str(rng.choice(modes)), int(rng.integers(nfeat)), float(rng.integers(-6, 7) / 4.0),
            random_tree(depth - 1, nfeat, leaf, modes, miss_p),
            random_tree(depth - 1, nfeat, leaf, modes, miss_p), int(rng.random() < miss_p))


MODES = ["LEQ", "LT", "GTE", "GT", "EQ", "NEQ"]


def hand_cases(out):
    F = 5
    def reg_leaf(nt):
        return lambda: [(int(t), float(rng.normal())) for t in range(nt) if rng.random() < 0.8]
    f32 = [np.float32]

    # Regressors: every mode, missing tracks, each aggregate, base values.
    for agg in ("SUM", "AVERAGE", "MIN", "MAX"):
        trees = [random_tree(4, F, reg_leaf(2), MODES) for _ in range(6)]
        a = tree_attrs(trees, "target")
        m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=2, aggregate_function=agg,
                                                   base_values=[0.25, -1.5]),
                     TensorProto.FLOAT, F, [helper.make_tensor_value_info("Y", 1, None)])
        case(out, "reg_%s" % agg.lower(), m, inputs(F), "ort", f32)
    # Post-transforms over 3 targets (ONNX Runtime follows the spec there).
    for post in ("SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"):
        leaf = (lambda: [(int(t), float(rng.uniform(0.05, 0.3))) for t in range(3)]) \
            if post == "PROBIT" else reg_leaf(3)
        trees = [random_tree(3, F, leaf, MODES) for _ in range(3)]
        a = tree_attrs(trees, "target")
        m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=3, post_transform=post),
                     TensorProto.FLOAT, F, [helper.make_tensor_value_info("Y", 1, None)])
        if post == "PROBIT":   # ONNX Runtime approximates erfinv: the spec, in numpy
            case(out, "reg3_probit", m, inputs(F),
                 lambda x, t=trees: [regressor_reference(t, x, 3, post="PROBIT")], f32)
        elif post == "SOFTMAX_ZERO":
            case(out, "reg3_softmax_zero", m, inputs(F), "ort", f32)
        else:
            case(out, "reg3_%s" % post.lower(), m, inputs(F), "ort", f32)
    # One target with LOGISTIC or SOFTMAX: ONNX Runtime ignores the transform;
    # the spec applies it (SOFTMAX of one score is 1).
    for post in ("LOGISTIC", "SOFTMAX"):
        trees = [random_tree(4, F, reg_leaf(1), MODES) for _ in range(4)]
        a = tree_attrs(trees, "target")
        m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=1, post_transform=post,
                                                   base_values=[0.5]),
                     TensorProto.FLOAT, F, [helper.make_tensor_value_info("Y", 1, None)])
        case(out, "reg1_%s" % post.lower(), m, inputs(F),
             lambda x, t=trees, p=post: [regressor_reference(t, x, 1, base=[0.5], post=p)], f32)
    # Double thresholds and weights (opset 3 *_as_tensor), compared in double
    # (ONNX Runtime rounds them to float for a float input): numpy. The
    # thresholds sit between float32 neighbours of the inputs.
    trees = [random_tree(4, F, reg_leaf(2), ["LEQ", "LT", "GTE", "GT"], 0) for _ in range(5)]
    def nudge(n):
        if n[0] == "LEAF":
            return n
        return (n[0], n[1], n[2] + 1e-9, nudge(n[3]), nudge(n[4]), n[5])
    trees = [nudge(t) for t in trees]
    a = tree_attrs(trees, "target", double=True)
    m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=2), TensorProto.FLOAT, F,
                 [helper.make_tensor_value_info("Y", 1, None)])
    case(out, "reg_double_thresholds", m, inputs(F, nan=0),
         lambda x, t=trees: [regressor_reference(t, x, 2, double=True)], f32)
    # Double and int64 inputs (float thresholds).
    trees = [random_tree(4, F, reg_leaf(2), MODES) for _ in range(4)]
    for dt, tp, nm in ((np.float64, TensorProto.DOUBLE, "f64"), (np.int64, TensorProto.INT64, "i64")):
        a = tree_attrs(trees, "target")
        m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=2), tp, F,
                     [helper.make_tensor_value_info("Y", 1, None)])
        xs = [x * 4 for x in inputs(F, nan=0)] if dt == np.int64 else inputs(F)
        # ONNX Runtime has no int64 TreeEnsembleRegressor kernel: numpy there.
        ref = "ort" if dt == np.float64 else lambda x, t=trees: [regressor_reference(t, x, 2)]
        case(out, "reg_input_%s" % nm, m, [x.astype(dt) for x in xs], ref, f32)

    # Classifiers. Multi-class with labels that are not 0..C-1.
    i64f = [np.int64, np.float32]
    outs = [helper.make_tensor_value_info("label", TensorProto.INT64, None),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)]
    for post, base in (("NONE", [0.1, 0.2, -0.3]), ("SOFTMAX", None), ("LOGISTIC", [0.0, 1.0, 0.0])):
        trees = [random_tree(4, F, reg_leaf(3), MODES) for _ in range(5)]
        a = tree_attrs(trees, "class")
        attrs = dict(a, classlabels_int64s=[10, 20, 30], post_transform=post)
        if base:
            attrs["base_values"] = base
        m = ml_model("TreeEnsembleClassifier", attrs, TensorProto.FLOAT, F, outs)
        case(out, "cls3_%s" % post.lower(), m, inputs(F), "ort", i64f)
    # Binary: one class id with mixed-sign weights (XGBoost's, LightGBM's and
    # scikit-learn boosting's export), with each post-transform.
    for post in ("LOGISTIC", "NONE", "SOFTMAX"):
        trees = [random_tree(4, F, lambda: [(0, float(rng.normal()))], MODES) for _ in range(5)]
        a = tree_attrs(trees, "class")
        m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1],
                                                    post_transform=post, base_values=[0.3]),
                     TensorProto.FLOAT, F, outs)
        case(out, "bin_mixed_%s" % post.lower(), m, inputs(F), "ort", i64f)
    # Binary: positive weights on one class (probabilities).
    for cid in (0, 1):
        trees = [random_tree(4, F, lambda c=cid: [(c, float(rng.uniform(0, 0.25)))], MODES)
                 for _ in range(4)]
        a = tree_attrs(trees, "class")
        m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[7, 9]),
                     TensorProto.FLOAT, F, outs)
        case(out, "bin_positive_class%d" % cid, m, inputs(F), "ort", i64f)
    # Binary with weights on both classes, as a two-class multi-class model.
    trees = [random_tree(4, F, reg_leaf(2), MODES) for _ in range(4)]
    a = tree_attrs(trees, "class")
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1],
                                                post_transform="SOFTMAX"),
                 TensorProto.FLOAT, F, outs)
    case(out, "bin_two_classes", m, inputs(F), "ort", i64f)
    # Opset 1 form (ai.onnx.ml 1), int64 input.
    a = tree_attrs(trees, "class")
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1]),
                 TensorProto.INT64, F, outs, ml_opset=1)
    case(out, "bin_opset1_int64", m, [(x * 4).astype(np.int64) for x in inputs(F, nan=0)],
         "ort", i64f)


# ---- trained ensembles ------------------------------------------------------

def xgb_tree(node):
    """An XGBoost JSON dump node as a nested tuple: x < split goes to `yes`;
    a missing value goes to `missing`."""
    if "leaf" in node:
        return ("LEAF", node["leaf"])
    kids = {c["nodeid"]: c for c in node["children"]}
    return ("LT", int(node["split"][1:]), node["split_condition"],
            xgb_tree(kids[node["yes"]]), xgb_tree(kids[node["no"]]),
            int(node["missing"] == node["yes"]))


def with_leaf(t, f):
    if t[0] == "LEAF":
        return ("LEAF", f(t[1]))
    return t[:3] + (with_leaf(t[3], f), with_leaf(t[4], f), t[5])


def sk_tree(est, leaf):
    """A scikit-learn tree: x <= threshold goes left (the true branch)."""
    tr = est.tree_
    def node(i):
        if tr.children_left[i] < 0:
            return ("LEAF", leaf(tr.value[i]))
        return ("LEQ", int(tr.feature[i]), float(tr.threshold[i]), node(tr.children_left[i]),
                node(tr.children_right[i]), 0)
    return node(0)


def trained_cases(out):
    import xgboost as xgb
    from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                                  RandomForestClassifier)
    F = 6
    Xtr = rng.normal(size=(400, F)).astype(np.float32)
    y2 = (Xtr[:, 0] + Xtr[:, 1] * Xtr[:, 2] > 0.2).astype(int)
    y3 = np.digitize(Xtr[:, 0] + 0.5 * Xtr[:, 3], [-0.5, 0.5])
    yr = Xtr[:, 0] * 2 + np.sin(Xtr[:, 1]) + 0.1 * rng.normal(size=400)
    def test_x(nan):
        xs = [rng.normal(size=(n, F)).astype(np.float32) for n in BATCHES]
        for x in xs:
            if nan:
                x[rng.random(x.shape) < 0.05] = np.nan
        return xs
    outs = [helper.make_tensor_value_info("label", TensorProto.INT64, None),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, None)]
    i64f = [np.int64, np.float32]

    def regressor(name, trees, base, model, nan):
        """One target: the trees' sum plus base, against model.predict."""
        a = tree_attrs(trees, "target")
        m = ml_model("TreeEnsembleRegressor", dict(a, n_targets=1, base_values=[base]),
                     TensorProto.FLOAT, F, [helper.make_tensor_value_info("variable", 1, None)])
        xs = test_x(nan)
        lib = dict(scores=model.predict(xs[1]).reshape(-1, 1), x=xs[1])
        case(out, name, m, xs, "ort", [np.float32], lib)

    # XGBoost binary:logistic: one class id, LOGISTIC, base margin 0 (base_score 0.5).
    clf = xgb.XGBClassifier(n_estimators=25, max_depth=4, base_score=0.5, tree_method="exact")
    clf.fit(Xtr, y2)
    trees = [xgb_tree(json.loads(d)) for d in clf.get_booster().get_dump(dump_format="json")]
    trees = [with_leaf(t, lambda v: [(0, v)]) for t in trees]
    a = tree_attrs(trees, "class")
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1],
                                                post_transform="LOGISTIC", base_values=[0.0]),
                 TensorProto.FLOAT, F, outs)
    xs = test_x(True)
    lib = dict(label=clf.predict(xs[1]), scores=clf.predict_proba(xs[1]), x=xs[1])
    case(out, "xgb_binary", m, xs, "ort", i64f, lib)
    # XGBoost multi:softprob: tree k belongs to class k mod 3, SOFTMAX.
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, base_score=0.5, tree_method="exact")
    clf.fit(Xtr, y3)
    dumps = clf.get_booster().get_dump(dump_format="json")
    trees = [with_leaf(xgb_tree(json.loads(d)), lambda v, k=i % 3: [(k, v)])
             for i, d in enumerate(dumps)]
    a = tree_attrs(trees, "class")
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1, 2],
                                                post_transform="SOFTMAX",
                                                base_values=[0.5, 0.5, 0.5]),
                 TensorProto.FLOAT, F, outs)
    xs = test_x(True)
    lib = dict(label=clf.predict(xs[1]), scores=clf.predict_proba(xs[1]), x=xs[1])
    case(out, "xgb_multiclass", m, xs, "ort", i64f, lib)
    # XGBoost regression: SUM plus base_score.
    reg = xgb.XGBRegressor(n_estimators=30, max_depth=4, base_score=0.5, tree_method="exact")
    reg.fit(Xtr, yr)
    trees = [with_leaf(xgb_tree(json.loads(d)), lambda v: [(0, v)])
             for d in reg.get_booster().get_dump(dump_format="json")]
    regressor("xgb_regressor", trees, 0.5, reg, True)

    # scikit-learn GradientBoostingRegressor: init mean + learning_rate * trees.
    gbr = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(Xtr, yr)
    lr = gbr.learning_rate
    trees = [sk_tree(e[0], lambda v: [(0, lr * v[0][0])]) for e in gbr.estimators_]
    regressor("sklearn_gbr", trees, float(gbr.init_.constant_[0][0]), gbr, False)
    # scikit-learn GradientBoostingClassifier, binary: log-odds, LOGISTIC.
    gbc = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(Xtr, y2)
    lr = gbc.learning_rate
    trees = [sk_tree(e[0], lambda v: [(0, lr * v[0][0])]) for e in gbc.estimators_]
    a = tree_attrs(trees, "class")
    prior = float(gbc._raw_predict_init(Xtr[:1])[0][0])
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1],
                                                post_transform="LOGISTIC", base_values=[prior]),
                 TensorProto.FLOAT, F, outs)
    xs = test_x(False)
    lib = dict(label=gbc.predict(xs[1]), scores=gbc.predict_proba(xs[1]), x=xs[1])
    case(out, "sklearn_gbc_binary", m, xs, "ort", i64f, lib)
    # scikit-learn GradientBoostingClassifier, 3 classes: SOFTMAX.
    gbc = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(Xtr, y3)
    lr = gbc.learning_rate
    trees = [sk_tree(e[k], lambda v, k=k: [(k, lr * v[0][0])]) for e in gbc.estimators_
             for k in range(3)]
    a = tree_attrs(trees, "class")
    prior = [float(v) for v in gbc._raw_predict_init(Xtr[:1])[0]]
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1, 2],
                                                post_transform="SOFTMAX", base_values=prior),
                 TensorProto.FLOAT, F, outs)
    xs = test_x(False)
    lib = dict(label=gbc.predict(xs[1]), scores=gbc.predict_proba(xs[1]), x=xs[1])
    case(out, "sklearn_gbc_multiclass", m, xs, "ort", i64f, lib)
    # scikit-learn RandomForestClassifier: leaf class frequencies / n_trees.
    rf = RandomForestClassifier(n_estimators=12, max_depth=5, random_state=0).fit(Xtr, y3)
    n = len(rf.estimators_)
    trees = [sk_tree(e, lambda v: [(k, float(v[0][k] / v[0].sum() / n)) for k in range(3)])
             for e in rf.estimators_]
    a = tree_attrs(trees, "class")
    m = ml_model("TreeEnsembleClassifier", dict(a, classlabels_int64s=[0, 1, 2]),
                 TensorProto.FLOAT, F, outs)
    xs = test_x(False)
    lib = dict(label=rf.predict(xs[1]), scores=rf.predict_proba(xs[1]), x=xs[1])
    case(out, "sklearn_rf", m, xs, "ort", i64f, lib)


# ---- the companions ---------------------------------------------------------

def companion_cases(out):
    F = 4
    f32 = [np.float32]
    y = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
    coef = rng.normal(size=(3, F)).round(3)
    for post in ("NONE", "SOFTMAX", "LOGISTIC"):
        m = ml_model("LinearRegressor", dict(coefficients=coef.ravel().tolist(),
                                             intercepts=[0.5, -0.5, 0.0], targets=3,
                                             post_transform=post),
                     TensorProto.FLOAT, F, y, ml_opset=1)
        case(out, "linreg_%s" % post.lower(), m, inputs(F, grid=False, nan=0), "ort", f32)
    outs = [helper.make_tensor_value_info("label", TensorProto.INT64, None),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, None)]
    for post in ("NONE", "SOFTMAX", "LOGISTIC"):
        m = ml_model("LinearClassifier", dict(coefficients=coef.ravel().tolist(),
                                              intercepts=[0.5, -0.5, 0.0],
                                              classlabels_ints=[3, 4, 5], post_transform=post),
                     TensorProto.FLOAT, F, outs, ml_opset=1)
        case(out, "lincls3_%s" % post.lower(), m, inputs(F, grid=False, nan=0), "ort",
             [np.int64, np.float32])
    for post in ("NONE", "LOGISTIC"):
        m = ml_model("LinearClassifier", dict(coefficients=coef[0].tolist(), intercepts=[0.2],
                                              classlabels_ints=[0, 1], post_transform=post),
                     TensorProto.FLOAT, F, outs, ml_opset=1)
        case(out, "lincls2_%s" % post.lower(), m, inputs(F, grid=False, nan=0), "ort",
             [np.int64, np.float32])
    m = ml_model("Scaler", dict(offset=[0.5, 1, -1, 2], scale=[2, 0.5, 1, 3]), TensorProto.FLOAT,
                 F, y, ml_opset=1)
    case(out, "scaler", m, inputs(F, grid=False, nan=0), "ort", f32)
    for norm in ("MAX", "L1", "L2"):
        m = ml_model("Normalizer", dict(norm=norm), TensorProto.FLOAT, F, y, ml_opset=1)
        case(out, "normalizer_%s" % norm.lower(), m, inputs(F, grid=False, nan=0), "ort", f32)
    m = ml_model("Binarizer", dict(threshold=0.25), TensorProto.FLOAT, F, y, ml_opset=1)
    case(out, "binarizer", m, inputs(F, nan=0), "ort", f32)
    m = ml_model("Imputer", dict(imputed_value_floats=[1.0, 2.0, 3.0, 4.0], replaced_value_float=np.nan),
                 TensorProto.FLOAT, F, y, ml_opset=1)
    case(out, "imputer_nan", m, inputs(F), "ort", f32)
    m = ml_model("Imputer", dict(imputed_value_floats=[9.0], replaced_value_float=0.5),
                 TensorProto.FLOAT, F, y, ml_opset=1)
    case(out, "imputer_value", m, inputs(F, nan=0), "ort", f32)
    idx = numpy_helper.from_array(np.array([3, 0, 3], np.int64), "idx")
    m = ml_model("ArrayFeatureExtractor", {}, TensorProto.FLOAT, F, y, ml_opset=1,
                 extra_inputs=[helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                 inits=[idx])
    case(out, "array_feature_extractor", m, inputs(F, grid=False), "ort", f32)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    hand_cases(out)
    trained_cases(out)
    companion_cases(out)
    if JOBS:
        ort_run_all(out)


if __name__ == "__main__":
    main()
