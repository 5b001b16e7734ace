"""Issue 27's loader and real-model cases for run.py (the decorators:
registry.py): sparse initializers and sparse_value constants (densified,
every index checked), ref_attr_name outside a function, Scan bodies reading
outer-scope values (CNTK), float16 Gemm and MatMul, scikit-learn classifiers
ending in ZipMap (--zipmap=tensor; its string keys escaped in NAME.h)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from registry import Cases

_cases = Cases()
RUN, ERRORS, COMPILES = _cases.RUN, _cases.ERRORS, _cases.COMPILES
run, error, compiles = _cases.run, _cases.error, _cases.compiles
F, H, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), sparse=(), opset=13, ir=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    g.sparse_initializer.extend(sparse)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def sparse(name, dims, indices, values, vdt=np.float32, idt=np.int64):
    v = numpy_helper.from_array(np.array(values, vdt), name)
    i = numpy_helper.from_array(np.array(indices, idt), name + "_indices")
    return helper.make_sparse_tensor(v, i, dims)


def x_in(shape, seed=0, dt=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


# ---- sparse initializers ------------------------------------------------------


def sparse_add(sp, elem=F, n=8):
    return model([helper.make_node("Add", ["x", sp.values.name], ["y"], name="add")],
                 [vi("x", elem, [2, n])], [vi("y", elem, [2, n])], sparse=[sp])


@run
def sparse_linear():
    # dims [8], indices [0, 2, 5], values [7, 8, 9]: x + [7, 0, 8, 0, 0, 9, 0, 0]
    return sparse_add(sparse("W", [8], [0, 2, 5], [7, 8, 9])), {"x": x_in([2, 8])}


@run
def sparse_coordinates_int64():
    # [3, 4] from [NNZ, 2] coordinates, int64 values, int32 indices
    sp = sparse("W", [3, 4], [[0, 1], [1, 0], [1, 3], [2, 2]], [5, -6, 7, 1 << 40], np.int64,
                np.int32)
    m = model([helper.make_node("Add", ["x", "W"], ["y"], name="add")],
              [vi("x", I64, [3, 4])], [vi("y", I64, [3, 4])], sparse=[sp])
    return m, {"x": np.arange(12, dtype=np.int64).reshape(3, 4)}


@run
def sparse_constant_node():
    sp = sparse("c", [2, 3], [1, 5], [2.5, -4.0])
    node = helper.make_node("Constant", [], ["w"], name="const", sparse_value=sp)
    m = model([node, helper.make_node("Mul", ["x", "w"], ["y"], name="mul")],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    return m, {"x": x_in([2, 3], 1)}


@run
def sparse_no_values():
    # NNZ 0: the zero tensor
    return sparse_add(sparse("W", [8], np.zeros(0, np.int64), np.zeros(0, np.float32))), \
        {"x": x_in([2, 8], 2)}


def refused(name, dims, idx, vals, *fragments, **kw):
    def make():
        return sparse_add(sparse("W", dims, idx, vals, **kw), n=max(1, int(np.prod(dims))))
    make.__name__ = name
    error("refused: " + fragments[0])(make)


refused("sparse_out_of_range", [8], [0, 9, 5], [7, 8, 9],
        'sparse initializer "W": index 9 of value 1 lies outside its 8 elements')
refused("sparse_negative", [8], [0, -1, 5], [7, 8, 9],
        'sparse initializer "W": index -1 of value 1 lies outside')
refused("sparse_duplicate", [8], [0, 2, 2], [7, 8, 9],
        'sparse initializer "W": value 2 repeats the previous index (element 2)')
refused("sparse_unsorted", [8], [5, 2], [7, 8],
        'sparse initializer "W": value 1 comes after a larger index')
refused("sparse_count_mismatch", [8], [0, 2], [7, 8, 9],
        'sparse initializer "W": indices of rank 1 and 2 rows do not fit 3 values')
refused("sparse_coordinate_out_of_range", [2, 4], [[0, 1], [1, 4]], [7, 8],
        'sparse initializer "W": index 4 of value 1 lies outside dimension 1 (size 4)')
refused("sparse_huge", [1 << 24], [0], [7],
        'sparse initializer "W" holds 1 values in 16777216 elements: 64.0 MiB dense, more than '
        'the 16 MiB')
refused("sparse_dims_overflow", [1 << 40, 1 << 40], [0], [7],
        'sparse initializer "W" has too many elements')


@error('refused: node 0 "lr" (LeakyRelu, ai.onnx opset 13): attribute "alpha" refers to a '
       'function attribute (ref_attr_name "alpha_ref") outside a function body')
def ref_attr_outside_function():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="lr")
    a = onnx.AttributeProto(name="alpha", ref_attr_name="alpha_ref",
                            type=onnx.AttributeProto.FLOAT)
    node.attribute.append(a)
    return model([node], [vi("x", F, [2, 8])], [vi("y", F, [2, 8])])


# ---- Scan bodies reading outer values (CNTK) ----------------------------------


def scan_model(opset, shadow):
    """s' = s + x_t * W + z per step, W an outer initializer, z = Relu(b)
    computed outside. With shadow, the body's value "m" shares its name with
    a node after the Scan that reads the Scan's state (as CNTK's exports
    reuse names): no cycle, though the names alone would make one."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["xt", "W"], ["m"]), helper.make_node("Add", ["m", "z"], ["a"]),
         helper.make_node("Add", ["s", "a"], ["s2"]), helper.make_node("Identity", ["s2"], ["o"])],
        "body", [vi("s", F, [4]), vi("xt", F, [4])], [vi("s2", F, [4]), vi("o", F, [4])])
    lead = [] if opset >= 9 else [1]
    ins = [vi("s0", F, lead + [4]), vi("x", F, lead + [5, 4]), vi("b", F, [4])]
    outs = [vi("sf", F, lead + [4]), vi("ys", F, lead + [5, 4])]
    nodes = [helper.make_node("Relu", ["b"], ["z"], name="relu"),
             helper.make_node("Scan", ([] if opset >= 9 else [""]) + ["s0", "x"], ["sf", "ys"],
                              num_scan_inputs=1, body=body, name="scan")]
    if shadow:
        nodes.append(helper.make_node("Neg", ["sf"], ["m"], name="neg"))
        outs.append(vi("m", F, lead + [4]))
    w = numpy_helper.from_array(np.array([0.5, -1.0, 2.0, 0.25], np.float32), "W")
    m = model(nodes, ins, outs, [w], opset=opset, ir=8 if opset >= 9 else 4)
    lead = tuple(lead)
    return m, {"s0": x_in(lead + (4,), 2), "x": x_in(lead + (5, 4), 3), "b": x_in((4,), 4)}


for _op in (8, 9, 16):
    for _shadow in (False, True):
        def _make(op=_op, shadow=_shadow):
            return scan_model(op, shadow)
        _make.__name__ = "scan%d_outer%s" % (_op, "_shadowed" if _shadow else "")
        run(_make)


# ---- float16 Gemm and MatMul -------------------------------------------------


def half(name, shape, seed):
    return numpy_helper.from_array(x_in(shape, seed, np.float16), name)


@run
def f16_matmul_weight():
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [vi("x", H, [3, 5, 16])], [vi("y", H, [3, 5, 12])], [half("w", [16, 12], 5)])
    return m, {"x": x_in([3, 5, 16], 6, np.float16)}


@run
def f16_attention_products():
    # an fp16 attention export's two products: Q K^T (a batched MatMul, K^T
    # computed) and P V. They are kept apart, each from graph inputs, as
    # verify compares float16 bits: chained here (P = Q K^T, or scaled and
    # through a Softmax), ONNX Runtime's second product came out one ulp
    # from the correctly rounded float32 product for 39 % of the elements,
    # though alone, on the same values, it is correctly rounded, as kiln's.
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="kt"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    shp = [2, 3, 7, 8]
    m = model(nodes, [vi("q", H, shp), vi("k", H, shp), vi("p", H, [2, 3, 7, 7]),
                      vi("v", H, [2, 3, 7, 5])],
              [vi("s", H, [2, 3, 7, 7]), vi("y", H, [2, 3, 7, 5])])
    return m, {"q": x_in(shp, 7, np.float16), "k": x_in(shp, 8, np.float16),
               "p": x_in([2, 3, 7, 7], 10, np.float16), "v": x_in([2, 3, 7, 5], 9, np.float16)}


@run
def f16_gemm_bias():
    m = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, name="fc")],
              [vi("x", H, [4, 24])], [vi("y", H, [4, 10])],
              [half("w", [10, 24], 10), half("c", [10], 11)])
    return m, {"x": x_in([4, 24], 12, np.float16)}


@run
def f16_gemm_alpha_beta_matrix_c():
    m = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], transA=1, alpha=0.5, beta=2.0,
                                name="fc")],
              [vi("x", H, [24, 4]), vi("c", H, [4, 1])], [vi("y", H, [4, 10])],
              [half("w", [24, 10], 13)])
    return m, {"x": x_in([24, 4], 14, np.float16), "c": x_in([4, 1], 15, np.float16)}


# ---- scikit-learn classifiers ending in ZipMap (skl2onnx's default) -----------
# Built as skl2onnx builds them: the classifier's label and probability
# tensor, the probabilities through ZipMap into a sequence(map(key, float)).
# ONNX Runtime's node binding cannot return a sequence of maps, so it runs
# the same graph without the ZipMap (reference model) and kiln, compiled
# with --zipmap=tensor, must give its probability tensor.

VERIFY_FLAGS = ["--zipmap=tensor"]
ML = "ai.onnx.ml"


def seq_map(name, key_type):
    t = onnx.TypeProto()   # this onnx has no make_map_type_proto
    t.map_type.key_type = key_type
    t.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, []))
    return helper.make_value_info(name, helper.make_sequence_type_proto(t))


def ml_graph(head, nfeat, labels, label_out=True, string_keys=None):
    """head: nodes from "X" to "probabilities" (and "label"); returns the
    model with ZipMap and the reference without it."""
    keys = dict(classlabels_strings=string_keys) if string_keys else \
        dict(classlabels_int64s=labels)
    made = []
    for zip_it in (True, False):
        nodes = list(head)
        if zip_it:
            nodes.append(helper.make_node("ZipMap", ["probabilities"], ["output_probability"],
                                          domain=ML, name="zipmap", **keys))
        else:
            nodes.append(helper.make_node("Identity", ["probabilities"], ["output_probability"],
                                          name="zipmap"))
        outs = [vi("output_label", I64, ["N"])] if label_out else []
        outs.append(seq_map("output_probability", TensorProto.STRING if string_keys else I64)
                    if zip_it else vi("output_probability", F, ["N", len(labels)]))
        g = helper.make_graph(nodes, "sklearn", [vi("X", F, ["N", nfeat])], outs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid(ML, 1)])
        m.ir_version = 8
        made.append(m)
    return made


def training(nclass, nfeat=4, seed=21):
    r = np.random.default_rng(seed)
    y = r.integers(0, nclass, 120)
    x = r.standard_normal((120, nfeat)) + y[:, None] * 0.8
    return x.astype(np.float32), y


@run
def zipmap_logistic_regression():
    from sklearn.linear_model import LogisticRegression
    x, y = training(3)
    lr = LogisticRegression(max_iter=500).fit(x, y)
    head = [helper.make_node("LinearClassifier", ["X"], ["label", "probabilities"], domain=ML,
                             name="linear", coefficients=lr.coef_.reshape(-1).tolist(),
                             intercepts=lr.intercept_.tolist(), classlabels_ints=[0, 1, 2],
                             post_transform="SOFTMAX"),
            helper.make_node("Identity", ["label"], ["output_label"], name="label")]
    m, ref = ml_graph(head, 4, [0, 1, 2])
    return m, {"X": x_in([9, 4], 22)}, ref



@compiles("--zipmap=tensor", "--batch", "1,4")
def zipmap_stitches():
    """The probability tensor keeps each row's own: any n runs (batchdep)."""
    return zipmap_logistic_regression()[0]

@run
def zipmap_decision_tree_binary():
    from sklearn.tree import DecisionTreeClassifier
    x, y = training(2, seed=23)
    t = DecisionTreeClassifier(max_depth=4, random_state=0).fit(x, np.where(y, 7, 3)).tree_
    leaf = t.children_left < 0
    ids = list(range(t.node_count))
    attrs = dict(nodes_treeids=[0] * t.node_count, nodes_nodeids=ids,
                 nodes_featureids=[max(0, int(f)) for f in t.feature],
                 nodes_values=[float(v) for v in t.threshold],
                 nodes_modes=["LEAF" if lf else "BRANCH_LEQ" for lf in leaf],
                 nodes_truenodeids=[max(0, int(c)) for c in t.children_left],
                 nodes_falsenodeids=[max(0, int(c)) for c in t.children_right],
                 class_treeids=[], class_nodeids=[], class_ids=[], class_weights=[],
                 classlabels_int64s=[3, 7])
    for i in np.nonzero(leaf)[0]:
        v = t.value[i][0] / t.value[i][0].sum()
        for k in range(2):
            attrs["class_treeids"].append(0)
            attrs["class_nodeids"].append(int(i))
            attrs["class_ids"].append(k)
            attrs["class_weights"].append(float(v[k]))
    head = [helper.make_node("TreeEnsembleClassifier", ["X"], ["label", "probabilities"],
                             domain=ML, name="tree", **attrs),
            helper.make_node("Identity", ["label"], ["output_label"], name="label")]
    m, ref = ml_graph(head, 4, [3, 7])
    return m, {"X": x_in([11, 4], 24)}, ref


# String keys are the model's: each must reach NAME.h as an escaped literal.
HOSTILE_KEYS = ["cat", 'say "hi"', "*/ #error injected /*", "a??=b", "back\\slash",
                "new\nline"]


def zipmap_strings_models():
    head = [helper.make_node("Softmax", ["X"], ["probabilities"], axis=1, name="softmax")]
    return ml_graph(head, len(HOSTILE_KEYS), list(range(len(HOSTILE_KEYS))), label_out=False,
                    string_keys=HOSTILE_KEYS)


@run
def zipmap_string_keys():
    m, ref = zipmap_strings_models()
    return m, {"X": x_in([3, len(HOSTILE_KEYS)], 25)}, ref


@error('check: node 1 "zipmap" (ZipMap, ai.onnx.ml opset 1): makes a sequence of maps, which C has no '
       'type for: compile with --zipmap=tensor')
def zipmap_without_option():
    return zipmap_strings_models()[0]


def extra(kiln, outdir):
    """NAME.h of the string-keyed ZipMap: its keys, escaped, and the C builds."""
    import os
    import subprocess
    d = os.path.join(outdir, "zipmap_string_keys")
    r = subprocess.run([kiln, "compile", os.path.join(d, "model.onnx"), "--batch", "1",
                        "--zipmap=tensor", "--no-cc", "--name", "zm", "-o", d],
                       capture_output=True, text=True)
    h = open(os.path.join(d, "zm.h")).read() if r.returncode == 0 else ""
    want = ('#define ZM_OUT0_NKEYS 6\n#define ZM_OUT0_KEYS {"cat", "say \\"hi\\"", '
            '"*/ #error injected /*", "a\\077?=b", "back\\\\slash", "new\\012line"}\n')
    ok = want in h
    print(f"{'PASS' if ok else 'FAIL'} zipmap_string_keys: NAME.h holds the keys escaped")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.join(d, "keys.c")
    with open(src, "w") as f:
        f.write('#include <string.h>\n#include "zm.h"\nstatic const char *const keys[] = '
                'ZM_OUT0_KEYS;\nint main(void) { return !(sizeof keys / sizeof keys[0] == '
                'ZM_OUT0_NKEYS && strcmp(keys[1], "say \\"hi\\"") == 0 && '
                'strcmp(keys[3], "a\\077?=b") == 0); }\n')
    c = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", d, "-I",
                        os.path.join(root, "include"), src, "-o", os.path.join(d, "keys")],
                       capture_output=True, text=True)
    run_ok = c.returncode == 0 and subprocess.run([os.path.join(d, "keys")]).returncode == 0
    print(f"{'PASS' if run_ok else 'FAIL'} zipmap_string_keys: the keys compile (-Werror) "
          f"and read back {c.stderr.strip()}")
    return (not ok) + (not run_ok)


@error("compile: makes a sequence of maps, which C has no type for: compile with --zipmap=tensor")
def zipmap_compile_without_option():
    return zipmap_strings_models()[0]
