#!/usr/bin/python3
"""The ewchain pass (compiler/passes/ewchain.c): chains of float32
elementwise nodes computed in one loop, their inner values never stored.

Each model is compiled at batch sizes {1, 4} twice, as it is and with
--no-pass=ewchain, linked with tests/trees/stitch_main.c and run through
kiln_run at n = 1, 4 and 7 (stitched). Checked:
  - the outputs against a float64 numpy reference (rtol 1e-4, atol 1e-6:
    the vector kernels' error bounds, docs/kernels.md, are a few ulp);
  - the two builds bit for bit (the chain's code is the same arithmetic);
  - how many node functions the chains saved at each batch size (exactly
    the number of nodes the case must fuse, so this fails if fusion
    silently stops or goes where it must not), and that the arena shrank
    where an inner value would have had a buffer;
  - the generated C compiles warning-free with gcc and clang (-Wall
    -Wextra -Werror) and is the same bytes when compiled again.
usage: ewchain.py KILN SOURCE_ROOT LIBKILN_A OUTDIR   (env CC, SANFLAGS)
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

KILN, SRC, LIBKILN, OUT = sys.argv[1:5]
F, H, I32 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32
N = helper.make_node
failures = []
rng = np.random.default_rng(7)


def report(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def c(name, arr, dt=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dtype=dt), name)


def functions(src, batch):
    """Node functions of one signature: own ones and shared steps."""
    own = re.findall(r"^static int b%d_n\d+_" % batch, src, re.M)
    steps = re.search(r"b%d_steps\[\] = \{\n(.*?)\n\};" % batch, src, re.S)
    return len(own) + (len(re.findall(r"^\t\{s\d+_", steps.group(1), re.M)) if steps else 0)


def build(name, model, flags):
    d = os.path.join(OUT, name + ("_off" if flags else ""))
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    save(model, path)
    r = run([KILN, "compile", path, "--batch", "1,4", "--name", "t", "-o", d] + flags)
    if r.returncode or "warning" in r.stderr:
        report(False, "%s: kiln compile %s: %s" % (name, " ".join(flags), r.stderr.strip()))
        return None
    arena = int(re.search(r"arena: (\d+) bytes", r.stdout).group(1))
    exe = os.path.join(d, "run")
    cc = os.environ.get("CC", "cc").split()
    san = os.environ.get("SANFLAGS", "").split()  # the sanitizer build's libkiln needs its runtime
    r = run(cc + san + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(SRC, "include"),
                  "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                  os.path.join(SRC, "tests", "trees", "stitch_main.c"), os.path.join(d, "t.o"),
                  LIBKILN, "-lm", "-o", exe])
    if r.returncode:
        report(False, "%s: cc: %s" % (name, r.stderr.strip()))
        return None
    with open(os.path.join(d, "t.c")) as f:
        return {"dir": d, "exe": exe, "src": f.read(), "arena": arena, "path": path}


def outputs(b, x, n, dtypes):
    xf = os.path.join(b["dir"], "x%d.bin" % n)
    x.tofile(xf)
    outs = [os.path.join(b["dir"], "y%d_%d.bin" % (n, i)) for i in range(len(dtypes))]
    r = run([b["exe"], str(n), xf] + outs)
    if r.returncode:
        report(False, "run n=%d: %s" % (n, r.stderr.strip()))
        return None
    return [np.fromfile(o, dt) for o, dt in zip(outs, dtypes)]


def case(name, nodes, x_shape, outs, inits, ref, fused, smaller=True, x_dt=F, opset=17):
    """outs: (name, shape, elem type) of each output; ref(x) -> arrays;
    fused: node functions the chains must save per signature."""
    np_dt = {F: np.float32, H: np.float16, I32: np.int32}
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", x_dt, ["N"] + x_shape)],
        [helper.make_tensor_value_info(o, dt, ["N"] + s) for o, s, dt in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    on, off = build(name, model, []), build(name, model, ["--no-pass=ewchain"])
    if not on or not off:
        return
    saved = [functions(off["src"], b) - functions(on["src"], b) for b in (1, 4)]
    report(saved == [fused, fused], "%s: node functions saved %s (want %d each)" %
           (name, saved, fused))
    if smaller is not None:
        ok = on["arena"] < off["arena"] if smaller else on["arena"] == off["arena"]
        report(ok, "%s: arena %d bytes, %d without the pass (%s)" %
               (name, on["arena"], off["arena"], "smaller" if smaller else "the same"))
    dts = [np_dt[dt] for _, _, dt in outs]
    for n in (1, 4, 7):
        if x_dt == I32:
            x = rng.integers(-50, 50, [n] + x_shape).astype(np.int32)
        else:
            x = rng.standard_normal([n] + x_shape).astype(np_dt[x_dt])
        got, want = outputs(on, x, n, dts), outputs(off, x, n, dts)
        if got is None or want is None:
            return
        refs = ref(x.astype(np.float64) if x_dt == F else x)
        same = all(g.tobytes() == w.tobytes() for g, w in zip(got, want))
        close = all(np.allclose(g.reshape(r.shape), r, rtol=1e-4, atol=1e-6)
                    for g, r in zip(got, refs))
        report(same and close, "%s n=%d: bit-identical to --no-pass=ewchain %s, numpy %s" %
               (name, n, same, close))
    return on


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    C = 64
    mean, std = rng.standard_normal(C), rng.random(C) + 0.5
    # Input scaling with broadcast constants, then Relu: one loop, no arena.
    # A node name that would end the chain's comment is escaped.
    norm = case("normalize", [N("Sub", ["x", "mean"], ["a"], name="sub */ #error injected /*"),
                       N("Div", ["a", "std"], ["b"], name="div"),
                       N("Relu", ["b"], ["y"], name="relu")],
         [C], [("y", [C], F)], [c("mean", mean), c("std", std)],
         lambda x: [np.maximum((x - mean.astype(np.float32)) / std.astype(np.float32), 0)], 2)
    if norm:
        report("*/ #error" not in norm["src"] and "#error injected" in norm["src"],
               "normalize: the node name is escaped in the comment")
        dump = run([KILN, "dump", norm["path"], "--passes", "--batch", "1,4"]).stdout
        report(len(re.findall(r" inline uses=1$", dump, re.M)) == 2,
               "normalize: kiln dump --passes marks the two inner values inline")
    # SiLU: x read twice, by the vector kernel and by the Mul.
    case("silu", [N("Sigmoid", ["x"], ["s"], name="sig"), N("Mul", ["x", "s"], ["y"], name="mul")],
         [300], [("y", [300], F)], [], lambda x: [x * sigmoid(x)], 1)
    # a is read twice: it is stored, and the chain starts after it.
    case("split", [N("Mul", ["x", "k"], ["a"], name="scale"),
                   N("Relu", ["a"], ["r"], name="relu"), N("Exp", ["a"], ["e"], name="exp"),
                   N("Add", ["r", "e"], ["y"], name="add")],
         [40], [("y", [40], F)], [c("k", 0.5)],
         lambda x: [np.maximum(x * 0.5, 0) + np.exp(x * 0.5)], 2)
    # b is a graph output: written there, not hidden in the loop.
    bias, scale = rng.standard_normal(C), rng.standard_normal(C)
    b32, s32 = bias.astype(np.float32), scale.astype(np.float32)

    def lrelu(v):
        return np.where(v < 0, np.float32(0.1) * v, v)
    case("graph_output", [N("Add", ["x", "bias"], ["a"], name="add"),
                          N("LeakyRelu", ["a"], ["b"], name="lrelu", alpha=0.1),
                          N("Mul", ["b", "scale"], ["y"], name="mul")],
         [C], [("y", [C], F), ("b", [C], F)], [c("bias", bias), c("scale", scale)],
         lambda x: [lrelu(x + b32) * s32, lrelu(x + b32)], 1)
    # Tanh, Exp and Sigmoid through kiln_f32_unary inside the loop, on blocks.
    case("kernels", [N("Mul", ["x", "half"], ["a"], name="mul"), N("Tanh", ["a"], ["t"], name="tanh"),
                     N("Exp", ["t"], ["e"], name="exp"), N("Sub", ["e", "one"], ["s"], name="sub"),
                     N("Sigmoid", ["s"], ["y"], name="sig")],
         [700], [("y", [700], F)], [c("half", 0.5), c("one", 1.0)],
         lambda x: [sigmoid(np.exp(np.tanh(x * 0.5)) - 1)], 4)
    # [N, C] with a [C] bias and scale: Add(bias) -> LeakyRelu -> Mul(scale).
    case("bias_act_scale", [N("Add", ["x", "bias"], ["a"], name="add"),
                            N("LeakyRelu", ["a"], ["b"], name="lrelu", alpha=0.1),
                            N("Mul", ["b", "scale"], ["y"], name="mul")],
         [C], [("y", [C], F)], [c("bias", bias), c("scale", scale)],
         lambda x: [lrelu(x + b32) * s32], 2)
    # Rows of 16 with [16] constants: a block takes 16 rows, so the
    # kernels run on whole blocks, one reading x where it is.
    b16, s16 = rng.standard_normal(16), rng.standard_normal(16)
    case("rows_kernel", [N("Add", ["x", "b"], ["a"], name="add"), N("Sigmoid", ["a"], ["g"], name="sig"),
                         N("Tanh", ["x"], ["h"], name="tanh"), N("Mul", ["g", "h"], ["p"], name="mul"),
                         N("Mul", ["p", "s"], ["y"], name="scale")],
         [16], [("y", [16], F)], [c("b", b16), c("s", s16)],
         lambda x: [sigmoid(x + b16.astype(np.float32)) * np.tanh(x) * s16.astype(np.float32)], 4)
    # Rows of 100: blocks of two rows, the last one short at batch 1 (3 rows).
    b100, s100 = rng.standard_normal(100), rng.standard_normal(100)
    case("rows_tail", [N("Add", ["x", "b"], ["a"], name="add"), N("Exp", ["a"], ["e"], name="exp"),
                       N("Mul", ["e", "s"], ["y"], name="scale")],
         [3, 100], [("y", [3, 100], F)], [c("b", b100), c("s", s100)],
         lambda x: [np.exp(x + b100.astype(np.float32)) * s100.astype(np.float32)], 2)
    # [N, 4, 8] with a [4, 1] scale (repeats along the inner dim) and an
    # [8] shift; Clip with constant bounds, Max of three.
    s41, t8 = rng.standard_normal((4, 1)), rng.standard_normal(8)
    case("broadcast_3d", [N("Mul", ["x", "s"], ["a"], name="mul"), N("Add", ["a", "t"], ["b"], name="add"),
                          N("Clip", ["b", "lo", "hi"], ["d"], name="clip"),
                          N("Max", ["d", "x", "t"], ["y"], name="max")],
         [4, 8], [("y", [4, 8], F)], [c("s", s41), c("t", t8), c("lo", -0.5), c("hi", 0.75)],
         lambda x: [np.maximum(np.maximum(np.clip(x * s41.astype(np.float32) + t8.astype(np.float32),
                                                  -0.5, 0.75), x), t8.astype(np.float32))], 3)
    # GELU written without Erf (the tanh form): eight nodes, one loop.
    k = np.float32(np.sqrt(2 / np.pi))
    case("gelu_tanh", [N("Pow", ["x", "three"], ["p"], name="pow"),
                       N("Mul", ["p", "c1"], ["m"], name="mul1"), N("Add", ["x", "m"], ["a"], name="add1"),
                       N("Mul", ["a", "k"], ["u"], name="mul2"), N("Tanh", ["u"], ["t"], name="tanh"),
                       N("Add", ["t", "one"], ["o"], name="add2"), N("Mul", ["x", "half"], ["h"], name="mul3"),
                       N("Mul", ["h", "o"], ["y"], name="mul4")],
         [1000], [("y", [1000], F)],
         [c("three", 3.0), c("c1", 0.044715), c("k", k), c("one", 1.0), c("half", 0.5)],
         lambda x: [0.5 * x * (1 + np.tanh(k * (x + 0.044715 * x ** 3)))], 7)
    # One inner value read twice by its reader (issue 27, a TF-exported
    # BERT): Mul(d, d) takes d's code once, and no t<i> is left unread.
    case("square", [N("Sub", ["x", "mean"], ["d"], name="sub"), N("Mul", ["d", "d"], ["y"], name="sq")],
         [C], [("y", [C], F)], [c("mean", mean)],
         lambda x: [(x - mean.astype(np.float32)) ** 2], 1)
    # TF's LayerNorm: x - mean written twice, the variance, 1 / sqrt, gamma,
    # beta. Two identical Subs are merged by cse.c, and the centred value,
    # read by the square and the Div, is stored: 3 saved (add_eps + sqrt,
    # div + mul_gamma + add_beta). A SquaredDifference export, mean - x,
    # stays a Sub of its own, read twice by the square alone: 5 saved (center
    # joins the div chain too).
    gamma, beta = rng.standard_normal(C), rng.standard_normal(C)
    g32, be32 = gamma.astype(np.float32), beta.astype(np.float32)

    def tf_ln(x):
        d = x - x.mean(-1, keepdims=True)
        return [d / np.sqrt((d * d).mean(-1, keepdims=True) + np.float32(1e-6)) * g32 + be32]
    for name, second, fused in (("tf_layernorm", ["x", "mu"], 3), ("tf_sqdiff", ["mu", "x"], 5)):
        case(name, [N("ReduceMean", ["x"], ["mu"], axes=[-1], name="mean"),
                    N("Sub", ["x", "mu"], ["d1"], name="center"),
                    N("Sub", second, ["d2"], name="center_1"),
                    N("Mul", ["d2", "d2"], ["sq"], name="square"),
                    N("ReduceMean", ["sq"], ["var"], axes=[-1], name="variance"),
                    N("Add", ["var", "eps"], ["ve"], name="add_eps"),
                    N("Sqrt", ["ve"], ["sd"], name="sqrt"),
                    N("Div", ["d1", "sd"], ["nrm"], name="div"),
                    N("Mul", ["nrm", "gamma"], ["sc"], name="mul_gamma"),
                    N("Add", ["sc", "beta"], ["y"], name="add_beta")],
             [C], [("y", [C], F)], [c("eps", 1e-6), c("gamma", gamma), c("beta", beta)], tf_ln,
             fused, smaller=None)
    # A broadcast constant read by two nodes of the chain and an inner
    # value squared: (x + b)^2 + b.
    case("bcast_repeat", [N("Add", ["x", "b"], ["a"], name="add"), N("Mul", ["a", "a"], ["s"], name="sq"),
                          N("Add", ["s", "b"], ["y"], name="add_b")],
         [4, C], [("y", [4, C], F)], [c("b", bias)],
         lambda x: [(x + b32) ** 2 + b32], 2)
    # float16 and int32 chains are left alone.
    case("float16", [N("Add", ["x", "b"], ["a"], name="add"), N("Relu", ["a"], ["y"], name="relu")],
         [C], [("y", [C], H)], [c("b", bias, np.float16)],
         lambda x: [np.maximum(x + bias.astype(np.float16), 0)], 0, smaller=False, x_dt=H)
    case("int32", [N("Add", ["x", "b"], ["a"], name="add"), N("Mul", ["a", "b"], ["y"], name="mul")],
         [8], [("y", [8], I32)], [c("b", np.arange(8), np.int32)],
         lambda x: [(x + np.arange(8)) * np.arange(8)], 0, smaller=False, x_dt=I32)
    # 64+ nodes with code: shared node functions, 40 chains among them
    # (each written over its Softmax's buffer in place, so no arena saved).
    nodes, prev = [], "x"
    for i in range(40):
        nodes += [N("Softmax", [prev], ["s%d" % i], axis=-1, name="softmax%d" % i),
                  N("Mul", ["s%d" % i, "g"], ["m%d" % i], name="mul%d" % i),
                  N("Sub", ["m%d" % i, "g"], ["y" if i == 39 else "r%d" % i], name="sub%d" % i)]
        prev = "r%d" % i

    def deep(x):
        for _ in range(40):
            e = np.exp(x - x.max(-1, keepdims=True))
            x = (e / e.sum(-1, keepdims=True)) * 2 - 2
        return [x]
    shared = case("shared", nodes, [16], [("y", [16], F)], [c("g", 2.0)], deep, 40, smaller=None)
    if shared:
        report("b1_steps[]" in shared["src"] and " with node 1 \"mul0\" (Mul) */" in shared["src"],
               "shared: steps tables name every node of a chain")
    # The C: warning-free with both compilers, and deterministic.
    for cc in ("gcc", "clang"):
        if not shutil.which(cc):
            continue
        bad = []
        for name in sorted(os.listdir(OUT)):
            d = os.path.join(OUT, name)
            r = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "-I", d, "-I",
                     os.path.join(SRC, "include"), os.path.join(d, "t.c"), "-o", os.devnull])
            if r.returncode:
                bad.append("%s: %s" % (name, r.stderr.strip()))
        report(not bad, "every case's C: %s -Wall -Wextra -Werror %s" % (cc, "; ".join(bad)))
    d = os.path.join(OUT, "gelu_tanh")
    again = os.path.join(OUT, "again")
    r = run([KILN, "compile", os.path.join(d, "model.onnx"), "--batch", "1,4", "--name", "t", "-o",
             again, "--no-cc"])
    with open(os.path.join(d, "t.c")) as f1, open(os.path.join(again, "t.c")) as f2:
        report(r.returncode == 0 and f1.read() == f2.read(), "gelu_tanh: the same C when compiled again")
    print("ewchain: %d failed" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
