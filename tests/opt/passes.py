#!/usr/bin/python3
"""Unit tests of each optimizer pass on small graphs: the ops left after the
passes (`kiln dump --passes`), the weight bytes (`kiln info --passes`), and
the outputs of the optimized and the --no-opt build against numpy
(`kiln verify`, rtol 1e-3, atol 1e-5).

usage: passes.py KILN [--keep DIR]   (--keep: the case folders stay in DIR,
for tests/repro/sweep.py)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

failures = []
F = TensorProto.FLOAT


def t(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def case(kiln, root, name, nodes, inputs, outputs, inits, ref_in, ref_out, want_ops,
         flags=(), opset=13, verify_flags=None):
    folder = os.path.join(root, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    save(model, os.path.join(folder, "model.onnx"))
    for kind, arrs in (("input", ref_in), ("output", ref_out)):
        for i, a in enumerate(arrs):
            with open(os.path.join(folder, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a)).SerializeToString())
    dump = subprocess.run([kiln, "dump", os.path.join(folder, "model.onnx"), "--passes"] +
                          list(flags), capture_output=True, text=True).stdout
    ops = re.findall(r"^  n\d+ \"[^\"]*\" (\w+) ", dump, re.M)
    info = subprocess.run([kiln, "info", os.path.join(folder, "model.onnx"), "--passes"] +
                          list(flags), capture_output=True, text=True).stdout
    m = re.search(r"weight bytes (\d+) -> (\d+)", info)
    results = [ops == want_ops]
    msg = "%s: ops %s (want %s)" % (name, ops, want_ops)
    # (--no-opt runs no pass, --weights-dtype's included: only plain cases.)
    vflags = list(flags if verify_flags is None else verify_flags)
    for extra in ([], ["--no-opt"]) if not vflags else ([],):
        p = subprocess.run([kiln, "verify", folder] + extra + vflags, capture_output=True,
                           text=True)
        results.append(p.returncode == 0)
        if p.returncode:
            msg += "; verify %s: %s" % (" ".join(extra) or "(optimized)", p.stdout.strip())
    ok = all(results)
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        failures.append(name)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def conv_ref(x, w, b, pad):
    """Conv with stride 1 and `pad` on each side of every spatial axis (1-D
    or 2-D), in float64."""
    if x.ndim == 3:
        return conv_ref(x[:, :, None, :], w[:, :, None, :], b, (0, pad))[:, :, 0, :]
    ph, pw = (pad, pad) if np.isscalar(pad) else pad
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def edgeconv_checks(kiln, root):
    """The edgeconv pass on a ParticleNet-style PyTorch export: both blocks
    become kiln_f32_edgeconv nodes (no Gather, Concat or ReduceMean left);
    with the Concat swapped (a near miss) nothing is fused. The outputs of
    both against ONNX Runtime: tests/realmodels (particlenet_edgeconv*)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "realmodels"))
    import edgeconv_model
    from onnx import save as save_model
    for near_miss in (False, True):
        path = os.path.join(root, "edgeconv%d.onnx" % near_miss)
        save_model(edgeconv_model.export(near_miss=near_miss)[0], path)
        dump = subprocess.run([kiln, "dump", path, "--passes", "--batch", "1,3"],
                              capture_output=True, text=True).stdout
        ops = re.findall(r"^  n\d+ \"[^\"]*\" (\w+) ", dump, re.M)
        # the fused node is kiln's own KilnEdgeConv, named after the reduction
        # it replaced; its indices come from a fused KilnKnn
        fused = len(re.findall(r"^  n\d+ \"[^\"]*ReduceMean\" kiln\.KilnEdgeConv ", dump, re.M))
        knn = len(re.findall(r"^  n\d+ \"[^\"]*TopK\" kiln\.KilnKnn ", dump, re.M))
        left = [o for o in ops if o in ("Gather", "Concat")]
        ok = (fused == 0 and "Concat" in left) if near_miss else (fused == 2 and knn == 2 and not left)
        what = "edgeconv: near miss left alone" if near_miss else "edgeconv: both blocks fused"
        print(("ok   " if ok else "FAIL ") + what + " (%d fused, left %s)" % (fused, left))
        if not ok:
            failures.append(what)


def dead_at_signature(kiln, root, rng):
    """compiler/sigdce.c: a Transpose whose only reader is a Shape (folded at
    every batch size, as PyTorch's LSTM export writes it for the initial
    state) stays in the graph (the dce pass runs before shapes are static)
    but gets no code at any batch size, with or without the passes; the
    Reshape it shapes, and the output, still come out right (verify against
    numpy at batch 2)."""
    N = helper.make_node
    nodes = [N("Transpose", ["x"], ["t"], perm=[0, 2, 1], name="dead_t"),
             N("Shape", ["t"], ["s"], name="shape_t"),
             N("Relu", ["x"], ["r"], name="relu_x"),
             N("Reshape", ["r", "s"], ["y"], name="reshape_r")]
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    case(kiln, root, "dead_at_signature", nodes, [vi("x", ["N", 3, 4])],
         [vi("y", ["N", 4, 3])], [], [x], [np.maximum(x, 0).reshape(2, 4, 3)],
         ["Transpose", "Shape", "Relu", "Reshape"])
    model = os.path.join(root, "dead_at_signature", "model.onnx")
    for extra in ([], ["--no-opt"]):
        out = os.path.join(root, "dead_at_signature", "c" + "".join(extra))
        p = subprocess.run([kiln, "compile", model, "--batch", "1,2,8", "--name", "m", "--no-cc",
                            "-o", out] + extra, capture_output=True, text=True)
        src = open(os.path.join(out, "m.c")).read() if p.returncode == 0 else ""
        fns = re.findall(r"^static int (b\d+_n\d+_\w+)\(", src, re.M)
        dead = [f for f in fns if f.endswith("_dead_t")]
        relu = [f for f in fns if f.endswith("_relu_x")]
        ok = p.returncode == 0 and not dead and len(relu) >= 1 and "kiln_transpose" not in src
        print(("ok   " if ok else "FAIL ") + "dead_at_signature %s: no code for the Transpose "
              "only a Shape reads (functions %s)" % (" ".join(extra) or "(optimized)", fns))
        if not ok:
            failures.append("dead_at_signature code " + " ".join(extra))


def f16_gemm_transb(kiln, root, rng):
    """emit/linalg.c: a float16 weight (--weights-dtype fp16) that every reader
    reads as a Gemm's B^T (transB = 1, PyTorch's Linear) is stored transposed,
    [K, N], once, in the same bytes, and read with natural strides; the bits
    are those of the same product on the weight given as [K, N] (transB = 0)
    under `kiln verify --reproducible` (every ISA, batch 1 and 2)."""
    N = helper.make_node
    w = (rng.standard_normal((64, 128)) * 0.1).astype(np.float32)  # [N, K]
    b = (rng.standard_normal(64) * 0.1).astype(np.float32)
    xs = rng.standard_normal((2, 128)).astype(np.float32)
    w16 = w.astype(np.float16).astype(np.float32)
    ref = xs @ w16.T + b
    hashes = {}
    for name, wt, tb in (("f16_gemm_transb", w, 1), ("f16_gemm_natural", np.ascontiguousarray(w.T), 0)):
        nodes = [N("Gemm", ["x", "w", "b"], ["y"], transB=tb)]
        before, after = case(kiln, root, name, nodes, [vi("x", ["N", 128])], [vi("y", ["N", 64])],
                             [t("w", wt), t("b", b)], [xs], [ref], ["Gemm"],
                             flags=["--weights-dtype", "fp16"])
        folder = os.path.join(root, name)
        out = os.path.join(folder, "c")
        p = subprocess.run([kiln, "compile", os.path.join(folder, "model.onnx"), "--batch", "1,2",
                            "--name", "m", "--no-cc", "-o", out, "--weights-dtype", "fp16"],
                           capture_output=True, text=True)
        src = open(os.path.join(out, "m.c")).read() if p.returncode == 0 else ""
        syms = re.findall(r"^extern const unsigned char \w+\[\] \w+; /\* (\w+), (\d+) bytes, (.*)$",
                          src, re.M)
        big = [s for s in syms if s[1] == str(w.nbytes // 2)]
        trans = [s for s in big if "stored transposed (64 x 128 as 128 x 64)" in s[2]]
        calls = re.findall(r"kiln_f32_gemm_f16b\(\d+, 64, 128, [^,]+, A, 128, 1, B, (\d+), (\d+),", src)
        ok = (p.returncode == 0 and len(big) == 1 and big[0][0] == "float16" and
              len(trans) == tb and calls and set(calls) == {("64", "1")})
        print(("ok   " if ok else "FAIL ") + "%s: the weight stored once (%s), %s, read with strides "
              "%s" % (name, big, "transposed" if trans else "as it is", sorted(set(calls))))
        if not ok:
            failures.append(name + " layout")
        r = subprocess.run([kiln, "verify", "--reproducible", folder, "--batch", "1,2",
                            "--weights-dtype", "fp16"], capture_output=True, text=True)
        hashes[name] = re.findall(r"^  (isa \S+)\s+(?:same|DIFFERS)\s+([0-9a-f]{16})", r.stdout, re.M)
        ok = r.returncode == 0 and "REPRODUCIBLE" in r.stdout and hashes[name]
        print(("ok   " if ok else "FAIL ") + "%s: kiln verify --reproducible (exit %d)%s" %
              (name, r.returncode, "" if ok else ": " + r.stdout + r.stderr))
        if not ok:
            failures.append(name + " reproducible")
    ok = hashes["f16_gemm_transb"] == hashes["f16_gemm_natural"]
    print(("ok   " if ok else "FAIL ") + "f16_gemm_transb: the same bits as on [K, N] (%s vs %s)" %
          (hashes["f16_gemm_transb"], hashes["f16_gemm_natural"]))
    if not ok:
        failures.append("f16_gemm_transb bits")


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def main():
    kiln = os.path.abspath(sys.argv[1])
    keep = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--keep" else None
    root = keep or tempfile.mkdtemp(prefix="kiln-passes-")
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    N = helper.make_node
    try:
        # noop: every kind of no-op around one Relu.
        nodes = [N("Identity", ["x"], ["a"]), N("Dropout", ["a"], ["b"]),
                 N("Cast", ["b"], ["c"], to=F), N("Reshape", ["c", "shp"], ["d"]),
                 N("Transpose", ["d"], ["e"], perm=[0, 1, 2]), N("Pad", ["e", "pads"], ["f"]),
                 N("Slice", ["f", "st", "en"], ["g"]), N("Mul", ["g", "one"], ["h"]),
                 N("Add", ["zero", "h"], ["i"]), N("Relu", ["i"], ["r"]),
                 N("Identity", ["r"], ["y"])]
        inits = [t("shp", np.array([2, 3, 4], np.int64)), t("pads", np.zeros(6, np.int64)),
                 t("st", np.array([0], np.int64)), t("en", np.array([100], np.int64)),
                 t("one", np.ones(4, np.float32)), t("zero", np.zeros((1, 4), np.float32))]
        case(kiln, root, "noop", nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], inits,
             [x], [np.maximum(x, 0)], ["Relu"])
        # noop keeps a Mul by one that broadcasts (changes the shape).
        nodes = [N("Mul", ["x", "ones"], ["y"])]
        case(kiln, root, "noop_broadcast", nodes, [vi("x", [3, 4])], [vi("y", [2, 3, 4])],
             [t("ones", np.ones((2, 3, 4), np.float32))], [x[0]], [np.broadcast_to(x[0], (2, 3, 4))],
             ["Mul"])
        # dedup: two identical initializers -> one.
        w = rng.standard_normal((4,)).astype(np.float32)
        nodes = [N("Add", ["x", "w1"], ["a"]), N("Mul", ["a", "w2"], ["y"])]
        before, after = case(kiln, root, "dedup", nodes, [vi("x", [2, 3, 4])],
                             [vi("y", [2, 3, 4])], [t("w1", w), t("w2", w.copy())], [x],
                             [(x + w) * w], ["Add", "Mul"])
        ok = before == after == 16  # stored once either way (emit shares bytes); one value now
        print(("ok   " if ok else "FAIL ") + "dedup: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("dedup bytes")
        # cse: two identical Transposes and two identical Sigmoids -> one each.
        nodes = [N("Transpose", ["x"], ["t1"], perm=[0, 2, 1]),
                 N("Transpose", ["x"], ["t2"], perm=[0, 2, 1]),
                 N("Sigmoid", ["t1"], ["s1"]), N("Sigmoid", ["t2"], ["s2"]),
                 N("Add", ["s1", "s2"], ["y"])]
        xt = x.transpose(0, 2, 1)
        case(kiln, root, "cse", nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 4, 3])], [], [x],
             [2 / (1 + np.exp(-xt))], ["Transpose", "Sigmoid", "Add"])
        # cse: Shapes of two values whose dims agree in every compiled signature (batch 1
        # and 2) -> one Shape, then one Expand; the Shape of a transposed value stays.
        c4, c3 = np.arange(4, dtype=np.float32).reshape(1, 1, 4), np.arange(3, dtype=np.float32).reshape(1, 1, 3)
        nodes = [N("Relu", ["x"], ["a"]), N("Sigmoid", ["x"], ["b"]), N("Shape", ["a"], ["sa"]),
                 N("Shape", ["b"], ["sb"]), N("Expand", ["c", "sa"], ["ea"]),
                 N("Expand", ["c", "sb"], ["eb"]), N("Mul", ["ea", "a"], ["p"]),
                 N("Mul", ["eb", "b"], ["q"]), N("Add", ["p", "q"], ["y"]),
                 N("Transpose", ["x"], ["t"], perm=[0, 2, 1]), N("Shape", ["t"], ["st"]),
                 N("Expand", ["d", "st"], ["et"]), N("Mul", ["et", "t"], ["y2"])]
        sig = 1 / (1 + np.exp(-x))
        case(kiln, root, "cse_shape", nodes, [vi("x", ["N", 3, 4])],
             [vi("y", ["N", 3, 4]), vi("y2", ["N", 4, 3])], [t("c", c4), t("d", c3)], [x],
             [c4 * np.maximum(x, 0) + c4 * sig, c3 * xt],
             ["Relu", "Sigmoid", "Shape", "Expand", "Mul", "Mul", "Add", "Transpose", "Shape",
              "Expand", "Mul"], flags=("--batch", "1,2"), verify_flags=())
        # fold: an Add of two constants whose inputs die -> one constant.
        c1, c2 = rng.standard_normal((4,)).astype(np.float32), rng.standard_normal((4,)).astype(np.float32)
        nodes = [N("Add", ["c1", "c2"], ["c"]), N("Mul", ["x", "c"], ["y"])]
        before, after = case(kiln, root, "fold", nodes, [vi("x", [2, 3, 4])],
                             [vi("y", [2, 3, 4])], [t("c1", c1), t("c2", c2)], [x],
                             [x * (c1 + c2)], ["Mul"])
        ok = (before, after) == (32, 16)
        print(("ok   " if ok else "FAIL ") + "fold: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("fold bytes")
        # fold: a Transpose of a weight that is also read untransformed stays a node.
        wm = rng.standard_normal((4, 4)).astype(np.float32)
        nodes = [N("Transpose", ["w"], ["wt"], perm=[1, 0]), N("Add", ["x", "wt"], ["a"]),
                 N("Sub", ["a", "w"], ["y"])]
        before, after = case(kiln, root, "fold_shared", nodes, [vi("x", [4, 4])],
                             [vi("y", [4, 4])], [t("w", wm)], [x[0, :, :].repeat(2, 0)[:4]],
                             [x[0, :, :].repeat(2, 0)[:4] + wm.T - wm], ["Transpose", "Add", "Sub"])
        ok = before == after == 64
        print(("ok   " if ok else "FAIL ") + "fold_shared: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("fold_shared bytes")
        # fold: a packed projection cut by Slices (PyTorch's in_proj_weight into
        # Q and K/V): every reader of the weight is a Slice, their outputs no
        # larger together, so all fold and the weight dies; the products then
        # see constant weights. Opset 13 (inputs) and opset 9 (attributes, with
        # a negative step on the second).
        wp = rng.standard_normal((12, 4)).astype(np.float32)
        xs = rng.standard_normal((3, 4)).astype(np.float32)
        for opset in (13, 9):
            if opset >= 10:
                nodes = [N("Slice", ["wp", "s0", "e0", "a0"], ["wq"]),
                         N("Slice", ["wp", "s1", "e1", "a0", "st1"], ["wkv"])]
                extra = [t("s0", np.array([0], np.int64)), t("e0", np.array([4], np.int64)),
                         t("a0", np.array([0], np.int64)), t("s1", np.array([-1], np.int64)),
                         t("e1", np.array([3], np.int64)), t("st1", np.array([-1], np.int64))]
            else:
                nodes = [N("Slice", ["wp"], ["wq"], starts=[0], ends=[4], axes=[0]),
                         N("Slice", ["wp"], ["wkv"], starts=[4], ends=[2 ** 62], axes=[0])]
                extra = []
            wkv = wp[:3:-1] if opset >= 10 else wp[4:]
            nodes += [N("Transpose", ["wq"], ["wqt"], perm=[1, 0]),
                      N("Transpose", ["wkv"], ["wkvt"], perm=[1, 0]),
                      N("MatMul", ["x", "wqt"], ["q"]), N("MatMul", ["x", "wkvt"], ["kv"]),
                      N("Concat", ["q", "kv"], ["y"], axis=1)]
            before, after = case(kiln, root, "fold_slices_op%d" % opset, nodes, [vi("x", [3, 4])],
                                 [vi("y", [3, 12])], [t("wp", wp)] + extra, [xs],
                                 [np.concatenate([xs @ wp[:4].T, xs @ wkv.T], 1)],
                                 ["MatMul", "MatMul", "Concat"], opset=opset)
            ok = after is not None and after <= wp.nbytes   # the cuts, no more than wp
            print(("ok   " if ok else "FAIL ") + "fold_slices_op%d: weight bytes %s -> %s" %
                  (opset, before, after))
            if not ok:
                failures.append("fold_slices_op%d bytes" % opset)
        # ... but overlapping Slices, together larger than the weight, stay nodes.
        nodes = [N("Slice", ["wp", "s0", "e0"], ["wa"]), N("Slice", ["wp", "s1", "e1"], ["wb"]),
                 N("MatMul", ["x", "wa"], ["a"]), N("MatMul", ["x", "wb"], ["b"]),
                 N("Concat", ["a", "b"], ["y"], axis=1)]
        wo = rng.standard_normal((4, 12)).astype(np.float32)
        case(kiln, root, "fold_slices_overlap", nodes, [vi("x", [3, 4])], [vi("y", [3, 16])],
             [t("wp", wo), t("s0", np.array([0, 0], np.int64)), t("e0", np.array([4, 8], np.int64)),
              t("s1", np.array([0, 4], np.int64)), t("e1", np.array([4, 12], np.int64))], [xs],
             [np.concatenate([xs @ wo[:, :8], xs @ wo[:, 4:]], 1)],
             ["Slice", "Slice", "MatMul", "MatMul", "Concat"])
        # dce: a branch nobody reads, and an initializer only it used.
        nodes = [N("Relu", ["x"], ["y"]), N("Mul", ["x", "unused_w"], ["dead"]),
                 N("Sigmoid", ["dead"], ["dead2"])]
        before, after = case(kiln, root, "dce", nodes, [vi("x", [2, 3, 4])],
                             [vi("y", [2, 3, 4])], [t("unused_w", w)], [x], [np.maximum(x, 0)],
                             ["Relu"])
        ok = (before, after) == (16, 0)
        print(("ok   " if ok else "FAIL ") + "dce: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("dce bytes")
        # einsum: a contraction becomes a GEMM.
        a = rng.standard_normal((5, 4)).astype(np.float32)
        b = rng.standard_normal((4, 6)).astype(np.float32)
        nodes = [N("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")]
        case(kiln, root, "einsum", nodes, [vi("a", [5, 4]), vi("b", [4, 6])], [vi("y", [5, 6])],
             [], [a, b], [a @ b], ["MatMul"])
        # einsum with batch letters and an output transpose.
        a3 = rng.standard_normal((2, 5, 4)).astype(np.float32)
        b3 = rng.standard_normal((2, 4, 6)).astype(np.float32)
        nodes = [N("Einsum", ["a", "b"], ["y"], equation="bij,bjk->kbi")]
        case(kiln, root, "einsum_batch", nodes, [vi("a", [2, 5, 4]), vi("b", [2, 4, 6])],
             [vi("y", [6, 2, 5])], [], [a3, b3], [np.einsum("bij,bjk->kbi", a3, b3)],
             ["MatMul", "Transpose"])
        # einsum summing nothing, one operand's letters within the other's (ParT's scale
        # per head): a broadcast Mul after one Transpose, the scale first or second.
        x4 = rng.standard_normal((3, 2, 4, 5)).astype(np.float32)
        hs = rng.standard_normal((4,)).astype(np.float32)
        for name, eq, ins, inits in (("einsum_scale", "tbhd,h->tbdh", ["x", "h"], [t("h", hs)]),
                                     ("einsum_scale_first", "h,tbhd->tbdh", ["h", "x"], [])):
            first = ins[0] == "h"
            vis = [vi("x", [3, 2, 4, 5])] + ([vi("h", [4])] if first else [])
            refs = [x4, hs] if first else [x4]
            case(kiln, root, name, [N("Einsum", ins, ["y"], equation=eq)], vis,
                 [vi("y", [3, 2, 5, 4])], inits, refs, [np.einsum("tbhd,h->tbdh", x4, hs)],
                 ["Transpose", "Reshape", "Mul"] if first else ["Transpose", "Mul"])
        # fuse: MatMul + Add(bias) + Relu -> one Gemm; Transpose -> transB.
        wb = rng.standard_normal((6, 4)).astype(np.float32)
        bias = rng.standard_normal((6,)).astype(np.float32)
        nodes = [N("Transpose", ["w"], ["wt"], perm=[1, 0]), N("MatMul", ["a", "wt"], ["m"]),
                 N("Add", ["m", "bias"], ["s"]), N("Relu", ["s"], ["y"])]
        case(kiln, root, "fuse_gemm", nodes, [vi("a", [5, 4])], [vi("y", [5, 6])],
             [t("w", wb), t("bias", bias)], [a], [np.maximum(a @ wb.T + bias, 0)], ["Gemm"])
        # fuse: a 3-D MatMul + bias -> Reshape, Gemm, Reshape (views).
        nodes = [N("MatMul", ["a", "w"], ["m"]), N("Add", ["m", "bias"], ["y"])]
        case(kiln, root, "fuse_gemm_3d", nodes, [vi("a", [2, 5, 4])], [vi("y", [2, 5, 6])],
             [t("w", wb.T.copy()), t("bias", bias)], [a3], [a3 @ wb.T + bias],
             ["Reshape", "Gemm", "Reshape"])
        # fuse: GELU as exporters write it, after MatMul + bias and the unflattening
        # Reshape, becomes the Gemm's epilogue.
        from math import erf, sqrt
        verf = np.vectorize(erf)
        z = a3 @ wb.T + bias
        nodes = [N("MatMul", ["a", "w"], ["m"]), N("Add", ["m", "bias"], ["x"]),
                 N("Div", ["x", "sqrt2"], ["d"]), N("Erf", ["d"], ["e"]),
                 N("Add", ["e", "one"], ["e1"]), N("Mul", ["x", "e1"], ["xe"]),
                 N("Mul", ["xe", "half"], ["y"])]
        case(kiln, root, "fuse_gelu", nodes, [vi("a", [2, 5, 4])], [vi("y", [2, 5, 6])],
             [t("w", wb.T.copy()), t("bias", bias), t("sqrt2", np.array(1.4142135, np.float32)),
              t("one", np.array(1.0, np.float32)), t("half", np.array(0.5, np.float32))],
             [a3], [(0.5 * z * (1 + verf(z / sqrt(2)))).astype(np.float32)],
             ["Reshape", "Gemm", "Reshape"])
        # fuse: LayerNorm as exporters write it (opset 13) becomes one node.
        gam = rng.standard_normal(6).astype(np.float32)
        bet = rng.standard_normal(6).astype(np.float32)
        xz = rng.standard_normal((2, 5, 6)).astype(np.float32)
        nodes = [N("ReduceMean", ["x"], ["mu"], axes=[-1]), N("Sub", ["x", "mu"], ["d"]),
                 N("Pow", ["d", "two"], ["p"]), N("ReduceMean", ["p"], ["var"], axes=[-1]),
                 N("Add", ["var", "eps"], ["ve"]), N("Sqrt", ["ve"], ["sd"]),
                 N("Div", ["d", "sd"], ["nrm"]), N("Mul", ["nrm", "gamma"], ["sc"]),
                 N("Add", ["sc", "beta"], ["y"])]
        mu = xz.mean(-1, keepdims=True)
        ln = (xz - mu) / np.sqrt(((xz - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * gam + bet
        case(kiln, root, "fuse_layernorm", nodes, [vi("x", [2, 5, 6])], [vi("y", [2, 5, 6])],
             [t("two", np.array(2.0, np.float32)), t("eps", np.array(1e-5, np.float32)),
              t("gamma", gam), t("beta", bet)], [xz], [ln.astype(np.float32)],
             ["LayerNormalization"])
        # fuse: MatMul (3-D A) + Sigmoid -> one Gemm with the epilogue, between views.
        nodes = [N("MatMul", ["a", "w"], ["m"]), N("Sigmoid", ["m"], ["y"])]
        case(kiln, root, "fuse_matmul_act", nodes, [vi("a", [2, 5, 4])], [vi("y", [2, 5, 6])],
             [t("w", wb.T.copy())], [a3], [(1 / (1 + np.exp(-(a3 @ wb.T)))).astype(np.float32)],
             ["Reshape", "Gemm", "Reshape"])
        # fuse: a residual Add becomes Gemm's C.
        nodes = [N("Gemm", ["a", "w"], ["g"], transB=1), N("Add", ["g", "r"], ["y"])]
        r = rng.standard_normal((5, 6)).astype(np.float32)
        case(kiln, root, "fuse_residual", nodes, [vi("a", [5, 4]), vi("r", [5, 6])],
             [vi("y", [5, 6])], [t("w", wb)], [a, r], [a @ wb.T + r], ["Gemm"])
        # fuse: Conv (2-D) + Add(residual) + Relu -> one Conv with the residual in its
        # epilogue; 1-D Conv + Add with the residual first -> one Conv.
        xc = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
        wc = (rng.standard_normal((6, 4, 3, 3)) * 0.3).astype(np.float32)
        bc = rng.standard_normal(6).astype(np.float32)
        rc = rng.standard_normal((2, 6, 6, 5)).astype(np.float32)
        nodes = [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                 N("Add", ["c", "r"], ["s"]), N("Relu", ["s"], ["y"])]
        case(kiln, root, "fuse_conv_residual", nodes, [vi("x", [2, 4, 6, 5]), vi("r", [2, 6, 6, 5])],
             [vi("y", [2, 6, 6, 5])], [t("w", wc), t("b", bc)], [xc, rc],
             [np.maximum(conv_ref(xc, wc, bc, 1) + rc, 0).astype(np.float32)], ["Conv"])
        x1 = rng.standard_normal((2, 4, 9)).astype(np.float32)
        w1 = (rng.standard_normal((4, 4, 3)) * 0.3).astype(np.float32)
        nodes = [N("Conv", ["x", "w"], ["c"], pads=[1, 1]), N("Add", ["x", "c"], ["y"])]
        case(kiln, root, "fuse_conv1d_residual", nodes, [vi("x", [2, 4, 9])], [vi("y", [2, 4, 9])],
             [t("w", w1)], [x1], [(conv_ref(x1, w1, None, 1) + x1).astype(np.float32)], ["Conv"])
        # fuse keeps an Add that broadcasts into the Conv output (not a residual).
        nodes = [N("Conv", ["x", "w"], ["c"], pads=[1, 1]), N("Add", ["c", "r"], ["y"])]
        r1 = rng.standard_normal((4, 1)).astype(np.float32)
        case(kiln, root, "fuse_conv_broadcast_add", nodes, [vi("x", [2, 4, 9])],
             [vi("y", [2, 4, 9])], [t("w", w1), t("r", r1)], [x1],
             [(conv_ref(x1, w1, None, 1) + r1).astype(np.float32)], ["Conv", "Add"])
        # f16: --weights-dtype fp16 stores a 1-D Conv's weight as float16; the Conv reads it.
        wcl = (rng.standard_normal((64, 32, 5)) * 0.1).astype(np.float32)
        xcl = rng.standard_normal((2, 32, 20)).astype(np.float32)
        wcl16 = wcl.astype(np.float16).astype(np.float32)
        nodes = [N("Conv", ["x", "w"], ["y"], pads=[2, 2])]
        before, after = case(kiln, root, "f16_conv1d", nodes, [vi("x", [2, 32, 20])],
                             [vi("y", [2, 64, 20])], [t("w", wcl)], [xcl],
                             [conv_ref(xcl, wcl16, None, 2).astype(np.float32)], ["Conv"],
                             flags=["--weights-dtype", "fp16"])
        ok = (before, after) == (wcl.nbytes, wcl.nbytes // 2)
        print(("ok   " if ok else "FAIL ") + "f16_conv1d: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("f16_conv1d bytes")
        # f16: --weights-dtype fp16 stores a large float32 weight as float16.
        wl = (rng.standard_normal((128, 64)) * 0.1).astype(np.float32)
        xl = rng.standard_normal((2, 128)).astype(np.float32)
        wl16 = wl.astype(np.float16).astype(np.float32)
        nodes = [N("MatMul", ["x", "w"], ["y"])]
        before, after = case(kiln, root, "f16", nodes, [vi("x", [2, 128])], [vi("y", [2, 64])],
                             [t("w", wl)], [xl], [xl @ wl16], ["Gemm"],
                             flags=["--weights-dtype", "fp16"])
        ok = (before, after) == (wl.nbytes, wl.nbytes // 2)
        print(("ok   " if ok else "FAIL ") + "f16: weight bytes %s -> %s" % (before, after))
        if not ok:
            failures.append("f16 bytes")
        f16_gemm_transb(kiln, root, rng)
        # The switches: exact errors, exit status 2.
        model = os.path.join(root, "fold", "model.onnx")
        for args, want in (
                (["--no-pass=bogus"], "kiln: error: --no-pass: unknown pass 'bogus' (noop, dedup, "
                                      "cse, einsum, fold, lastpos, mlpconv, attention, fuse, addnorm, "
                                      "edgeconv, convchain, scatterrows, "
                                      "dce, ewchain, f16)"),
                (["--weights-dtype", "fp8"], "kiln: error: --weights-dtype needs fp32, fp16 or keep, "
                                             "got 'fp8'"),
                (["--passes", "--json"], "kiln: error: --passes goes with 'info' (not --json) or "
                                         "'dump', not '--json'")):
            p = subprocess.run([kiln, "info", model] + args, capture_output=True, text=True)
            ok = p.returncode == 2 and p.stderr.splitlines()[0] == want
            print(("ok   " if ok else "FAIL ") + "switch %s: %s" % (" ".join(args),
                                                          p.stderr.splitlines()[0]))
            if not ok:
                failures.append("switch " + " ".join(args))
        # --no-pass=fold keeps the constant Add.
        p = subprocess.run([kiln, "dump", model, "--passes", "--no-pass=fold"],
                           capture_output=True, text=True)
        ok = re.findall(r"^  n\d+ \"[^\"]*\" (\w+) ", p.stdout, re.M) == ["Add", "Mul"]
        print(("ok   " if ok else "FAIL ") + "--no-pass=fold keeps the constant Add")
        if not ok:
            failures.append("--no-pass=fold")
        dead_at_signature(kiln, root, rng)
        edgeconv_checks(kiln, root)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    print("passes: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
