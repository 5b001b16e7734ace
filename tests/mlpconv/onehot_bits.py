#!/usr/bin/python3
"""The onehot pass (compiler/passes/onehot.c, runtime/kernels/select.c) gives
the MatMul's bits on every input: infinities, NaNs and signed zeros too.

Models: bare MatMuls x [N, C, K] @ S [K, M] by a selection matrix S (K = 20:
a row in AVX-512 registers; K = 40: the AVX2 gather; K = 300: the GEMM's two
K blocks), each with row K - 1 selected by no column, and the interaction
network (tests/realmodels/interaction_model.py, opset 13: its Rr and Rs
products). The samples: finite values, then rows with -0.0 and +0.0, NaN at
a selected and at an unselected element, +Inf selected and -Inf not, +Inf
and -Inf both selected, NaN and Inf in one row, subnormals, NaNs with
payloads (negative, signaling).

Each model is compiled twice (`kiln compile --batch 1,8`, with and without
`--no-pass=onehot`), linked with tests/realmodels/stitch_rows.c and run under
every KILN_ISA this machine has (ref, avx2, avx512) on the 8 samples at
n = 8 and one by one. Checks:
  - with the pass == without it, every output byte, under each ISA
    (NaN payloads included), but for NaNs whose bits the MatMul itself gives
    differently under two ISAs (two NaNs meeting where the GEMM adds its K
    blocks: K = 300 with NaN and -Inf in one row), where NaN is asked;
  - with the pass, the same bytes under every ISA;
  - the bare MatMuls against ONNX Runtime 1.30 on the original model: NaN
    exactly where ORT has NaN, every other element bit for bit (the sign of
    zero and of infinity included).
The interaction network's later layers (Relu of NaN) are not compared with
ORT here; tests/mlpconv/run.py compares its finite outputs.

usage: onehot_bits.py KILN SOURCE_ROOT LIBKILN_A OUTDIR   (env CC, SANFLAGS;
exits 77, "skipped", without ONNX Runtime)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "realmodels"))
sys.path.insert(0, os.path.join(HERE, "..", "repro"))
from run import ort_available, write_case  # noqa: E402
from bits import machine_isas  # noqa: E402

ROWS = 8


def select_model(c, k, m, seed):
    """x [N, c, k] @ S [k, m]; column j of S picks row src[j] < k - 1."""
    src = np.random.default_rng(seed).integers(0, k - 1, m)
    s = np.zeros((k, m), np.float32)
    s[src, np.arange(m)] = 1
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "s"], ["y"])], "select",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", c, m])],
        [numpy_helper.from_array(s, "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src


def interaction_model():
    import interaction_model as im
    model = im.export(opset=13)[0]
    # the selection matrices Rr, Rs: the constants with one 1 per column
    sels = []
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.ndim == 2 and a.dtype == np.float32 and set(np.unique(a)) <= {0.0, 1.0} and \
                (a.sum(axis=0) == 1).all():
            sels.append(a.argmax(axis=0))
    return model, sels[0]


def f32(bits):
    return np.array([bits], np.uint32).view(np.float32)[0]


def feed(shape, src):
    """ROWS samples [C, K]: sample 0 finite, the others with the special
    values placed at selected (src[0], src[1]) and unselected (K - 1)
    elements."""
    x = np.random.default_rng(5).standard_normal([ROWS] + list(shape)).astype(np.float32)
    k = shape[-1]
    a, b, u = int(src[0]), int(src[1]), k - 1
    if a == b:
        b = (a + 1) % (k - 1)
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    x[1, 0, ::3] = -0.0                           # signed zeros, selected or not
    x[1, 1, ::2] = 0.0
    x[1, 1, 1::2] = -0.0
    x[2, 0, a] = nan                              # NaN selected
    x[2, 1, u] = nan                              # NaN unselected
    x[3, 0, a], x[3, 0, u] = inf, -inf            # +Inf selected, -Inf not
    x[3, 1, a], x[3, 1, b] = inf, -inf            # both selected
    x[4, 0, a], x[4, 0, b] = nan, -inf            # NaN and Inf in one row
    x[4, 1, u] = -inf
    x[5, 0, :] = np.float32(1e-40)                # subnormals
    x[5, 1, ::2] = np.float32(-3e-42)
    x[6, 0, a] = f32(0x7fc12345)                  # a quiet NaN's payload
    x[6, 1, u] = f32(0xffc00007)                  # negative, unselected
    x[7, 0, a] = f32(0x7f800001)                  # signaling
    x[7, 1, b] = -0.0
    x[7, 1, u] = inf
    return x


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def build(kiln, src_root, libkiln, model, d, extra):
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    r = run([kiln, "compile", path, "--batch", "1,8", "--name", "t", "-o", d] + extra)
    if r.returncode:
        raise RuntimeError("kiln compile: " + r.stderr.strip())
    cc = os.environ.get("CC", "cc").split()
    san = os.environ.get("SANFLAGS", "").split()
    exe = os.path.join(d, "stitch_rows")
    r = run(cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(src_root, "include"),
                  "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                  os.path.join(src_root, "tests", "realmodels", "stitch_rows.c"),
                  os.path.join(d, "t.o"), libkiln, "-lm"] + san + ["-o", exe])
    if r.returncode:
        raise RuntimeError("cc: " + r.stderr.strip())
    return exe


def outputs(exe, d, x, isa, nout=1):
    """The n = 8 run's outputs, then each sample's own, as one float32 array
    per output (one array if nout is 1); x is an array or a list of them,
    the model's inputs."""
    xs = x if isinstance(x, list) else [x]
    xin = [os.path.join(d, "x%d.bin" % i) for i in range(len(xs))]
    out = [os.path.join(d, "y%d_%s.bin" % (o, isa)) for o in range(nout)]
    for a, f in zip(xs, xin):
        a.tofile(f)
    r = run([exe, str(ROWS)] + xin + out + [str(ROWS)], env=dict(os.environ, KILN_ISA=isa))
    if r.returncode:
        raise RuntimeError("stitch_rows under KILN_ISA=%s: %s" % (isa, r.stderr.strip()))
    ys = [np.fromfile(f, np.float32) for f in out]
    return ys[0] if nout == 1 else ys


def same_as_ort(got, ref):
    """NaN where ref has NaN, every other element bit for bit."""
    g, r = got.reshape(ref.shape), ref
    nan_ok = (np.isnan(g) == np.isnan(r)).all()
    keep = ~np.isnan(r)
    bits_ok = (g[keep].view(np.uint32) == r[keep].view(np.uint32)).all()
    return bool(nan_ok and bits_ok), int((np.isnan(g) != np.isnan(r)).sum()), \
        int((g[keep].view(np.uint32) != r[keep].view(np.uint32)).sum())


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    kiln, src_root, libkiln, outdir = sys.argv[1:]
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return 77
    os.makedirs(outdir, exist_ok=True)
    isas = machine_isas()
    # the last field: flags of both builds. The interaction network's
    # selections feed a 1x1 convolution, which mlpconv moves before them
    # (KilnSelectSum: other bits, by design): without mlpconv, so that the
    # builds differ by the onehot pass alone; with it, below
    models = [("select20", *select_model(3, 20, 50, 1), True, []),
              ("select40", *select_model(3, 40, 70, 2), True, []),
              ("select300", *select_model(2, 300, 40, 3), True, [])]
    try:
        import torch  # noqa: F401
        models.append(("interaction", *interaction_model(), False, ["--no-pass=mlpconv"]))
    except ImportError:
        print("note: no python3-torch, the interaction network is left out")
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(f"{'PASS' if ok else 'FAIL'} {what}")
        failures += not ok

    for name, model, src, vs_ort, flags in models:
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
        x = feed(shape, src)
        d = os.path.join(outdir, name)
        with_exe = build(kiln, src_root, libkiln, model, os.path.join(d, "with"), flags)
        info = run([kiln, "info", os.path.join(d, "with", "model.onnx"), "--passes",
                    "--batch", "8"]).stdout
        check(any(line.split()[:1] == ["onehot"] and line.split()[2] != "0"
                  for line in info.splitlines() if len(line.split()) > 2),
              f"{name}: the onehot pass rewrites the MatMul")
        without_exe = build(kiln, src_root, libkiln, model, os.path.join(d, "without"),
                            ["--no-pass=onehot"] + flags)
        got, matmul = {}, {}
        for isa in isas:
            got[isa] = outputs(with_exe, os.path.join(d, "with"), x, isa).view(np.uint32)
            matmul[isa] = outputs(without_exe, os.path.join(d, "without"), x, isa).view(np.uint32)
        # where the MatMul itself gives different NaN bits under two ISAs (two
        # NaNs meeting where K blocks are added: which one survives is the
        # variant's operand order), only NaN is asked of the pass there
        varies = np.zeros(matmul[isas[0]].shape, bool)
        for isa in isas[1:]:
            varies |= matmul[isa] != matmul[isas[0]]
        for isa in isas:
            a, b = got[isa], matmul[isa]
            both_nan = np.isnan(a.view(np.float32)) & np.isnan(b.view(np.float32))
            diff = int(((a != b) & ~(varies & both_nan)).sum())
            excused = int(((a != b) & varies & both_nan).sum())
            check(diff == 0, f"{name} KILN_ISA={isa}: onehot == MatMul bit for bit ({diff} of "
                             f"{a.size} words differ; {excused} NaNs whose bits the MatMul "
                             "itself gives differently under another ISA)")
        for isa in isas[1:]:
            diff = int((got[isa] != got[isas[0]]).sum())
            check(diff == 0, f"{name}: KILN_ISA={isa} == {isas[0]} ({diff} words differ)")
        if vs_ort:
            case = write_case(outdir, name + "_ort", model, {"x": x})
            ref = np.fromfile(os.path.join(case, "output_0.bin"), np.float32)
            ref = ref.reshape([ROWS] + shape[:-1] + [len(src)])
            y = got[isas[-1]].view(np.float32)
            ok, nan_bad, bits_bad = same_as_ort(y[:ref.size], ref)
            check(ok, f"{name}: n = {ROWS} against ONNX Runtime ({nan_bad} NaN positions, "
                      f"{bits_bad} other elements differ)")
            ok, nan_bad, bits_bad = same_as_ort(y[ref.size:], ref)
            check(ok, f"{name}: each sample alone against ONNX Runtime ({nan_bad} NaN "
                      f"positions, {bits_bad} other elements differ)")
    if any(m[0] == "interaction" for m in models):
        # the whole optimizer: the edge MLP's first convolution before the
        # selections (KilnSelectSum, kiln_f32_select_sum): its bits the same
        # under every ISA and at n = 8 as one sample at a time, special
        # values included
        name, model, src, _, _ = next(m for m in models if m[0] == "interaction")
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
        x = feed(shape, src)
        d = os.path.join(outdir, name, "selsum")
        exe = build(kiln, src_root, libkiln, model, d, [])
        c = open(os.path.join(d, "t.c")).read()
        check("kiln_f32_select_sum(" in c, f"{name}: the whole optimizer runs kiln_f32_select_sum")
        got = {isa: outputs(exe, d, x, isa).view(np.uint32) for isa in isas}
        for isa in isas[1:]:
            diff = int((got[isa] != got[isas[0]]).sum())
            check(diff == 0, f"{name} (select sum): KILN_ISA={isa} == {isas[0]} "
                             f"({diff} words differ)")
        for isa in isas:
            half = got[isa].size // 2
            diff = int((got[isa][:half] != got[isa][half:]).sum())
            check(diff == 0, f"{name} (select sum) KILN_ISA={isa}: n = {ROWS} == each sample "
                             f"alone ({diff} words differ)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
