"""One-node cases for tests/opset/elemtypes.py where the ONNX backend data
(ONNX 1.12) has none: the opset 18+ ops, the ai.onnx.ml ops and a few older
ones; and, per element type, If, Loop and Scan models whose bodies carry that
type.

GENERATED: op -> a function returning (model, {input name: array}, outputs):
one node of the op at its case type (float32, or int32 for the Bitwise ops),
inputs drawn from numpy in a range the op takes (integers where an integer
type's rewrite should keep them), outputs None when ONNX Runtime gives the
case's own expected outputs, or numpy arrays (ImageScaler: ONNX Runtime 1.30
has no kernel for it).

CONTROL_FLOW: op -> a function of a kiln type name returning (model, inputs,
expected outputs): the reference by numpy, exact (the values are small
integers, exact in every type).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, ins, outs, inits=(), opsets=(("", 21),)):
    """ins: [(name, array)] graph inputs; outs: [(name, elem type)];
    inits: [(name, array)] initializers."""
    g = helper.make_graph(
        nodes, "case",
        [helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
         for n, a in ins],
        [helper.make_tensor_value_info(n, t, None) for n, t in outs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 10 if any(d in ("", "ai.onnx") and v >= 21 for d, v in opsets) else 8
    return m


def _one(op, ins, outs, inits=(), opsets=(("", 21),), domain=None, **attrs):
    node = helper.make_node(op, [n for n, _ in ins] + [n for n, _ in inits],
                            [n for n, _ in outs], domain=domain, **attrs)
    return _model([node], ins, outs, inits, opsets), dict(ins), None


def _rng(seed):
    return np.random.default_rng(seed)


def _ints(seed, shape, lo, hi, dtype=np.float32):
    return _rng(seed).integers(lo, hi + 1, size=shape).astype(dtype)


def _unif(seed, shape, lo=-2.0, hi=2.0):
    return _rng(seed).uniform(lo, hi, size=shape).astype(np.float32)


def _bitwise(op):
    def make():
        a = _ints(1, (3, 4), -100, 100, np.int32)
        if op == "BitwiseNot":
            return _one(op, [("a", a)], [("y", TensorProto.INT32)], opsets=(("", 18),))
        b = _ints(2, (3, 4), -100, 100, np.int32)
        return _one(op, [("a", a), ("b", b)], [("y", TensorProto.INT32)], opsets=(("", 18),))
    return make


ML = (("", 17), ("ai.onnx.ml", 3))
# ml inputs: whole numbers (an integer rewrite keeps them) with a few halves
X_ML = (_ints(3, (4, 3), -4, 4) + np.array([0, 0.5, 0], np.float32)).astype(np.float32)


def _ml(op, outs, **attrs):
    return lambda: _one(op, [("x", X_ML)], outs, opsets=ML, domain="ai.onnx.ml", **attrs)


def _image_scaler():
    x = _unif(4, (1, 3, 2, 2))
    m, ins, _ = _one("ImageScaler", [("x", x)], [("y", F)], opsets=(("", 9),),
                     scale=2.0, bias=[1.0, 2.0, 3.0])
    return m, ins, [2.0 * x + np.array([1, 2, 3], np.float32).reshape(1, 3, 1, 1)]


def _tree(op):
    # one tree: x[:, 1] <= 0.5 ? leaf 1 : (x[:, 0] < 2 ? leaf 3 : leaf 4)
    tree = dict(nodes_treeids=[0] * 5, nodes_nodeids=[0, 1, 2, 3, 4],
                nodes_featureids=[1, 0, 0, 0, 0],
                nodes_values=[0.5, 0, 2.0, 0, 0],
                nodes_modes=["BRANCH_LEQ", "LEAF", "BRANCH_LT", "LEAF", "LEAF"],
                nodes_truenodeids=[1, 0, 3, 0, 0], nodes_falsenodeids=[2, 0, 4, 0, 0])
    if op == "TreeEnsembleRegressor":
        return _ml(op, [("y", F)], n_targets=1, target_treeids=[0, 0, 0],
                   target_nodeids=[1, 3, 4], target_ids=[0, 0, 0],
                   target_weights=[0.25, -1.5, 3.0], **tree)
    return _ml(op, [("label", I64), ("probs", F)], classlabels_int64s=[0, 1],
               class_treeids=[0] * 6, class_nodeids=[1, 1, 3, 3, 4, 4],
               class_ids=[0, 1] * 3, class_weights=[0.9, 0.1, 0.3, 0.7, 0.5, 0.5], **tree)


GENERATED = {
    **{op: _bitwise(op) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot")},
    "CenterCropPad": lambda: _one("CenterCropPad", [("x", _unif(5, (5, 3, 7)))], [("y", F)],
                                  [("shape", np.array([4, 9], np.int64))], opsets=(("", 18),),
                                  axes=[0, 2]),
    "Gelu": lambda: _one("Gelu", [("x", _unif(6, (3, 5), -3, 3))], [("y", F)]),
    "Mish": lambda: _one("Mish", [("x", _unif(7, (3, 5), -3, 3))], [("y", F)],
                         opsets=(("", 18),)),
    "LpNormalization": lambda: _one("LpNormalization", [("x", _ints(8, (3, 4), -5, 5))],
                                    [("y", F)], axis=1, p=2),
    "AffineGrid": lambda: _one("AffineGrid", [("theta", _unif(9, (2, 2, 3), -1, 1))],
                               [("grid", F)], [("size", np.array([2, 3, 4, 5], np.int64))]),
    "Col2Im": lambda: _one("Col2Im", [("x", _unif(10, (1, 4, 9)))], [("y", F)],
                           [("image_shape", np.array([4, 4], np.int64)),
                            ("block_shape", np.array([2, 2], np.int64))]),
    "DeformConv": lambda: _one("DeformConv", [("x", _unif(11, (1, 2, 4, 4))),
                                              ("w", _unif(12, (3, 2, 2, 2))),
                                              ("offset", _unif(13, (1, 8, 3, 3), -0.7, 0.7))],
                               [("y", F)], kernel_shape=[2, 2]),
    "GlobalLpPool": lambda: _one("GlobalLpPool", [("x", _unif(14, (2, 3, 4, 4)))], [("y", F)],
                                 p=3),
    "GroupNormalization": lambda: _one("GroupNormalization", [("x", _unif(15, (2, 4, 3, 3))),
                                                              ("scale", _unif(16, (4,))),
                                                              ("bias", _unif(17, (4,)))],
                                       [("y", F)], num_groups=2),
    "ImageScaler": _image_scaler,
    "LpPool": lambda: _one("LpPool", [("x", _unif(18, (1, 2, 5, 5)))], [("y", F)],
                           kernel_shape=[2, 2], p=2, strides=[1, 2]),
    "MaxRoiPool": lambda: _one("MaxRoiPool", [("x", _unif(19, (1, 2, 6, 6))),
                                              ("rois", np.array([[0, 0, 0, 3, 3], [0, 1, 2, 5, 5]],
                                                                np.float32))],
                               [("y", F)], opsets=(("", 17),), pooled_shape=[2, 2]),
    "ai.onnx.ml.ArrayFeatureExtractor": lambda: _one(
        "ArrayFeatureExtractor", [("x", X_ML)], [("y", F)],
        [("idx", np.array([0, 2], np.int64))], opsets=ML, domain="ai.onnx.ml"),
    "ai.onnx.ml.Binarizer": _ml("Binarizer", [("y", F)], threshold=0.5),
    "ai.onnx.ml.Imputer": lambda: _one(
        "Imputer", [("x", np.where(X_ML < -2, np.float32(-1), X_ML))], [("y", F)], opsets=ML,
        domain="ai.onnx.ml", imputed_value_floats=[7.0, 8.0, 9.0], replaced_value_float=-1.0),
    "ai.onnx.ml.LinearClassifier": _ml(
        "LinearClassifier", [("label", I64), ("scores", F)], classlabels_ints=[0, 1, 2],
        coefficients=list(_unif(20, (9,), -1, 1)), intercepts=[0.1, -0.2, 0.3]),
    "ai.onnx.ml.LinearRegressor": _ml("LinearRegressor", [("y", F)],
                                      coefficients=[0.5, -1.0, 2.0], intercepts=[0.25]),
    "ai.onnx.ml.Normalizer": _ml("Normalizer", [("y", F)], norm="L2"),
    "ai.onnx.ml.Scaler": _ml("Scaler", [("y", F)], offset=[0.5, -1.0, 2.0],
                             scale=[2.0, 0.5, -1.0]),
    "ai.onnx.ml.TreeEnsembleClassifier": _tree("TreeEnsembleClassifier"),
    "ai.onnx.ml.TreeEnsembleRegressor": _tree("TreeEnsembleRegressor"),
}


# -- If, Loop and Scan per element type -----------------------------------

def _vi(name, code, shape):
    return helper.make_tensor_value_info(name, code, shape)


def _vals(tname, seed, shape):
    """Small whole numbers of tname (bool: their parity), and their numpy
    values (bfloat16 as float32)."""
    v = _rng(seed).integers(0, 7, size=shape)
    if tname == "bool":
        return (v % 2).astype(bool)
    return v.astype(np.float32 if tname == "bfloat16" else tname)


def _combine(tname):
    """The body's two-input op for tname and its numpy twin: Add, or Xor for bool."""
    if tname == "bool":
        return "Xor", np.logical_xor
    return "Add", np.add


def _if(tname, code):
    x, y = _vals(tname, 21, (2, 3)), _vals(tname, 22, (2, 3))
    op, f = _combine(tname)
    then_g = helper.make_graph([helper.make_node(op, ["x", "y"], ["t"])], "then", [],
                               [_vi("t", code, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Identity", ["y"], ["e"])], "else", [],
                               [_vi("e", code, [2, 3])])
    outs, ins, refs = [], [], []
    nodes = []
    for k, c in enumerate((True, False)):
        nodes.append(helper.make_node("If", [f"c{k}"], [f"r{k}"], then_branch=then_g,
                                      else_branch=else_g))
        ins.append((f"c{k}", np.array(c)))
        outs.append(_vi(f"r{k}", code, [2, 3]))
        refs.append(f(x, y) if c else y)
    g = helper.make_graph(nodes, "if", [_vi("c0", TensorProto.BOOL, []),
                                        _vi("c1", TensorProto.BOOL, []),
                                        _vi("x", code, [2, 3]), _vi("y", code, [2, 3])], outs)
    return g, dict(ins + [("x", x), ("y", y)]), refs


def _loop(tname, code):
    x, v0 = _vals(tname, 23, (2, 3)), _vals(tname, 24, (2, 3))
    op, f = _combine(tname)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node(op, ["v_in", "x"], ["v_out"]),
         helper.make_node("Identity", ["v_out"], ["scan_out"])], "body",
        [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
         _vi("v_in", code, [2, 3])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out", code, [2, 3]),
         _vi("scan_out", code, [2, 3])])
    node = helper.make_node("Loop", ["m", "cond", "v0"], ["v", "stacked"], body=body)
    g = helper.make_graph(
        [node], "loop", [_vi("x", code, [2, 3]), _vi("v0", code, [2, 3])],
        [_vi("v", code, [2, 3]), _vi("stacked", code, [3, 2, 3])],
        [numpy_helper.from_array(np.array(3, np.int64), "m"),
         numpy_helper.from_array(np.array(True), "cond")])
    steps, v = [], v0
    for _ in range(3):
        v = f(v, x)
        steps.append(v)
    return g, {"x": x, "v0": v0}, [v, np.stack(steps)]


def _scan(tname, code):
    s0, xs = _vals(tname, 25, (3,)), _vals(tname, 26, (4, 3))
    op, f = _combine(tname)
    body = helper.make_graph(
        [helper.make_node(op, ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
        [_vi("s_in", code, [3]), _vi("x_t", code, [3])],
        [_vi("s_out", code, [3]), _vi("y_t", code, [3])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)
    g = helper.make_graph([node], "scan", [_vi("s0", code, [3]), _vi("xs", code, [4, 3])],
                          [_vi("s", code, [3]), _vi("ys", code, [4, 3])])
    steps, s = [], s0
    for t in range(4):
        s = f(s, xs[t])
        steps.append(s)
    return g, {"s0": s0, "xs": xs}, [s, np.stack(steps)]


def _control(build):
    def make(tname, code):
        g, ins, refs = build(tname, code)
        # opset 17 (bfloat16 from If/Loop/Scan 16): merged with the backend
        # cases' pairs, most of which compile at 17
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m, ins, refs
    return make


CONTROL_FLOW = {"If": _control(_if), "Loop": _control(_loop), "Scan": _control(_scan)}
