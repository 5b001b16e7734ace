#!/usr/bin/python3
"""The same bits everywhere (issue 30), measured: for each model, one
compiled object run under every instruction set this machine has
(KILN_ISA=ref, avx2, avx512) and, under each, at several batch sizes.

For each model: `kiln compile --batch 1,16,64`, linked with stitch_rows.c
(tests/realmodels), on ROWS = 64 distinct random samples: kiln_run at n = 64
(the compiled size 64), at n = 57 (stitched from compiled sizes) and on every
sample alone (n = 1). The checks, per model:
  isa:ref=avx2, isa:ref=avx512,  every output byte of all those runs (FNV-1a
  isa:avx2=avx512                64 hash) is the same under the two ISAs;
  isa64:ref=avx2, ...            the same for the n = 64 run alone (the tiled
                                 GEMM path, no batch-1 product);
  batch:<isa>                    row r of the n = 64 run == sample r at n = 1;
  stitch:<isa>                   row r of the n = 57 run == sample r at n = 1;
  fpenv:<best isa>               all those runs give the same bytes when the
                                 caller's floating-point environment is
                                 hostile (round upward, flush-to-zero, traps:
                                 STITCH_FPENV=1, tests/realmodels/stitch_rows.c)
                                 and kiln_run hands it back unchanged.
It prints the matrix (one line per model, = / x per check, the hashes), then
asserts equality for every check that is not listed in KNOWN below (the
differences kiln does not remove yet, each with its reason; the same list is
in docs/reproducibility.md). A check in KNOWN that now holds is reported
("now holds: remove it from KNOWN") but does not fail.

The models: an elementwise model of the math functions the generated C and
the vector kernels compute (exp, log, log1p, pow, tanh, sigmoid, erf, sin,
cos, softplus), a transformer encoder block (MatMul, Softmax, LayerNorm, erf
GELU), Softmax/LayerNorm/ReduceMean/GlobalAveragePool alone (reduce_norm),
2-D and 1-D convolutions (conv), 1-D Winograd F(4, 3) convolutions (wino1d), LSTMs of 16 to 264 units in every step
form (lstm), products of two activations (matmul_act), a tied embedding's
output projection (tied_head: AVX-512's swapped GEMM path at n = 16), and,
when python3-torch is there, bench/test_models.py's DeepJet-,
ParticleNet- and MLP-style exports (tests/realmodels patterns). --models DIR
adds every DIR/*.onnx (e.g. bench's deepjet_like, particlenet_like,
transformer_enc: `BENCH_MODELS_DIR=DIR bench/make_models.py`); --only NAME,...
restricts the set; --report only prints the matrix (never fails).

usage: bits.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [--models DIR] [--only A,B] [--report]
(env CC, SANFLAGS)
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 64
SIZES = "1,16,64"
NS = (64, 57)
ISAS = ("ref", "avx2", "avx512")

# (model, check) -> why the bits differ today (docs/reproducibility.md, "What
# is not guaranteed yet"). Everything else must hold.
# Every model here and the bench workloads measured give the same bits in
# every check now; a difference still known would be listed here as
# KNOWN[(model, check)] = "why" (docs/reproducibility.md).
KNOWN = {}


# libm's functions whose results are not exact (sqrt, fabs, floor, fma, ...
# are, so they give the same bits everywhere), float and double
LIBM_INEXACT = {f + suffix for f in (
    "exp", "exp2", "expm1", "exp10", "log", "log2", "log10", "log1p", "pow", "sin", "cos", "tan",
    "sincos", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "erf", "erfc", "cbrt", "hypot", "lgamma", "tgamma") for suffix in ("", "f")}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def machine_isas():
    """The ISAs this CPU runs (KILN_ISA asks for one; isa.c falls back to a
    lower one when the CPU lacks it, which would compare a variant with itself)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    have = ["ref"]
    if {"avx2", "fma"} <= flags:
        have.append("avx2")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        have.append("avx512")
    return have


# ---- the models ----

def _w(r, *shape, scale=None):
    a = r.standard_normal(shape).astype(np.float32)
    return a * np.float32(scale if scale is not None else 1.0 / np.sqrt(shape[0]))


def math_model():
    """x [N, 48] -> Gemm -> h; each function of h (or of a safe argument),
    concatenated: the generated C's libm calls and the vector kernels'."""
    r = np.random.default_rng(30)
    D = 48
    inits = [numpy_helper.from_array(_w(r, D, D), "W"),
             numpy_helper.from_array(_w(r, D, scale=0.1), "b"),
             numpy_helper.from_array(np.array(1.7, np.float32), "p"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["h"]),
             helper.make_node("Abs", ["h"], ["ha"]),
             helper.make_node("Add", ["ha", "one"], ["h1"])]
    outs = []
    for op, arg in (("Exp", "h"), ("Tanh", "h"), ("Sigmoid", "h"), ("Erf", "h"), ("Log", "h1"),
                    ("Softplus", "h"), ("Sin", "h"), ("Cos", "h"), ("Elu", "h"), ("Selu", "h")):
        nodes.append(helper.make_node(op, [arg], ["f_" + op]))
        outs.append("f_" + op)
    nodes.append(helper.make_node("Pow", ["h1", "p"], ["f_Pow"]))
    outs.append("f_Pow")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    g = helper.make_graph(nodes, "math", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", len(outs) * D])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def libm_model():
    """x [N, 48] -> Gemm -> h; the functions that were libm's before issue 30's
    last part: Asin, Acos, Atanh of tanh(h), Atan, Sinh, Cosh, Asinh of h,
    Acosh of |h| + 1, LogSoftmax of h (contiguous, f32-vmath) and of h as
    [N, 6, 8] over the 6 (strided), and Exp, Log, Tanh, Sigmoid and
    ReduceLogSumExp on double (h cast), cast back to float."""
    r = np.random.default_rng(31)
    D = 48
    inits = [numpy_helper.from_array(_w(r, D, D, scale=0.3), "W"),
             numpy_helper.from_array(_w(r, D, scale=0.1), "b"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(1.0, np.float64), "oned"),
             numpy_helper.from_array(np.array([-1, 6, 8], np.int64), "s3"),
             numpy_helper.from_array(np.array([-1, D], np.int64), "s2")]
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["h"]),
             helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Abs", ["h"], ["ha"]),
             helper.make_node("Add", ["ha", "one"], ["h1"])]
    outs = []
    for op, arg in (("Asin", "t"), ("Acos", "t"), ("Atanh", "t"), ("Atan", "h"), ("Sinh", "h"),
                    ("Cosh", "h"), ("Asinh", "h"), ("Acosh", "h1")):
        nodes.append(helper.make_node(op, [arg], ["f_" + op]))
        outs.append("f_" + op)
    nodes.append(helper.make_node("LogSoftmax", ["h"], ["f_LogSoftmax"], axis=1))
    nodes += [helper.make_node("Reshape", ["h", "s3"], ["h3"]),
              helper.make_node("LogSoftmax", ["h3"], ["ls3"], axis=1),
              helper.make_node("Reshape", ["ls3", "s2"], ["f_LogSoftmax3"])]
    outs += ["f_LogSoftmax", "f_LogSoftmax3"]
    nodes += [helper.make_node("Cast", ["h"], ["hd"], to=TensorProto.DOUBLE),
              helper.make_node("Abs", ["hd"], ["hda"]),
              helper.make_node("Add", ["hda", "oned"], ["hd1"])]
    for op, arg in (("Exp", "hd"), ("Log", "hd1"), ("Tanh", "hd"), ("Sigmoid", "hd")):
        nodes += [helper.make_node(op, [arg], ["d_" + op]),
                  helper.make_node("Cast", ["d_" + op], ["f_d" + op], to=TensorProto.FLOAT)]
        outs.append("f_d" + op)
    nodes += [helper.make_node("ReduceLogSumExp", ["hd"], ["d_lse"], axes=[1], keepdims=1),
              helper.make_node("Cast", ["d_lse"], ["f_dlse"], to=TensorProto.FLOAT)]
    outs.append("f_dlse")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    g = helper.make_graph(nodes, "libm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", (len(outs) - 1) * D + 1])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def libm_double_model():
    """x [N, 48] -> Gemm -> h; what was still libm's before kiln's own double
    functions: on double tensors (h cast) Pow (a real and an integer
    exponent), Sin, Cos, Tan (of 40 h too: reduced by pi/2 several times),
    Erf, Asin, Acos, Atanh (of tanh), Atan, Sinh, Cosh, Asinh, Acosh;
    integer Pow (int64); and the kernels: LRN (beta 0.75 by square roots,
    0.6 by exp and log), LpPool p = 3, DFT
    (direct sums at 48 and the FFT at 32: their twiddles), MelWeightMatrix
    and the three window ops (broadcast onto each row), cast to float."""
    r = np.random.default_rng(33)
    D = 48
    consts = {"oned": (1.0, np.float64), "p17": (1.7, np.float64), "p3": (3.0, np.float64),
              "k40": (40.0, np.float64), "four": (4.0, np.float32), "zero": (0.0, np.float32),
              "i3": (3, np.int64), "n32": (32, np.int64), "n64": (64, np.int64),
              "nmel": (8, np.int64), "rate": (16000, np.int64), "lo_hz": (20.0, np.float32),
              "hi_hz": (7000.0, np.float32), "s3": ([-1, 6, 8], np.int64),
              "s4": ([-1, 6, 8, 1], np.int64), "sig": ([-1, D, 1], np.int64),
              "flat": ([-1], np.int64), "row": ([0, -1], np.int64)}
    inits = [numpy_helper.from_array(_w(r, D, D, scale=0.3), "W"),
             numpy_helper.from_array(_w(r, D, scale=0.1), "b")]
    inits += [numpy_helper.from_array(np.array(v, t), name) for name, (v, t) in consts.items()]
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["h"]),
             helper.make_node("Cast", ["h"], ["hd"], to=TensorProto.DOUBLE),
             helper.make_node("Tanh", ["hd"], ["td"]),
             helper.make_node("Abs", ["hd"], ["hda"]),
             helper.make_node("Add", ["hda", "oned"], ["hd1"]),
             helper.make_node("Mul", ["hd", "k40"], ["hd40"])]
    outs = []

    def out(name, src, to_float=True):
        nodes.append(helper.make_node("Cast", [src], [name], to=TensorProto.FLOAT) if to_float
                     else helper.make_node("Reshape", [src, "row"], [name]))
        outs.append(name)
    for op, args in (("Pow", ["hd1", "p17"]), ("Pow", ["hd", "p3"]), ("Sin", ["hd"]), ("Cos", ["hd"]),
                     ("Tan", ["hd"]), ("Sin", ["hd40"]), ("Cos", ["hd40"]), ("Tan", ["hd40"]),
                     ("Erf", ["hd"]), ("Asin", ["td"]), ("Acos", ["td"]), ("Atanh", ["td"]),
                     ("Atan", ["hd"]), ("Sinh", ["hd"]), ("Cosh", ["hd"]), ("Asinh", ["hd"]),
                     ("Acosh", ["hd1"])):
        name = "d%d_%s" % (len(outs), op)
        nodes.append(helper.make_node(op, args, [name]))
        out("f_" + name, name)
    nodes += [helper.make_node("Mul", ["h", "four"], ["h4"]),
              helper.make_node("Cast", ["h4"], ["hi"], to=TensorProto.INT64),
              helper.make_node("Pow", ["hi", "i3"], ["ipow"])]
    out("f_ipow", "ipow")
    nodes += [helper.make_node("Reshape", ["h", "s4"], ["h4d"]),
              helper.make_node("LRN", ["h4d"], ["lrn"], size=3, alpha=0.2, beta=0.75, bias=1.5),
              helper.make_node("LRN", ["h4d"], ["lrn6"], size=3, alpha=0.2, beta=0.6, bias=1.5),
              helper.make_node("Reshape", ["h", "s3"], ["h3"]),
              helper.make_node("LpPool", ["h3"], ["lp"], kernel_shape=[3], p=3),
              helper.make_node("Reshape", ["h", "sig"], ["hs"]),
              helper.make_node("DFT", ["hs"], ["dft48"], axis=1),
              helper.make_node("DFT", ["hs", "n32"], ["dft32"], axis=1),
              helper.make_node("MelWeightMatrix", ["nmel", "n64", "rate", "lo_hz", "hi_hz"], ["mel"]),
              helper.make_node("HannWindow", ["n32"], ["hann"]),
              helper.make_node("HammingWindow", ["n32"], ["hamming"], periodic=0),
              helper.make_node("BlackmanWindow", ["n32"], ["blackman"]),
              helper.make_node("Concat", ["hann", "hamming", "blackman"], ["win"], axis=0),
              helper.make_node("Reshape", ["mel", "flat"], ["melf"]),
              helper.make_node("Concat", ["win", "melf"], ["consts"], axis=0),
              helper.make_node("ReduceMax", ["h"], ["hm"], axes=[1], keepdims=1),
              helper.make_node("Mul", ["hm", "zero"], ["z"]),
              helper.make_node("Add", ["z", "consts"], ["f_consts"])]
    for name in ("lrn", "lrn6", "lp", "dft48", "dft32"):
        out("f_" + name, name, to_float=False)
    outs.append("f_consts")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    width = 17 * D + D + 2 * D + 6 * 6 + 2 * D + 2 * 32 + 3 * 32 + 33 * 8
    g = helper.make_graph(nodes, "libm_double",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def fold_model():
    """Exp, Tanh, Sigmoid, Log and Pow of a constant C [64] twice: folded by
    the compiler (of C itself) and computed at run time (of x * 0 + C, which
    no fold may take, x being an input): y = [folded..., run time...]."""
    r = np.random.default_rng(32)
    D = 64
    c = np.concatenate([r.standard_normal(D // 2) * 8, r.standard_normal(D // 2)]).astype(np.float32)
    inits = [numpy_helper.from_array(c, "C"), numpy_helper.from_array(np.abs(c) + 0.5, "P"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(1.7, np.float32), "e")]
    nodes = [helper.make_node("Mul", ["x", "zero"], ["x0"]),
             helper.make_node("Add", ["x0", "C"], ["rc"]), helper.make_node("Add", ["x0", "P"], ["rp"])]
    folded, live = [], []
    for op, arg in (("Exp", "C"), ("Tanh", "C"), ("Sigmoid", "C"), ("Log", "P"), ("Pow", "P")):
        for src, outs in ((arg, folded), ({"C": "rc", "P": "rp"}[arg], live)):
            name = "%s_%s" % (op, src)
            nodes.append(helper.make_node(op, [src] + (["e"] if op == "Pow" else []), [name]))
            outs.append(name)
    nodes += [helper.make_node("Expand", [f, "shape"], [f + "_b"]) for f in folded]
    nodes += [helper.make_node("Shape", ["x"], ["shape"])]
    nodes.append(helper.make_node("Concat", [f + "_b" for f in folded] + live, ["y"], axis=1))
    g = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2 * len(live) * D])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def check_fold(out):
    """The folded half of fold_model's output equals the run-time half, bit
    for bit (kiln compile folds with the runtime's functions, not libm)."""
    d = os.path.join(out, "fold")
    model = fold_model()
    exe = build("fold", model, d)
    _, singles, _ = outputs(exe, d, feed_of(model), "ref")
    y = np.frombuffer(singles[0][0], np.float32)
    half = len(y) // 2
    bad = int(np.count_nonzero(y[:half].view(np.uint32) != y[half:].view(np.uint32)))
    return bad, half


def own_models():
    """The models bits.py and aarch64.py build themselves (torch's aside)."""
    return {"pointwise": pointwise_model(), "math": math_model(), "libm": libm_model(),
            "libm_double": libm_double_model(),
            "transformer_block": transformer_model(), "reduce_norm": reduce_norm_model(),
            "conv": conv_model(), "conv_forms": conv_forms_model(), "lstm": lstm_model(),
            "matmul_act": matmul_act_model(), "wino1d": wino1d_model(),
            "tied_head": tied_head_model()}


def pointwise_model():
    """x [N, 64] -> each function of x itself (no sum before it): the vector
    kernels (kiln_f32_unary) and the generated C (kiln_expf, ...; libm for the
    rest), the same bits under every ISA."""
    D = 64
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    nodes = [helper.make_node("Abs", ["x"], ["xa"]), helper.make_node("Add", ["xa", "one"], ["x1"])]
    outs = []
    for op in ("Exp", "Tanh", "Sigmoid", "Erf", "Elu", "Selu", "Softplus", "Mish", "Celu"):
        nodes.append(helper.make_node(op, ["x"], ["f_" + op]))
        outs.append("f_" + op)
    nodes.append(helper.make_node("Mul", ["x", "f_Sigmoid"], ["f_Silu"]))
    nodes.append(helper.make_node("Log", ["x1"], ["f_Log"]))
    outs += ["f_Silu", "f_Log"]
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    g = helper.make_graph(nodes, "pointwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", len(outs) * D])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def transformer_model():
    """One post-LN encoder block, seq 16, d 32, one head: MatMul Q/K/V,
    Softmax of the scaled scores, residual, LayerNormalization, an erf-GELU
    feed-forward of 64, LayerNormalization, then the mean over the sequence
    and a Gemm to 4 with a Sigmoid."""
    r = np.random.default_rng(31)
    S, D, F = 16, 32, 64
    inits = []

    def w(name, *shape, scale=None):
        inits.append(numpy_helper.from_array(_w(r, *shape, scale=scale), name))
        return name

    def c(name, v):
        inits.append(numpy_helper.from_array(np.array(v, np.float32), name))
        return name

    n = []
    for q in ("q", "k", "v"):
        n.append(helper.make_node("MatMul", ["x", w("W" + q, D, D)], [q + "0"]))
        n.append(helper.make_node("Add", [q + "0", w("b" + q, D, scale=0.1)], [q]))
    n += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
          helper.make_node("MatMul", ["q", "kt"], ["s0"]),
          helper.make_node("Mul", ["s0", c("scale", 1.0 / np.sqrt(D))], ["s"]),
          helper.make_node("Softmax", ["s"], ["p"], axis=-1),
          helper.make_node("MatMul", ["p", "v"], ["a"]),
          helper.make_node("MatMul", ["a", w("Wo", D, D)], ["o"]),
          helper.make_node("Add", ["o", "x"], ["r1"]),
          helper.make_node("LayerNormalization", ["r1", c("g1", np.ones(D)), c("be1", np.zeros(D))],
                           ["n1"], axis=-1, epsilon=1e-5),
          helper.make_node("MatMul", ["n1", w("W1", D, F)], ["f0"]),
          helper.make_node("Add", ["f0", w("b1", F, scale=0.1)], ["f1"]),
          helper.make_node("Mul", ["f1", c("rs2", 1 / np.sqrt(2))], ["f2"]),
          helper.make_node("Erf", ["f2"], ["f3"]),
          helper.make_node("Add", ["f3", c("one", 1.0)], ["f4"]),
          helper.make_node("Mul", ["f1", "f4"], ["f5"]),
          helper.make_node("Mul", ["f5", c("half", 0.5)], ["f6"]),
          helper.make_node("MatMul", ["f6", w("W2", F, D)], ["f7"]),
          helper.make_node("Add", ["f7", "n1"], ["r2"]),
          helper.make_node("LayerNormalization", ["r2", c("g2", np.ones(D)), c("be2", np.zeros(D))],
                           ["n2"], axis=-1, epsilon=1e-5),
          helper.make_node("ReduceMean", ["n2"], ["m"], axes=[1], keepdims=0),
          helper.make_node("Gemm", ["m", w("Wh", D, 4), w("bh", 4, scale=0.1)], ["z"]),
          helper.make_node("Sigmoid", ["z"], ["y"])]
    g = helper.make_graph(n, "enc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", S, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def reduce_norm_model():
    """x [N, 6, 100] -> Gemm-free sums of every kind: Softmax over the
    contiguous last axis and over the strided middle one, LayerNormalization
    (100 = three steps of 32 and 4 more), ReduceMean and GlobalAveragePool
    over the last axis: each output sums in its kernel's fixed order."""
    r = np.random.default_rng(32)
    C, L = 6, 100
    inits = [numpy_helper.from_array(r.standard_normal(L).astype(np.float32), "g"),
             numpy_helper.from_array(r.standard_normal(L).astype(np.float32), "be")]
    n = [helper.make_node("Softmax", ["x"], ["s"], axis=-1),
         helper.make_node("Softmax", ["x"], ["s1"], axis=1),
         helper.make_node("LayerNormalization", ["x", "g", "be"], ["ln"], axis=-1, epsilon=1e-5),
         helper.make_node("ReduceMean", ["x"], ["m"], axes=[2], keepdims=0),
         helper.make_node("GlobalAveragePool", ["x"], ["gap"])]
    outs = [("s", [C, L]), ("s1", [C, L]), ("ln", [C, L]), ("m", [C]), ("gap", [C, 1])]
    g = helper.make_graph(n, "reduce_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, L])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, ["N"] + d) for o, d in outs],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_model():
    """x [N, 3, 16, 16] -> Conv 3x3 (8, pad 1) -> Relu -> Conv 3x3 (8) -> Relu
    -> GlobalAveragePool -> Flatten -> Gemm to 4, and a 1-D Conv (kernel 3)
    over x's rows: the convolution forms of each ISA."""
    r = np.random.default_rng(33)
    inits = [numpy_helper.from_array(_w(r, 8, 3, 3, 3, scale=0.3), "w1"),
             numpy_helper.from_array(_w(r, 8, scale=0.1), "b1"),
             numpy_helper.from_array(_w(r, 8, 8, 3, 3, scale=0.15), "w2"),
             numpy_helper.from_array(_w(r, 8, scale=0.1), "b2"),
             numpy_helper.from_array(_w(r, 8, 4), "wh"),
             numpy_helper.from_array(_w(r, 4, scale=0.1), "bh"),
             numpy_helper.from_array(np.array([0, 48, 16], np.int64), "shp"),
             numpy_helper.from_array(_w(r, 16, 48, 3, scale=0.1), "w3")]
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
         helper.make_node("Relu", ["c2"], ["r2"]),
         helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "wh", "bh"], ["y"]),
         helper.make_node("Reshape", ["x", "shp"], ["x1"]),
         helper.make_node("Conv", ["x1", "w3"], ["y1"], pads=[1, 1])]
    g = helper.make_graph(n, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
                           helper.make_tensor_value_info("y1", TensorProto.FLOAT, ["N", 16, 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def conv_forms_model():
    """The other convolution forms, side by side: x [N, 16, 10, 10] -> a
    depthwise 3x3 (group 16), a grouped 3x3 (group 4, stride 2), a 3x3 to 32
    channels (K = 144 >= 128 and 32 channels: AVX-512's row tile), a 5x5
    dilated one; and x's rows as a 1-D signal [N, 16, 100]: a 1-D Conv
    (kernel 5, dilation 2, group 2), a depthwise 1-D Conv, a pointwise 1x1
    Conv1d of 16 -> 24 over a short signal [N, 16, 20] (the small pointwise
    path), and one over the long one; and a 3x3 of 16 channels over a
    second input [N, 16, 14, 14] (49 2x2 tiles an image: Winograd F(2x2,
    3x3) by default, chosen by the shape; runtime/kernels/f32-winograd).
    Each output flattened, all concatenated (copies: no sum after them)."""
    r = np.random.default_rng(35)
    C = 16
    inits = [numpy_helper.from_array(np.array([0, C, 100], np.int64), "s1"),
             numpy_helper.from_array(np.array([0, C, 20], np.int64), "s2"),
             numpy_helper.from_array(np.array([0], np.int64), "z0"),
             numpy_helper.from_array(np.array([20], np.int64), "z20"),
             numpy_helper.from_array(np.array([2], np.int64), "ax2")]
    n, outs = [], []

    def conv(name, x, m, cg, k, out_rank, **attrs):
        ks = list(k)
        inits.append(numpy_helper.from_array(_w(r, m, cg, *ks, scale=1.0 / np.sqrt(cg * np.prod(ks))),
                                             "w_" + name))
        inits.append(numpy_helper.from_array(_w(r, m, scale=0.1), "b_" + name))
        n.append(helper.make_node("Conv", [x, "w_" + name, "b_" + name], [name], **attrs))
        outs.append((name, out_rank))

    conv("dw2", "x", C, 1, (3, 3), 4, group=C, pads=[1, 1, 1, 1])
    conv("grp2", "x", 8, 4, (3, 3), 4, group=4, strides=[2, 2], pads=[1, 1, 1, 1])
    conv("row2", "x", 32, C, (3, 3), 4, pads=[1, 1, 1, 1])
    conv("dil2", "x", 8, C, (5, 5), 4, dilations=[2, 2], pads=[4, 4, 4, 4])
    n.append(helper.make_node("Reshape", ["x", "s1"], ["x1"]))
    conv("grp1", "x1", 8, 8, (5,), 3, group=2, dilations=[2], pads=[4, 4])
    conv("dw1", "x1", C, 1, (3,), 3, group=C, pads=[1, 1])
    conv("pw1", "x1", 24, C, (1,), 3)
    n.append(helper.make_node("Slice", ["x1", "z0", "z20", "ax2"], ["x2"]))
    conv("pws", "x2", 24, C, (1,), 3)
    conv("w14", "xw", C, C, (3, 3), 4, pads=[1, 1, 1, 1])
    for o, _ in outs:
        n.append(helper.make_node("Flatten", [o], ["f_" + o], axis=1))
    n.append(helper.make_node("Concat", ["f_" + o for o, _ in outs], ["y"], axis=1))
    g = helper.make_graph(n, "conv_forms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, 10, 10]),
                                            helper.make_tensor_value_info("xw", TensorProto.FLOAT, ["N", C, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def wino1d_model():
    """The 1-D Winograd F(4, 3) path (runtime/kernels/f32-winograd1d), which
    the compiler takes for 3-tap, stride-1 convolutions of >= 16 channels by
    shape: x [N, 16, 37] -> a Conv1d to 24 (pads 1) with ReLU, a Conv1d of
    24 with the residual and ReLU, the result as images one pixel wide
    [N, 24, 37, 1] -> a (3, 1) Conv to 32 (a partial last tile of 4); a
    Conv1d with uneven pads (2, 0) and one unpadded with Tanh. Each output
    flattened, all concatenated."""
    r = np.random.default_rng(37)
    inits = [numpy_helper.from_array(np.array([3], np.int64), "ax3")]
    n, outs = [], []

    def conv(name, x, m, c, k, **attrs):
        inits.append(numpy_helper.from_array(_w(r, m, c, *k, scale=1.0 / np.sqrt(3 * c)), "w_" + name))
        inits.append(numpy_helper.from_array(_w(r, m, scale=0.1), "b_" + name))
        n.append(helper.make_node("Conv", [x, "w_" + name, "b_" + name], [name], **attrs))

    conv("c1", "x", 24, 16, (3,), pads=[1, 1])
    n.append(helper.make_node("Relu", ["c1"], ["r1"]))
    conv("c2", "r1", 24, 24, (3,), pads=[1, 1])
    n.append(helper.make_node("Add", ["c2", "r1"], ["a2"]))
    n.append(helper.make_node("Relu", ["a2"], ["r2"]))
    n.append(helper.make_node("Unsqueeze", ["r2", "ax3"], ["u2"]))
    conv("c3", "u2", 32, 24, (3, 1), pads=[1, 0, 1, 0])
    conv("c4", "x", 16, 16, (3,), pads=[2, 0])
    conv("c5", "x", 20, 16, (3,))
    n.append(helper.make_node("Tanh", ["c5"], ["t5"]))
    outs = ["r2", "c3", "c4", "t5"]
    for o in outs:
        n.append(helper.make_node("Flatten", [o], ["f_" + o], axis=1))
    n.append(helper.make_node("Concat", ["f_" + o for o in outs], ["y"], axis=1))
    g = helper.make_graph(n, "wino1d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 37])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def matmul_act_model():
    """Products of two activations (no weight, so nothing packed at compile
    time): x [N, 8, 40] -> x x^T (M = 8), x^T x (K = 8) and x[:, :2] x^T
    (M = 2), each the unpacked GEMM of kiln_f32_gemm on B packed on the fly."""
    inits = [numpy_helper.from_array(np.array([0], np.int64), "z0"),
             numpy_helper.from_array(np.array([2], np.int64), "z2"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1")]
    n = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["x", "xt"], ["a"]),
         helper.make_node("MatMul", ["xt", "x"], ["b"]),
         helper.make_node("Slice", ["x", "z0", "z2", "ax1"], ["x2"]),
         helper.make_node("MatMul", ["x2", "xt"], ["c"])]
    for o in ("a", "b", "c"):
        n.append(helper.make_node("Flatten", [o], ["f" + o], axis=1))
    n.append(helper.make_node("Concat", ["fa", "fb", "fc"], ["y"], axis=1))
    g = helper.make_graph(n, "matmul_act", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def tied_head_model():
    """A tied embedding's output projection (bench's tied_embed_lm, small):
    x [N, 8] -> token ids |x| * 400 (clipped to the vocabulary of 2000) ->
    Gather of the embedding E [2000, 320] -> a Tanh layer of 320 with a
    residual, the mean over the sequence, LayerNormalization -> MatMul by
    Transpose(E), and Gemm(h, E, bias, transB = 1, alpha 0.5) -> Sigmoid.
    E is read by the Gather too, so both products read it in place (B
    transposed: kiln_f32_gemm): at batch 16 AVX-512's swapped path (5 to 32
    rows), K = 320 > 256 (two K blocks), at 64 the tiles, at 1 the dot path."""
    r = np.random.default_rng(35)
    V, D, S = 2000, 320, 8
    inits = [numpy_helper.from_array(_w(r, V, D, scale=0.5), "E"),
             numpy_helper.from_array(_w(r, D, D), "W1"),
             numpy_helper.from_array(_w(r, D, scale=0.1), "b1"),
             numpy_helper.from_array(_w(r, V, scale=0.1), "bv"),
             numpy_helper.from_array(np.ones(D, np.float32), "g"),
             numpy_helper.from_array(np.zeros(D, np.float32), "be"),
             numpy_helper.from_array(np.array(400.0, np.float32), "k400"),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(V - 1, np.float32), "hi")]
    n = [helper.make_node("Abs", ["x"], ["xa"]),
         helper.make_node("Mul", ["xa", "k400"], ["xs"]),
         helper.make_node("Clip", ["xs", "lo", "hi"], ["xc"]),
         helper.make_node("Cast", ["xc"], ["ids"], to=TensorProto.INT64),
         helper.make_node("Gather", ["E", "ids"], ["emb"]),
         helper.make_node("MatMul", ["emb", "W1"], ["h0"]),
         helper.make_node("Add", ["h0", "b1"], ["h1"]),
         helper.make_node("Tanh", ["h1"], ["h2"]),
         helper.make_node("Add", ["h2", "emb"], ["h3"]),
         helper.make_node("ReduceMean", ["h3"], ["hm"], axes=[1], keepdims=0),
         helper.make_node("LayerNormalization", ["hm", "g", "be"], ["h"], axis=-1, epsilon=1e-5),
         helper.make_node("Transpose", ["E"], ["Et"], perm=[1, 0]),
         helper.make_node("MatMul", ["h", "Et"], ["logits"]),
         helper.make_node("Gemm", ["h", "E", "bv"], ["z"], transB=1, alpha=0.5),
         helper.make_node("Sigmoid", ["z"], ["p"]),
         helper.make_node("Concat", ["logits", "p"], ["y"], axis=1)]
    g = helper.make_graph(n, "tied_head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", S])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2 * V])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def lstm_model():
    """x [N, 6, 8] -> ONNX LSTMs of 16, 20, 36, 44, 50, 150 and 264 units side
    by side, each to its last h: every form of the LSTM step (batch 1: block
    by block with the narrow block fused (20, 150) or without one (16), all
    4H columns at once (36, 50), one product then the cells (44); batch N:
    tiles of rows and the GEMM; 264 > 256: two K blocks), a bidirectional one
    (36, reverse steps), peepholes (20) and a clip (50); half of them
    batch-first (layout 1), half through Transposes (layout 0)."""
    r = np.random.default_rng(34)
    T, I = 6, 8
    inits, n, outs = [], [], []
    n.append(helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]))
    for k, (H, dirs, peep, clip, layout) in enumerate(((16, 1, False, None, 1), (20, 1, True, None, 0),
                                                       (36, 2, False, None, 1), (44, 1, False, None, 0),
                                                       (50, 1, False, 3.0, 1), (150, 1, False, None, 0),
                                                       (264, 1, False, None, 1))):
        D = dirs
        names = ["W%d" % k, "R%d" % k, "B%d" % k]
        inits += [numpy_helper.from_array(_w(r, D, 4 * H, I, scale=0.4), names[0]),
                  numpy_helper.from_array(_w(r, D, 4 * H, H, scale=1.2 / np.sqrt(H)), names[1]),
                  numpy_helper.from_array(_w(r, D, 8 * H, scale=0.1), names[2])]
        ins = ["x" if layout else "xt"] + names
        if peep:
            inits.append(numpy_helper.from_array(_w(r, D, 3 * H, scale=0.3), "P%d" % k))
            ins += ["", "", "", "P%d" % k]
        attrs = dict(hidden_size=H, direction="bidirectional" if D == 2 else "forward")
        if clip:
            attrs["clip"] = clip
        if layout:
            attrs["layout"] = 1
        n.append(helper.make_node("LSTM", ins, ["Y%d" % k, "h%d" % k], **attrs))
        if layout:  # h [N, D, H]
            n.append(helper.make_node("Flatten", ["h%d" % k], ["f%d" % k], axis=1))
        else:       # h [D, N, H]
            n.append(helper.make_node("Transpose", ["h%d" % k], ["ht%d" % k], perm=[1, 0, 2]))
            n.append(helper.make_node("Flatten", ["ht%d" % k], ["f%d" % k], axis=1))
        outs.append(("f%d" % k, D * H))
    n.append(helper.make_node("Concat", [o for o, _ in outs], ["y"], axis=1))
    g = helper.make_graph(n, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", T, I])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                         ["N", sum(d for _, d in outs)])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])


def torch_models():
    """bench/test_models.py's exports (tests/realmodels patterns), if torch is there."""
    try:
        import torch
    except ImportError:
        print("bits: python3-torch missing: the DeepJet-, ParticleNet- and MLP-style exports are left out")
        return {}
    sys.path.insert(0, os.path.join(SRC, "bench"))
    sys.path.insert(0, os.path.join(SRC, "tests", "realmodels"))
    import test_models
    out = {}
    for name in ("deepjet_test", "particlenet_test", "mlp_bn_test"):
        torch.manual_seed(0)
        out[name] = test_models.MAKERS[name]()
    return out


# ---- running ----

def fnv(data):
    h = 0xcbf29ce484222325
    a = np.frombuffer(data, np.uint8)
    # FNV-1a 64 over 8-byte words (faster in Python than per byte, same idea)
    for word in np.frombuffer(data[:len(data) // 8 * 8], "<u8").tolist():
        h = ((h ^ word) * 0x100000001b3) & 0xffffffffffffffff
    for b in a[len(data) // 8 * 8:].tolist():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


# a dynamic non-batch dimension (a sequence length) is fixed at this size,
# at compile time (`--shape`) and in the inputs
SEQ = 32


def input_dims(model):
    """[(name, elem_type, dims)] of the graph inputs, dims without the batch
    axis and with every dynamic dimension fixed at SEQ."""
    inits = {i.name for i in model.graph.initializer}
    res = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else SEQ for d in t.shape.dim[1:]]
        res.append((vi.name, t.elem_type, dims))
    return res


def index_bound(model, name):
    """Rows of the smallest constant table an integer input indexes by Gather
    (a token id's vocabulary), so random ids stay in range; 2 otherwise."""
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    bound = None
    for n in model.graph.node:
        if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == name and n.input[0] in inits:
            axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
            dims = inits[n.input[0]]
            rows = dims[axis % len(dims)] if dims else 1
            bound = rows if bound is None else min(bound, rows)
    return bound or 2


def feed_of(model):
    r = np.random.default_rng(7)
    feed = []
    for name, elem, dims in input_dims(model):
        if elem == TensorProto.FLOAT:
            feed.append(r.standard_normal([ROWS] + dims).astype(np.float32))
        elif elem in (TensorProto.INT64, TensorProto.INT32):
            dt = np.int64 if elem == TensorProto.INT64 else np.int32
            feed.append(r.integers(0, index_bound(model, name), [ROWS] + dims).astype(dt))
        else:
            raise RuntimeError("input %s: not float32, int32 or int64" % name)
    return feed


def shape_flags(model):
    """`--shape NAME=N,...` for each input with a dynamic non-batch dimension"""
    flags = []
    for vi, (name, _, dims) in zip([v for v in model.graph.input
                                    if v.name not in {i.name for i in model.graph.initializer}],
                                   input_dims(model)):
        if any(not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim[1:]):
            flags += ["--shape", "%s=%s" % (name, ",".join(["N"] + [str(d) for d in dims]))]
    return flags


def build(name, model, d):
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    r = run([KILN, "compile", path, "--batch", SIZES, "--name", "t", "-o", d] + shape_flags(model))
    if r.returncode:
        raise RuntimeError("kiln compile: " + r.stderr.strip())
    exe = os.path.join(d, "stitch_rows")
    r = run(CC + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(SRC, "include"), "-DMODEL=t_model",
                  "-include", os.path.join(d, "t.h"),
                  os.path.join(SRC, "tests", "realmodels", "stitch_rows.c"), os.path.join(d, "t.o"),
                  LIBKILN, "-lm"] + SAN + ["-o", exe])
    if r.returncode:
        raise RuntimeError("cc: " + r.stderr.strip())
    return exe


def outputs(exe, d, feed, isa, fpenv=False):
    """{n: [output o's bytes of the n-row run]} and the single rows [o][r];
    fpenv: every call in stitch_rows.c's hostile floating-point environment."""
    ins = []
    for i, a in enumerate(feed):
        ins.append(os.path.join(d, "in%d.bin" % i))
        a.tofile(ins[-1])
    nout = len(onnx.load(os.path.join(d, "model.onnx"), load_external_data=False).graph.output)
    outs = [os.path.join(d, "out_%s%s_%d.bin" % (isa, "_fe" * fpenv, o)) for o in range(nout)]
    env = dict(os.environ, KILN_ISA=isa, STITCH_FPENV="1" if fpenv else "0")
    r = run([exe, str(ROWS)] + ins + outs + [str(n) for n in NS], env=env)
    if r.returncode:
        raise RuntimeError("stitch_rows under KILN_ISA=%s%s: %s" % (
            isa, " STITCH_FPENV=1" * fpenv, r.stderr.strip() or "exit %d" % r.returncode))
    runs, singles, whole = {}, [], b""
    # an output without a batch axis ("output O whole") is written whole by
    # every run: each n-row run's and each sample's is that whole, and
    # rows_equal compares the whole
    kinds = [ln.split()[2] for ln in r.stdout.splitlines() if ln.startswith("output ")]
    total = sum(NS) + ROWS
    for o, f in enumerate(outs):
        data = open(f, "rb").read()
        whole += data
        if o < len(kinds) and kinds[o] == "whole":
            row = len(data) // (len(NS) + ROWS)
            per = {n: data[i * row:(i + 1) * row] for i, n in enumerate(NS)}
            runs[f] = per
            at = len(NS) * row
            singles.append([data[at + k * row:at + (k + 1) * row] for k in range(ROWS)])
            continue
        row = len(data) // total
        at, per = 0, {}
        for n in NS:
            per[n] = data[at:at + n * row]
            at += n * row
        runs[f] = per
        singles.append([data[at + k * row:at + (k + 1) * row] for k in range(ROWS)])
    byn = {n: [runs[f][n] for f in outs] for n in NS}
    return byn, singles, fnv(whole)


def rows_equal(byn, singles, n):
    """Row r of the n-row run equals sample r's own run, for every output."""
    bad = 0
    for o, single in enumerate(singles):
        row = len(single[0])
        data = byn[n][o]
        if len(data) == row and n > 1:  # no batch axis: the whole, each time
            bad += sum(s != data for s in single[:n])
            continue
        for k in range(n):
            if data[k * row:(k + 1) * row] != single[k]:
                bad += 1
    return bad


def dir_models(folder):
    """every folder/*.onnx but those starting with _ (bench's probes), by name"""
    return {f[:-5]: onnx.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))
            if f.endswith(".onnx") and not f.startswith("_")}


def main():
    global KILN, SRC, LIBKILN, CC, SAN
    args = sys.argv[1:]
    models_dir, only, report = None, None, False
    pos = []
    while args:
        a = args.pop(0)
        if a == "--models":
            models_dir = args.pop(0)
        elif a == "--only":
            only = set(args.pop(0).split(","))
        elif a == "--report":
            report = True
        else:
            pos.append(a)
    if len(pos) != 4:
        sys.exit(__doc__)
    KILN, SRC, LIBKILN, out = pos
    CC = os.environ.get("CC", "cc").split()
    SAN = os.environ.get("SANFLAGS", "").split()
    isas = machine_isas()
    print("bits: ISAs on this machine: %s" % ", ".join(isas))

    models = own_models()
    if only is None or only - set(models):
        models.update(torch_models())
    if models_dir:
        models.update(dir_models(models_dir))
    if only:
        models = {k: v for k, v in models.items() if k in only}

    checks = (["isa:ref=" + i for i in isas[1:]] + ["isa:avx2=avx512"] * ("avx512" in isas) +
              ["isa64:ref=" + i for i in isas[1:]] +
              ["batch:" + i for i in isas] + ["stitch:" + i for i in isas] +
              ["fpenv:" + isas[-1]])
    print("%-17s %s  hashes (%s)" % ("model", " ".join("%-13s" % c for c in checks), ", ".join(isas)))
    failures, now_holds = [], []
    for name, model in models.items():
        d = os.path.join(out, name)
        try:
            exe = build(name, model, d)
            feed = feed_of(model)
            res = {isa: outputs(exe, d, feed, isa) for isa in isas}
            hostile = outputs(exe, d, feed, isas[-1], fpenv=True)[2]
        except RuntimeError as e:
            failures.append("%s: %s" % (name, e))
            print("%-20s error: %s" % (name, e))
            continue
        verdict = {}
        for c in checks:
            kind, what = c.split(":")
            if kind == "isa":
                a, b = what.split("=")
                verdict[c] = res[a][2] == res[b][2]
            elif kind == "fpenv":
                verdict[c] = hostile == res[what][2]
            elif kind == "isa64":
                verdict[c] = res["ref"][0][64] == res[what.split("=")[1]][0][64]
            else:
                byn, singles, _ = res[what]
                verdict[c] = rows_equal(byn, singles, 64 if kind == "batch" else 57) == 0
        print("%-17s %s  %s" % (name, " ".join("%-13s" % ("=" if verdict[c] else "x") for c in checks),
                                " ".join(res[i][2] for i in isas)))
        for c in checks:
            known = KNOWN.get((name, c)) or KNOWN.get(("*", c))
            if not verdict[c] and not known:
                failures.append("%s: %s differs" % (name, c))
            elif verdict[c] and known:
                now_holds.append("%s: %s" % (name, c))
    # a value folded at compile time has the bits the runtime computes
    try:
        bad, n = check_fold(out)
        print("bits: folded Exp, Tanh, Sigmoid, Log, Pow: %d of %d values differ from run time" % (bad, n))
        if bad:
            failures.append("fold: %d of %d folded values differ from the runtime's" % (bad, n))
    except RuntimeError as e:
        failures.append("fold: %s" % e)
    # no libm function whose result is not exact in any model's object: the
    # generated C calls kiln's own (kernels.h), whatever libm the machine has
    nm = shutil.which("nm")
    for name in models:
        obj = os.path.join(out, name, "t.o")
        if not nm or not os.path.exists(obj):
            continue
        undef = set(run([nm, "-u", obj]).stdout.split()) - {"U"}
        libm = sorted(undef & LIBM_INEXACT)
        if libm:
            failures.append("%s: the compiled model calls libm's %s" % (name, ", ".join(libm)))
    if nm:
        print("bits: no compiled model calls libm's inexact functions")
    # nor does any kernel of the runtime: libkiln's objects reference none
    # (a kernel that called libm again would name it here)
    if nm and os.path.exists(LIBKILN):
        r = run([nm, "-u", LIBKILN])
        if r.returncode:
            failures.append("nm -u %s: %s" % (LIBKILN, r.stderr.strip()[:200]))
        libm = sorted(set(r.stdout.split()) & LIBM_INEXACT)
        if libm:
            failures.append("libkiln calls libm's %s" % ", ".join(libm))
        else:
            print("bits: libkiln calls none of libm's inexact functions")
    # the generated C refuses -ffast-math (its #error names the flag)
    first = next(iter(models), None)
    if first and os.path.exists(os.path.join(out, first, "t.c")):
        r = run(CC + ["-std=c11", "-ffast-math", "-fsyntax-only", "-I", os.path.join(SRC, "include"),
                      os.path.join(out, first, "t.c")])
        if r.returncode == 0 or "must not be built with -ffast-math" not in r.stderr:
            failures.append("-ffast-math: the generated C compiled, or without the #error: " +
                            r.stderr.strip()[:300])
        else:
            print("bits: the generated C refuses -ffast-math")
    for k, why in sorted(KNOWN.items()):
        if k[0] in models:
            print("known: %s %s: %s" % (k[0], k[1], why))
    for h in now_holds:
        print("now holds: %s (remove it from KNOWN)" % h)
    for f in failures:
        print("FAIL:", f)
    if report:
        return 0
    print("bits: %d models, %d failures" % (len(models), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
