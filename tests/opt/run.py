#!/usr/bin/python3
"""Acceptance tests of the graph optimizer (issue 5), on fixture models this
script makes with python3-onnx, with numpy references:

  1. openvino: 10 Einsums abc,cde->abde over 5 constant sources (a direct
     constant, an Add of two, a Mul by a scalar, a Reshape of a flat one, a
     Transpose of a [16,1024,64] one), each used twice, with biases and
     projections between, plus 20 variable x variable Einsums. The weights
     object must be within 1% of the unique weight bytes after folding.
  2. tied: a 32000 x 256 embedding read by Gather and, through a Transpose,
     by the lm_head MatMul: stored once; the transposed use costs no arena.
  3. if_shared: an If whose two branches read one large parent initializer:
     stored once.
  4. fp16: float16 initializers behind Casts to float32: with
     --weights-dtype fp16 (and keep) the object holds the float16 bytes, with
     fp32 only float32 bytes; a float32 model compiled with fp16 matches a
     reference computed with float16-rounded weights, and the float32
     reference within float16 tolerance.
  5. conv_bn_relu and mlp_bn_selu: one fused kernel call per layer;
     resnet: two ResNet basic blocks, one fused call per Conv (the residual
     Add and Relu in the second Conv's epilogue); resnet_winograd: the same
     with 16 channels on 16x16 maps, every Conv a Winograd call by default
     and with --winograd, on 10x10 maps the direct path; conv_fp16: Conv weights
     stored as float16 (a float32 CNN with --weights-dtype fp16 at half the
     bytes against float16-rounded weights, a float16 CNN with keep).
  6. rss: peak RSS of `kiln compile` <= 1.5 x W + 64 MiB.

Every model is also verified with --no-opt: the optimized and unoptimized
builds both match the reference (rtol 1e-3, atol 1e-5).

usage: run.py KILN [--keep DIR]
environment: KILN_OPT_ONLY=a,b runs only those; KILN_OPT_SKIP=rss skips (sanitizer builds)
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

MiB = 1 << 20
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def t(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def write_case(folder, graph, inputs, outputs, opset=13):
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    save(model, os.path.join(folder, "model.onnx"))
    for kind, arrs in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrs):
            with open(os.path.join(folder, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a)).SerializeToString())


def run(kiln, *args):
    p = subprocess.run([kiln] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def verify(kiln, folder, *flags):
    rc, out = run(kiln, "verify", folder, *flags)
    return rc == 0 and out.startswith("PASS"), out.strip().splitlines()[0] if out.strip() else ""


def compile_model(kiln, folder, outdir, *flags):
    rc, out = run(kiln, "compile", os.path.join(folder, "model.onnx"), "--batch", "1",
                  "--name", "m", "-o", outdir, *flags)
    if rc != 0:
        return None, out
    m = re.search(r"\((\d+) symbols, (\d+) bytes\)", out)
    a = re.search(r"arena: (\d+) bytes", out)
    with open(os.path.join(outdir, "m.c")) as f:
        code = f.read()
    return {"weights": int(m.group(2)), "arena": int(a.group(1)), "code": code}, out


def both_builds(kiln, name, folder, *flags):
    ok, line = verify(kiln, folder, *flags)
    check(ok, "%s: optimized build matches the reference (%s)" % (name, line))
    ok, line = verify(kiln, folder, "--no-opt", *flags)
    check(ok, "%s: --no-opt build matches the reference (%s)" % (name, line))


# ---- 1. OpenVINO's Einsum case --------------------------------------------

def openvino(kiln, root):
    rng = np.random.default_rng(1)
    D, H, E = 1024, 16, 64
    sd = 0.5 / np.sqrt(D)  # contracting layers: float32 rounding does not grow
    f32 = np.float32
    c0 = (rng.standard_normal((D, H, E)) * sd).astype(f32)
    c1a = (rng.standard_normal((D, H, E)) * sd).astype(f32)
    c1b = (rng.standard_normal((D, H, E)) * sd).astype(f32)
    c2 = (rng.standard_normal((D, H, E)) * sd * 2).astype(f32)
    c3 = (rng.standard_normal(D * H * E) * sd).astype(f32)
    c4 = (rng.standard_normal((H, D, E)) * sd).astype(f32)
    half = np.array(0.5, f32)
    sources = [c0, c1a + c1b, c2 * half, c3.reshape(D, H, E), c4.transpose(1, 0, 2)]
    biases = [(rng.standard_normal(D) * 0.1).astype(f32) for _ in range(10)]
    projs = [(rng.standard_normal((D, D)) * sd).astype(f32) for _ in range(3)]
    scale = np.array(0.02, f32)
    inits = [t("c0", c0), t("c1a", c1a), t("c1b", c1b), t("c2", c2), t("half", half),
             t("c3", c3), t("c4", c4), t("shape_src", np.array([D, H, E], np.int64)),
             t("shape_h", np.array([1, 10, D], np.int64)),
             t("shape_q", np.array([1, 10, H, E], np.int64)), t("scale", scale)]
    inits += [t("bias%d" % i, b) for i, b in enumerate(biases)]
    inits += [t("proj%d" % i, p) for i, p in enumerate(projs)]
    nodes = [helper.make_node("Add", ["c1a", "c1b"], ["s1"]),
             helper.make_node("Mul", ["c2", "half"], ["s2"]),
             helper.make_node("Reshape", ["c3", "shape_src"], ["s3"]),
             helper.make_node("Transpose", ["c4"], ["s4"], perm=[1, 0, 2])]
    src_names = ["c0", "s1", "s2", "s3", "s4"]
    x = rng.standard_normal((1, 10, D)).astype(f32)
    # The reference runs in float64 on the float32 weights.
    sources = [s.astype(np.float64) for s in sources]
    h, hn = x.astype(np.float64), "x"
    for i in range(10):
        p = "l%d_" % i
        e = np.einsum("abc,cde->abde", h, sources[i // 2])
        nodes.append(helper.make_node("Einsum", [hn, src_names[i // 2]], [p + "e"],
                                      equation="abc,cde->abde"))
        r = np.tanh(e.reshape(1, 10, D) + biases[i])
        nodes += [helper.make_node("Reshape", [p + "e", "shape_h"], [p + "r"]),
                  helper.make_node("Add", [p + "r", "bias%d" % i], [p + "b"]),
                  helper.make_node("Tanh", [p + "b"], [p + "t"])]
        # Two variable x variable Einsums: attention over the 16 heads.
        q = r.reshape(1, 10, H, E)
        sc = np.tanh(np.einsum("bthd,bshd->bhts", q, q) * float(scale))
        att = np.einsum("bhts,bshd->bthd", sc, q)
        nodes += [helper.make_node("Reshape", [p + "t", "shape_q"], [p + "q"]),
                  helper.make_node("Einsum", [p + "q", p + "q"], [p + "s"],
                                   equation="bthd,bshd->bhts"),
                  helper.make_node("Mul", [p + "s", "scale"], [p + "ss"]),
                  helper.make_node("Tanh", [p + "ss"], [p + "st"]),
                  helper.make_node("Einsum", [p + "st", p + "q"], [p + "a"],
                                   equation="bhts,bshd->bthd"),
                  helper.make_node("Reshape", [p + "a", "shape_h"], [p + "ar"]),
                  helper.make_node("Add", [p + "t", p + "ar"], [p + "sum"]),
                  helper.make_node("Tanh", [p + "sum"], [p + "h"])]
        h, hn = np.tanh(r + att.reshape(1, 10, D)), p + "h"
        if i % 3 == 2:
            nodes.append(helper.make_node("MatMul", [hn, "proj%d" % (i // 3)], [p + "p"]))
            h, hn = h @ projs[i // 3], p + "p"
    nodes.append(helper.make_node("Identity", [hn], ["y"]))
    graph = helper.make_graph(nodes, "openvino", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, D])], inits)
    folder = os.path.join(root, "openvino")
    write_case(folder, graph, [x], [h.astype(f32)])
    both_builds(kiln, "openvino", folder)
    unique = sum(s.size * 4 for s in sources) + sum(b.nbytes for b in biases) + \
        sum(p.nbytes for p in projs)
    res, out = compile_model(kiln, folder, os.path.join(root, "openvino_out"))
    check(res is not None, "openvino: compiles (%s)" % (out.strip().splitlines()[-1:],))
    if res:
        check(abs(res["weights"] - unique) <= 0.01 * unique,
              "openvino: weights object %d bytes, unique bytes after folding %d" %
              (res["weights"], unique))
        # Per node, or per step of a shared function (large graphs, emit_c.c).
        gemm_nodes = set(re.findall(r'/\* node (\d+) "[^"]*" \((?:Gemm|MatMul)\)', res["code"]))
        check("(Einsum)" not in res["code"] and "kiln_f32_gemm" in res["code"] and
              len(gemm_nodes) >= 30, "openvino: all 30 Einsums run on the GEMM kernel")
    res0, _ = compile_model(kiln, folder, os.path.join(root, "openvino_noopt"), "--no-opt")
    if res0:
        print("     (--no-opt: weights object %d bytes)" % res0["weights"])


# ---- 2. tied embedding ----------------------------------------------------

def tied(kiln, root):
    rng = np.random.default_rng(2)
    V, D = 32000, 256
    emb = (rng.standard_normal((V, D)) * 0.05).astype(np.float32)
    ids = rng.integers(0, V, (1, 8)).astype(np.int64)
    h = np.tanh(emb[ids])
    logits = h @ emb.T
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["g"]),
             helper.make_node("Tanh", ["g"], ["h"]),
             helper.make_node("Transpose", ["emb"], ["embT"], perm=[1, 0]),
             helper.make_node("MatMul", ["h", "embT"], ["logits"])]
    graph = helper.make_graph(nodes, "tied", [
        helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 8, V])], [t("emb", emb)])
    folder = os.path.join(root, "tied")
    write_case(folder, graph, [ids], [logits.astype(np.float32)])
    both_builds(kiln, "tied", folder)
    res, out = compile_model(kiln, folder, os.path.join(root, "tied_out"))
    check(res is not None, "tied: compiles")
    if res:
        check(abs(res["weights"] - emb.nbytes) <= 0.01 * emb.nbytes,
              "tied: weights object %d bytes, embedding %d bytes" % (res["weights"], emb.nbytes))
        check(res["arena"] < emb.nbytes // 4,
              "tied: no transposed copy in the arena (%d bytes)" % res["arena"])
        check("transB" in res["code"] or "kiln_f32_gemm" in res["code"],
              "tied: the lm_head reads the embedding transposed")
    # Stored as float16: half the bytes, still once, and no widened table.
    h16 = np.tanh(emb.astype(np.float16).astype(np.float64)[ids])
    e16 = emb.astype(np.float16).astype(np.float64)
    f16dir = os.path.join(root, "tied_f16")
    write_case(f16dir, graph, [ids], [(h16 @ e16.T).astype(np.float32)])
    ok, line = verify(kiln, f16dir, "--weights-dtype", "fp16")
    check(ok, "tied, --weights-dtype fp16: matches the float16-rounded reference (%s)" % line)
    res, out = compile_model(kiln, f16dir, os.path.join(root, "tied_f16_out"),
                             "--weights-dtype", "fp16")
    if res:
        check(abs(res["weights"] - emb.nbytes // 2) <= 0.01 * emb.nbytes // 2 and
              res["arena"] < emb.nbytes // 8,
              "tied, --weights-dtype fp16: weights object %d bytes (half of %d), arena %d bytes" %
              (res["weights"], emb.nbytes, res["arena"]))


# ---- 3. If branches sharing a parent initializer ---------------------------

def if_shared(kiln, root):
    rng = np.random.default_rng(3)
    W = (rng.standard_normal((512, 512)) * 0.05).astype(np.float32)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["ty"])], "then", [],
                               [helper.make_tensor_value_info("ty", TensorProto.FLOAT, [2, 512])])
    else_g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["e0"]),
                                helper.make_node("Relu", ["e0"], ["ey"])], "else", [],
                               [helper.make_tensor_value_info("ey", TensorProto.FLOAT, [2, 512])])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, "if_shared", [
        helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 512])], [t("W", W)])
    for cond in (True, False):
        folder = os.path.join(root, "if_shared_%d" % cond)
        ref = x @ W if cond else np.maximum(x @ W, 0)
        write_case(folder, graph, [np.array(cond), x], [ref.astype(np.float32)])
        both_builds(kiln, "if_shared (cond %s)" % cond, folder)
    res, out = compile_model(kiln, folder, os.path.join(root, "if_out"))
    check(res is not None, "if_shared: compiles (%s)" % out.strip().splitlines()[-1:])
    if res:
        check(abs(res["weights"] - W.nbytes) <= 0.01 * W.nbytes,
              "if_shared: weights object %d bytes, W %d bytes" % (res["weights"], W.nbytes))


# ---- 4. float16 weights ----------------------------------------------------

def fp16(kiln, root):
    rng = np.random.default_rng(4)
    w1 = (rng.standard_normal((512, 512)) * 0.05).astype(np.float16)
    w2 = (rng.standard_normal((512, 512)) * 0.05).astype(np.float16)
    x = rng.standard_normal((4, 512)).astype(np.float32)
    y = np.maximum(x @ w1.astype(np.float32), 0) @ w2.astype(np.float32)
    nodes = [helper.make_node("Cast", ["w1"], ["w1f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["w2"], ["w2f"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w1f"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("MatMul", ["r", "w2f"], ["y"])]
    graph = helper.make_graph(nodes, "fp16", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 512])],
        [t("w1", w1), t("w2", w2)])
    folder = os.path.join(root, "fp16")
    write_case(folder, graph, [x], [y.astype(np.float32)])
    half_bytes = w1.nbytes + w2.nbytes
    for mode, want in (("keep", half_bytes), ("fp16", half_bytes), ("fp32", 2 * half_bytes)):
        ok, line = verify(kiln, folder, "--weights-dtype", mode)
        check(ok, "fp16 model, --weights-dtype %s: matches the reference (%s)" % (mode, line))
        res, _ = compile_model(kiln, folder, os.path.join(root, "fp16_" + mode),
                               "--weights-dtype", mode)
        check(res is not None and abs(res["weights"] - want) <= 0.01 * want,
              "fp16 model, --weights-dtype %s: weights object %s bytes, want %d" %
              (mode, res and res["weights"], want))
        if res and mode == "fp32":
            check("float16" not in res["code"].split("==== batch")[0],
                  "fp16 model, --weights-dtype fp32: no float16 constant stored")
        if res and mode != "fp32":
            check(res["code"].count("kiln_f32_gemm_f16b(") == 2 and res["arena"] < 64 * 1024,
                  "fp16 model, --weights-dtype %s: the GEMMs read float16 B, no float32 copy "
                  "in the arena (%d bytes)" % (mode, res["arena"]))
    # A float32 model stored as float16.
    v1, v2 = w1.astype(np.float32), w2.astype(np.float32)
    v1 = v1 + (rng.standard_normal(v1.shape) * 1e-3).astype(np.float32)  # not exactly fp16
    v2 = v2 + (rng.standard_normal(v2.shape) * 1e-3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "v1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("MatMul", ["r", "v2"], ["y"])]
    graph = helper.make_graph(nodes, "fp32", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 512])],
        [t("v1", v1), t("v2", v2)])
    y32 = np.maximum(x @ v1, 0) @ v2
    r1, r2 = v1.astype(np.float16).astype(np.float32), v2.astype(np.float16).astype(np.float32)
    y16 = np.maximum(x @ r1, 0) @ r2
    f32dir, f16dir = os.path.join(root, "fp32_model"), os.path.join(root, "fp32_model_as_f16")
    write_case(f32dir, graph, [x], [y32.astype(np.float32)])
    write_case(f16dir, graph, [x], [y16.astype(np.float32)])
    both_builds(kiln, "fp32 model", f32dir)
    ok, line = verify(kiln, f16dir, "--weights-dtype", "fp16")
    check(ok, "fp32 model, --weights-dtype fp16: matches the float16-rounded reference (%s)" % line)
    err = np.max(np.abs(y16 - y32)) / np.max(np.abs(y32))
    check(err < 1e-2, "fp32 model, --weights-dtype fp16: within float16 tolerance of the "
          "float32 reference (%.2g)" % err)
    res, _ = compile_model(kiln, f32dir, os.path.join(root, "fp32_as_f16"), "--weights-dtype",
                           "fp16")
    want = (v1.nbytes + v2.nbytes) // 2
    check(res is not None and abs(res["weights"] - want) <= 0.01 * want,
          "fp32 model, --weights-dtype fp16: weights object %s bytes, want %d" %
          (res and res["weights"], want))


# ---- 5. fused layers -------------------------------------------------------

def bn_params(rng, c, prefix):
    return [t(prefix + "s", (rng.random(c) + 0.5).astype(np.float32)),
            t(prefix + "b", (rng.standard_normal(c) * 0.1).astype(np.float32)),
            t(prefix + "m", (rng.standard_normal(c) * 0.1).astype(np.float32)),
            t(prefix + "v", (rng.random(c) + 0.5).astype(np.float32))]


def bn_ref(x, inits, axis_shape):
    s, b, m, v = (numpy_helper.to_array(i) for i in inits)
    r = lambda a: a.reshape(axis_shape)
    return (x - r(m)) / np.sqrt(r(v) + 1e-5) * r(s) + r(b)


def conv2d(x, w, bias):
    n, c, hh, ww = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, m, hh, ww), np.float64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + hh, j:j + ww], w[:, :, i, j])
    return y + bias.reshape(1, m, 1, 1)


def fused(kiln, root):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    inits, nodes, h, hn, cin = [], [], x.astype(np.float64), "x", 3
    for i in range(3):
        w = (rng.standard_normal((8, cin, 3, 3)) * 0.3).astype(np.float32)
        b = (rng.standard_normal(8) * 0.1).astype(np.float32)
        bn = bn_params(rng, 8, "bn%d" % i)
        inits += [t("w%d" % i, w), t("b%d" % i, b)] + bn
        nodes += [helper.make_node("Conv", [hn, "w%d" % i, "b%d" % i], ["c%d" % i],
                                   pads=[1, 1, 1, 1], name="conv%d" % i),
                  helper.make_node("BatchNormalization", ["c%d" % i] + [p.name for p in bn],
                                   ["n%d" % i], name="bn%d" % i),
                  helper.make_node("Relu", ["n%d" % i], ["r%d" % i], name="relu%d" % i)]
        h = np.maximum(bn_ref(conv2d(h, w, b), bn, (1, 8, 1, 1)), 0)
        hn, cin = "r%d" % i, 8
    graph = helper.make_graph(nodes, "conv_bn_relu", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
        [helper.make_tensor_value_info(hn, TensorProto.FLOAT, [2, 8, 16, 16])], inits)
    folder = os.path.join(root, "conv_bn_relu")
    write_case(folder, graph, [x], [h.astype(np.float32)])
    both_builds(kiln, "conv_bn_relu", folder)
    res, _ = compile_model(kiln, folder, os.path.join(root, "conv_out"))
    if res:
        # the weights are packed at compile time, so the fused call is the packed conv's
        fused_calls = len(re.findall(r"kiln_f32_conv2d_packed\([^;]*&ep[^;]*\);", res["code"]))
        check(fused_calls == 3 and res["code"].count("kiln_f32_conv2d_ep(") == 0 and
              res["code"].count("kiln_f32_conv2d(") == 0 and "(Relu)" not in res["code"] and
              "(BatchNormalization)" not in res["code"],
              "conv_bn_relu: one fused kernel call per layer in the generated C")
    rc, out = run(kiln, "info", os.path.join(folder, "model.onnx"), "--passes")
    check("nodes 9 -> 3" in out, "conv_bn_relu: --passes reports 9 nodes -> 3")

    x = rng.standard_normal((4, 32)).astype(np.float32)
    inits, nodes, h, hn, k = [], [], x.astype(np.float64), "x", 32
    for i in range(3):
        w = (rng.standard_normal((16, k)) * 0.3).astype(np.float32)
        b = (rng.standard_normal(16) * 0.1).astype(np.float32)
        bn = bn_params(rng, 16, "bn%d" % i)
        inits += [t("w%d" % i, w), t("b%d" % i, b)] + bn
        nodes += [helper.make_node("Gemm", [hn, "w%d" % i, "b%d" % i], ["g%d" % i], transB=1,
                                   name="fc%d" % i),
                  helper.make_node("BatchNormalization", ["g%d" % i] + [p.name for p in bn],
                                   ["n%d" % i], name="bn%d" % i),
                  helper.make_node("Selu", ["n%d" % i], ["s%d" % i], name="selu%d" % i)]
        z = bn_ref(h @ w.T.astype(np.float64) + b, bn, (1, 16))
        h = 1.0507009873554805 * np.where(z > 0, z, 1.6732632423543772 * (np.exp(z) - 1))
        hn, k = "s%d" % i, 16
    graph = helper.make_graph(nodes, "mlp_bn_selu", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info(hn, TensorProto.FLOAT, [4, 16])], inits)
    folder = os.path.join(root, "mlp_bn_selu")
    write_case(folder, graph, [x], [h.astype(np.float32)])
    both_builds(kiln, "mlp_bn_selu", folder)
    res, _ = compile_model(kiln, folder, os.path.join(root, "mlp_out"))
    if res:
        # the weights are packed at compile time, so the fused call is the packed GEMM's
        fused_calls = len(re.findall(r"kiln_f32_gemm_pb\([^;]*&ep\);", res["code"]))
        check(fused_calls == 3 and "kiln_f32_gemm(" not in res["code"] and
              "(Selu)" not in res["code"] and "(BatchNormalization)" not in res["code"],
              "mlp_bn_selu: one fused kernel call per layer in the generated C (packed B)")
    rc, out = run(kiln, "info", os.path.join(folder, "model.onnx"), "--passes")
    check("nodes 9 -> 3" in out, "mlp_bn_selu: --passes reports 9 nodes -> 3")

    # BatchNormalization before a 1x1 Conv1d (DeepJet's branches) folds into
    # the Conv's weight and bias; before a padded Conv it stays (the padding
    # would see zeros where the BatchNorm gives its shift).
    x = rng.standard_normal((2, 6, 25)).astype(np.float32)
    inits = bn_params(rng, 6, "pbn") + bn_params(rng, 8, "qbn")
    w1 = (rng.standard_normal((8, 6, 1)) * 0.4).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((4, 8, 3)) * 0.3).astype(np.float32)
    inits += [t("pw", w1), t("pb", b1), t("qw", w2)]
    nodes = [helper.make_node("BatchNormalization", ["x"] + [p.name for p in inits[0:4]], ["pn"],
                              name="pbn"),
             helper.make_node("Conv", ["pn", "pw", "pb"], ["pc"], name="pconv"),
             helper.make_node("Relu", ["pc"], ["pr"], name="prelu"),
             helper.make_node("BatchNormalization", ["pr"] + [p.name for p in inits[4:8]], ["qn"],
                              name="qbn"),
             helper.make_node("Conv", ["qn", "qw"], ["y"], pads=[1, 1], name="qconv")]
    h = bn_ref(x.astype(np.float64), inits[0:4], (1, 6, 1))
    h = np.maximum(np.einsum("nct,mc->nmt", h, w1[:, :, 0].astype(np.float64)) +
                   b1.reshape(1, 8, 1), 0)
    h = np.pad(bn_ref(h, inits[4:8], (1, 8, 1)), ((0, 0), (0, 0), (1, 1)))
    y = sum(np.einsum("nct,mc->nmt", h[:, :, j:j + 25], w2[:, :, j].astype(np.float64))
            for j in range(3))
    graph = helper.make_graph(nodes, "bn_conv1d", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 25])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 25])], inits)
    folder = os.path.join(root, "bn_conv1d")
    write_case(folder, graph, [x], [y.astype(np.float32)])
    both_builds(kiln, "bn_conv1d", folder)
    res, _ = compile_model(kiln, folder, os.path.join(root, "bn_conv1d_out"))
    if res:
        check(res["code"].count("(BatchNormalization)") == 1 and
              'fused: BatchNormalization "pbn", Relu "prelu"' in res["code"],
              "bn_conv1d: the BatchNorm before the 1x1 Conv is folded, the one before the "
              "padded Conv stays")

    # Small float32 Transposes that swap two axes once the axes of size 1 are
    # dropped are inline loops in the generated C; others call kiln_transpose.
    x1 = rng.standard_normal((1, 5, 7)).astype(np.float32)
    x2 = rng.standard_normal((3, 1, 4)).astype(np.float32)
    x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["x1"], ["y1"], perm=[0, 2, 1], name="t1"),
             helper.make_node("Transpose", ["x2"], ["y2"], perm=[2, 1, 0], name="t2"),
             helper.make_node("Transpose", ["x3"], ["y3"], perm=[2, 0, 1], name="t3")]
    graph = helper.make_graph(nodes, "small_transpose", [
        helper.make_tensor_value_info("x1", TensorProto.FLOAT, [1, 5, 7]),
        helper.make_tensor_value_info("x2", TensorProto.FLOAT, [3, 1, 4]),
        helper.make_tensor_value_info("x3", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, 7, 5]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [4, 1, 3]),
         helper.make_tensor_value_info("y3", TensorProto.FLOAT, [4, 2, 3])], [])
    folder = os.path.join(root, "small_transpose")
    write_case(folder, graph, [x1, x2, x3], [x1.transpose(0, 2, 1), x2.transpose(2, 1, 0),
                                             x3.transpose(2, 0, 1)])
    both_builds(kiln, "small_transpose", folder)
    res, _ = compile_model(kiln, folder, os.path.join(root, "small_transpose_out"))
    if res:
        check(res["code"].count("transposed */") == 2 and res["code"].count("kiln_transpose(") == 1,
              "small_transpose: two swaps inline, the 3-axis permutation through kiln_transpose")


# ---- 5b. residual blocks and float16 convolution weights ---------------------

def resnet(kiln, root, name="resnet", c=8, hw=10, call="kiln_f32_conv2d_packed", flags=()):
    """Two ResNet basic blocks (Conv+BN+Relu, Conv+BN, Add with the block
    input, Relu): one fused kernel call per Conv, the residual and the Relu
    in the second Conv's epilogue. c channels on hw x hw maps; call: the
    kernel every Conv must be."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, c, hw, hw)).astype(np.float32)
    inits, nodes, h, hn = [], [], x.astype(np.float64), "x"
    for blk in range(2):
        inp, hin = hn, h
        for i in range(2):
            tag = "b%dc%d" % (blk, i)
            w = (rng.standard_normal((c, c, 3, 3)) * (0.2 * (8 / c) ** 0.5)).astype(np.float32)
            b = (rng.standard_normal(c) * 0.1).astype(np.float32)
            bn = bn_params(rng, c, tag + "bn")
            inits += [t(tag + "w", w), t(tag + "b", b)] + bn
            nodes += [helper.make_node("Conv", [hn, tag + "w", tag + "b"], [tag + "c"],
                                       pads=[1, 1, 1, 1], name=tag),
                      helper.make_node("BatchNormalization", [tag + "c"] + [p.name for p in bn],
                                       [tag + "n"], name=tag + "bn")]
            h = bn_ref(conv2d(h, w, b), bn, (1, c, 1, 1))
            hn = tag + "n"
            if i == 0:
                nodes.append(helper.make_node("Relu", [hn], [tag + "r"], name=tag + "relu"))
                h, hn = np.maximum(h, 0), tag + "r"
        nodes += [helper.make_node("Add", [hn, inp], ["b%dsum" % blk], name="b%dadd" % blk),
                  helper.make_node("Relu", ["b%dsum" % blk], ["b%dout" % blk], name="b%drelu" % blk)]
        h, hn = np.maximum(h + hin, 0), "b%dout" % blk
    graph = helper.make_graph(nodes, name, [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, hw, hw])],
        [helper.make_tensor_value_info(hn, TensorProto.FLOAT, [2, c, hw, hw])], inits)
    folder = os.path.join(root, name)
    write_case(folder, graph, [x], [h.astype(np.float32)])
    both_builds(kiln, name, folder, *flags)
    res, _ = compile_model(kiln, folder, os.path.join(root, name + "_out"), *flags)
    if res:
        code = res["code"]
        fused_calls = len(re.findall(call + r"\([^;]*&ep[^;]*\);", code))
        check(fused_calls == 4 and code.count("kiln_f32_conv2d_ep(") == 0 and
              code.count("kiln_f32_conv2d(") == 0 and
              "(Relu)" not in code and "(Add)" not in code and
              "(BatchNormalization)" not in code and code.count("KILN_ACT_RELU") == 4,
              "%s: one fused %s call per Conv in the generated C" % (name, call))
        check(len(re.findall(r"kiln_epilogue ep = \{NULL, KILN_ACT_RELU, [^,]+, [^,]+, [^N]",
                             code)) == 2,
              "%s: the second Conv of each block adds the residual in its epilogue" % name)
    rc, out = run(kiln, "info", os.path.join(folder, "model.onnx"), "--passes")
    check("nodes 14 -> 4" in out, "%s: --passes reports 14 nodes -> 4" % name)


def resnet_winograd(kiln, root):
    """The same blocks with 16 channels on 16x16 maps (64 2x2 tiles an
    image): every Conv is a Winograd F(2x2, 3x3) call by default, chosen by
    the shape (docs/kernels.md), and with --winograd too; on 10x10 maps (25
    tiles an image, 10 columns) the packed direct path, with --winograd too
    (the batch's 50 tiles are fewer than it counts)."""
    resnet(kiln, root, "resnet_winograd", 16, 16, "kiln_f32_conv2d_winograd")
    resnet(kiln, root, "resnet_winograd_flag", 16, 16, "kiln_f32_conv2d_winograd", ("--winograd",))
    resnet(kiln, root, "resnet_direct16", 16, 10, "kiln_f32_conv2d_packed", ("--winograd",))


def conv_fp16(kiln, root):
    """Conv weights stored as float16: a float32 CNN compiled with
    --weights-dtype fp16, and a float16 CNN (weights behind Casts) with keep."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 16, 9, 9)).astype(np.float32)
    w1 = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(32) * 0.1).astype(np.float32)

    def ref(v1, v2):
        a = np.maximum(conv2d(x.astype(np.float64), v1, b1), 0)
        return np.maximum(conv2d(a, v2, b2) + a, 0).astype(np.float32)

    def graph(name, inits, w1name, w2name, casts=()):
        nodes = list(casts) + [
            helper.make_node("Conv", ["x", w1name, "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
            helper.make_node("Relu", ["c1"], ["a"], name="relu1"),
            helper.make_node("Conv", ["a", w2name, "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
            helper.make_node("Add", ["c2", "a"], ["s"], name="add"),
            helper.make_node("Relu", ["s"], ["y"], name="relu2")]
        return helper.make_graph(nodes, name, [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 9, 9])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32, 9, 9])],
            inits + [t("b1", b1), t("b2", b2)])

    r1, r2 = (w.astype(np.float16).astype(np.float32) for w in (w1, w2))
    g32 = graph("cnn32", [t("w1", w1), t("w2", w2)], "w1", "w2")
    f32dir, f16dir = os.path.join(root, "cnn32"), os.path.join(root, "cnn32_as_f16")
    write_case(f32dir, g32, [x], [ref(w1, w2)])
    write_case(f16dir, g32, [x], [ref(r1, r2)])
    both_builds(kiln, "cnn32", f32dir)
    ok, line = verify(kiln, f16dir, "--weights-dtype", "fp16")
    check(ok, "cnn32, --weights-dtype fp16: matches the float16-rounded reference (%s)" % line)
    res, _ = compile_model(kiln, f32dir, os.path.join(root, "cnn32_f16_out"), "--weights-dtype",
                           "fp16")
    want = (w1.nbytes + w2.nbytes) // 2 + b1.nbytes + b2.nbytes
    check(res is not None and abs(res["weights"] - want) <= 0.01 * want and
          res["code"].count("kiln_f32_conv2d_f16w(") == 2,
          "cnn32, --weights-dtype fp16: weights object %s bytes (want %d, float32 %d), "
          "the Convs read float16" % (res and res["weights"], want, 2 * want - b1.nbytes - b2.nbytes))

    h1, h2 = w1.astype(np.float16), w2.astype(np.float16)
    casts = [helper.make_node("Cast", ["w1h"], ["w1f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["w2h"], ["w2f"], to=TensorProto.FLOAT)]
    g16 = graph("cnn16", [t("w1h", h1), t("w2h", h2)], "w1f", "w2f", casts)
    folder = os.path.join(root, "cnn16")
    write_case(folder, g16, [x], [ref(r1, r2)])
    both_builds(kiln, "cnn16", folder)
    res, _ = compile_model(kiln, folder, os.path.join(root, "cnn16_out"))
    want = h1.nbytes + h2.nbytes + b1.nbytes + b2.nbytes
    check(res is not None and abs(res["weights"] - want) <= 0.01 * want and
          res["code"].count("kiln_f32_conv2d_f16w(") == 2 and "(Cast)" not in res["code"],
          "cnn16, --weights-dtype keep: weights object %s bytes, want %d (float16 only), the "
          "Convs read float16" % (res and res["weights"], want))


# ---- 6. compile-time peak RSS ------------------------------------------------

def rss(kiln, root, mib=128):
    rng = np.random.default_rng(6)
    n = int(np.sqrt(mib * MiB // 8 // 4))
    inits, nodes, hn = [], [], "x"
    for i in range(8):
        inits.append(t("w%d" % i, (rng.standard_normal((n, n)) * 0.01).astype(np.float32)))
        nodes.append(helper.make_node("MatMul", [hn, "w%d" % i], ["h%d" % i]))
        hn = "h%d" % i
    graph = helper.make_graph(nodes, "rss", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info(hn, TensorProto.FLOAT, [1, n])], inits)
    folder = os.path.join(root, "rss")
    os.makedirs(folder, exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    save(model, os.path.join(folder, "model.onnx"))
    w = sum(i.ByteSize() for i in inits)
    del inits, model, graph
    out = os.path.join(root, "rss_out")
    # Measure in a child whose only child is kiln: ru_maxrss of RUSAGE_CHILDREN
    # is then kiln's own peak (cc and ld run after it, and are far smaller).
    code = ("import resource,subprocess,sys;"
            "p=subprocess.run(sys.argv[1:],capture_output=True);"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code, kiln, "compile",
                        os.path.join(folder, "model.onnx"), "--batch", "1", "--name", "m",
                        "-o", out], capture_output=True, text=True)
    rc, kib = (int(v) for v in p.stdout.split())
    peak = kib * 1024
    check(rc == 0 and peak <= 1.5 * w + 64 * MiB,
          "rss: kiln compile peak RSS %.1f MiB for %.1f MiB of weights (limit %.1f MiB)" %
          (peak / MiB, w / MiB, (1.5 * w + 64 * MiB) / MiB))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kiln = os.path.abspath(sys.argv[1])
    keep = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--keep" else None
    root = keep or tempfile.mkdtemp(prefix="kiln-opt-")
    os.makedirs(root, exist_ok=True)
    only = os.environ.get("KILN_OPT_ONLY")
    skip = (os.environ.get("KILN_OPT_SKIP") or "").split(",")
    try:
        for fn in (openvino, tied, if_shared, fp16, fused, resnet, resnet_winograd, conv_fp16,
                   rss):
            if fn.__name__ in skip:
                print("== %s: skipped (KILN_OPT_SKIP)" % fn.__name__)
            elif not only or fn.__name__ in only.split(","):
                print("== %s" % fn.__name__, flush=True)
                fn(kiln, root)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    print("opt: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
