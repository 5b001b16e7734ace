#!/usr/bin/python3
"""Fused attention (passes/attention.c, runtime/kernels/f32-attention/).

Each case is a small transformer block exported by PyTorch (torch.onnx.export),
run by PyTorch for the reference outputs and written as an ONNX backend-test
folder, which `kiln verify` compiles, runs and compares (rtol 1e-3, atol 1e-5)
under every kernel variant the machine has (KILN_ISA=ref, avx2, avx512: a
variant the CPU lacks runs the best one it has). `kiln compile` then says
whether the pattern was fused: the generated C calls kiln_f32_attention as
many times as the case expects (0 for the variants that must fall back to
MatMul and Softmax), and `kiln info --plan` lists the kernel's scratch; and
the residual sum of passes/addnorm.c once per post-LN block.

usage: run.py KILN OUTDIR
"""
import io
import math
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

ISAS = ("ref", "avx2", "avx512")


class Mha(nn.Module):
    """PyTorch-style multi-head attention: Linear Q/K/V, Reshape, Transpose,
    MatMul with K transposed, scale (Div or Mul), an optional additive mask,
    Softmax, MatMul, Transpose back, Linear, residual and LayerNorm."""

    def __init__(self, d=32, h=4, seq=10, mask=None, div=False, mask_first=False):
        super().__init__()
        self.d, self.h, self.dh, self.seq, self.div, self.mask_first = d, h, d // h, seq, div, mask_first
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln = nn.LayerNorm(d)
        self.register_buffer("mask", mask)

    def forward(self, x):
        n = x.shape[0]
        sp = lambda t: t.reshape(n, self.seq, self.h, self.dh).transpose(1, 2)
        q, k, v = sp(self.q(x)), sp(self.k(x)), sp(self.v(x))
        s = torch.matmul(q, k.transpose(-1, -2))
        if self.mask_first and self.mask is not None:
            s = s + self.mask
        s = s / math.sqrt(self.dh) if self.div else s * (1.0 / math.sqrt(self.dh))
        if not self.mask_first and self.mask is not None:
            s = s + self.mask
        c = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(n, self.seq, self.d)
        return self.ln(x + self.o(c))


class PaddingMask(nn.Module):
    """A per-sample padding mask from a second input: [N, S] -> [N, 1, 1, S]."""

    def __init__(self):
        super().__init__()
        self.mha = Mha(d=24, h=3, seq=7)

    def forward(self, x, pad):
        m = self.mha
        n = x.shape[0]
        sp = lambda t: t.reshape(n, m.seq, m.h, m.dh).transpose(1, 2)
        q, k, v = sp(m.q(x)), sp(m.k(x)), sp(m.v(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(m.dh) + pad[:, None, None, :]
        c = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(n, m.seq, m.d)
        return m.o(c)


class EinsumAttn(nn.Module):
    """The Keras MultiHeadAttention equations (kiln lowers Einsum to MatMul)."""

    def __init__(self, d=32, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.wq, self.wk, self.wv = (nn.Parameter(torch.randn(d, h, d // h) * 0.2) for _ in range(3))
        self.wo = nn.Parameter(torch.randn(h, d // h, d) * 0.2)

    def forward(self, x):
        q = torch.einsum("abc,cde->abde", x, self.wq) * (1.0 / math.sqrt(self.dh))
        k = torch.einsum("abc,cde->abde", x, self.wk)
        v = torch.einsum("abc,cde->abde", x, self.wv)
        p = torch.softmax(torch.einsum("aecd,abcd->acbe", k, q), dim=-1)
        c = torch.einsum("acbe,aecd->abcd", p, v)
        return torch.einsum("abcd,cde->abe", c, self.wo)


class SingleHead(nn.Module):
    """3-D attention without a head split: the 3-D form (heads = 1)."""

    def __init__(self, d=16):
        super().__init__()
        self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))

    def forward(self, x):
        s = torch.matmul(self.q(x), self.k(x).transpose(1, 2)) * 0.25
        return torch.matmul(torch.softmax(s, dim=-1), self.v(x))


class SeqFirst(nn.Module):
    """nn.MultiheadAttention sequence-first, as Particle Transformer calls it
    (issue 29): [S, N, E], heads merged with the batch ([S, N*H, E/H]), Q
    scaled before the product, a boolean key padding mask [N, S] (True:
    padded, as ParT's) and an additive attn_mask, merged into one additive
    [N*H, S, S] mask added by baddbmm before the Softmax."""

    def __init__(self, d=32, h=4, seq=9, mask=None):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, h)
        self.mask = mask

    def forward(self, x, pad):
        t = x.transpose(0, 1)
        y = self.mha(t, t, t, key_padding_mask=pad, attn_mask=self.mask, need_weights=False)[0]
        return y.transpose(0, 1)


class ExposedScores(nn.Module):
    """The attention probabilities are a second output: must fall back."""

    def __init__(self):
        super().__init__()
        self.mha = Mha(d=16, h=2, seq=6)

    def forward(self, x):
        m = self.mha
        n = x.shape[0]
        sp = lambda t: t.reshape(n, m.seq, m.h, m.dh).transpose(1, 2)
        q, k, v = sp(m.q(x)), sp(m.k(x)), sp(m.v(x))
        p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.5, dim=-1)
        return torch.matmul(p, v), p


class PreLn(nn.Module):
    """The residual sum is read again after the LayerNorm (pre-LN blocks):
    the Add stays."""

    def __init__(self, d=16):
        super().__init__()
        self.lin, self.ln = nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        y = x + self.lin(x)
        return self.ln(y) + y


def causal(s):
    return torch.triu(torch.full((s, s), -1e4), diagonal=1)


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# name, module factory, inputs, calls of kiln_f32_attention and of
# LayerNorms with the residual Add fused (passes/addnorm.c)
CASES = [
    ("mha_mul", lambda: Mha(), {"x": randn(3, 10, 32)}, 1, 1),
    ("mha_div_causal", lambda: Mha(mask=causal(10), div=True), {"x": randn(2, 10, 32, seed=1)}, 1, 1),
    ("mha_long_rows", lambda: Mha(d=48, h=2, seq=37, mask=causal(37)), {"x": randn(2, 37, 48, seed=2)}, 1, 1),
    ("padding_mask", lambda: PaddingMask(),
     {"x": randn(2, 7, 24, seed=3), "pad": np.where(randn(2, 7, seed=4) > 0.5, -1e4, 0).astype(np.float32)}, 1, 0),
    ("einsum_keras", lambda: EinsumAttn(), {"x": randn(2, 9, 32, seed=5)}, 1, 0),
    ("mask_before_scale", lambda: Mha(mask=causal(10), mask_first=True), {"x": randn(2, 10, 32, seed=6)}, 0, 1),
    ("single_head", lambda: SingleHead(), {"x": randn(2, 5, 16, seed=7)}, 1, 0),
    ("seq_first_mha", lambda: SeqFirst(mask=causal(9)),
     {"x": randn(3, 9, 32, seed=11), "pad": np.arange(9) >= np.array([[9], [6], [2]])}, 1, 0),
    ("exposed_scores", lambda: ExposedScores(), {"x": randn(2, 6, 16, seed=8)}, 0, 0),
    ("pre_ln_residual", lambda: PreLn(), {"x": randn(2, 6, 16, seed=9)}, 0, 0),
    # 16 MiB of arena at batch 256: runs as 64 tiles of 4 samples (compiler/batchtile.c),
    # so kiln_f32_attention is called in the tile's code only
    ("tiled_batch", lambda: Mha(d=64, h=4, seq=64), {"x": randn(256, 64, 64, seed=10)}, 1, 1),
]
# cases whose compiled batch runs as tiles: the comment emit_c.c writes
TILED = {"tiled_batch": "Batch 256 as 64 tiles of 4 samples"}


def export(module, inputs):
    torch.manual_seed(0)
    module.eval()
    names = list(inputs)
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    with torch.no_grad():
        outs = module(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    onames = [f"y{i}" for i in range(len(outs))]
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, f, input_names=names, output_names=onames, opset_version=17,
                          dynamic_axes={n: {0: "N"} for n in names + onames})
    return onnx.load_from_string(f.getvalue()), [o.numpy() for o in outs]


def main():
    kiln, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    failures = 0
    for name, make, inputs, calls, ln_res in CASES:
        torch.manual_seed(0)
        model, outs = export(make(), inputs)
        d = os.path.join(outdir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(model, os.path.join(d, "model.onnx"))
        for i, (n, a) in enumerate(inputs.items()):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
        for i, a in enumerate(outs):
            with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, f"y{i}").SerializeToString())
        for isa in ISAS:
            r = subprocess.run([kiln, "verify", d], capture_output=True, text=True,
                               env=dict(os.environ, KILN_ISA=isa))
            if r.returncode != 0:
                print(f"FAIL {name} (KILN_ISA={isa}): kiln verify:\n{r.stdout}{r.stderr}")
                failures += 1
        batch = str(next(iter(inputs.values())).shape[0])
        out = os.path.join(d, "c")
        r = subprocess.run([kiln, "compile", os.path.join(d, "model.onnx"), "--batch", batch,
                            "--name", "m", "-o", out], capture_output=True, text=True)
        code = open(os.path.join(out, "m.c")).read() if r.returncode == 0 else ""
        got = (code.count("kiln_f32_attention("), code.count("kiln_f32_add_layernorm("))
        if r.returncode != 0 or got != (calls, ln_res):
            print(f"FAIL {name}: kiln_f32_attention and the fused residual LayerNorm appear {got} times, "
                  f"want {(calls, ln_res)}\n{r.stderr}")
            failures += 1
            continue
        if (name in TILED) != ("tiles of" in code) or (name in TILED and TILED[name] not in code):
            print(f"FAIL {name}: the batch {'does not run' if name in TILED else 'runs'} as tiles")
            failures += 1
            continue
        if calls:
            r = subprocess.run([kiln, "info", os.path.join(d, "model.onnx"), "--batch", batch,
                                "--plan"], capture_output=True, text=True)
            if "scratch" not in r.stdout:
                print(f"FAIL {name}: kiln info --plan shows no scratch:\n{r.stdout}")
                failures += 1
                continue
        print(f"PASS {name}: matches PyTorch under {', '.join(ISAS)}; "
              f"{'fused' if calls else 'not fused (falls back)'}"
              f"{'; residual Add in the LayerNorm' if ln_res else ''}"
              f"{'; batch ' + batch + ' in tiles' if name in TILED else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
