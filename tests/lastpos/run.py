#!/usr/bin/python3
"""The last-position pass (compiler/passes/lastpos.c) on models exported by
PyTorch (Debian's python3-torch, torch.onnx.export), against ONNX Runtime.

Each case is bench/make_models.py's TiedLM (the tied_embed_lm workload:
pre-LN decoder blocks with causal attention), small, whose output reads one
position of the sequence axis (x[:, -1, :] as a Gather, x[:, -1:, :] as a
Slice, ...). ONNX Runtime 1.30 (node, onnxruntime-node) computes the
reference outputs, written as ONNX backend-test folders
(tests/realmodels/run.py's write_case) that `kiln verify` compiles with the
whole optimizer, runs and compares (rtol 1e-3, atol 1e-5), at batch 1 and 3
(the cases that must not move the pick: 3). `kiln info --passes` then says
whether the pass moved the pick (its "removed" count: the nodes that now
compute one position): the cases that must move it do, with the number of
nodes expected; where something between the pick and the block mixes
positions (Softmax over the sequence axis, a MatMul reading the positions as
columns, cumulative sums) or the picked tensor is read again, it stays where
it is; through self-attention it moves along the query side only. The moved
models must stay batch-independent (`kiln compile` says "any batch size").

usage: run.py KILN OUTDIR   (exits 77, "skipped", without ORT)
"""
import io
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "realmodels"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from run import ort_available, write_case  # noqa: E402
import make_models  # noqa: E402  (the benchmark workloads' modules)

import torch  # noqa: E402

SEQ, VOCAB, D = 8, 50, 16


class Lm(make_models.TiedLM):
    """bench/make_models.py's TiedLM (the tied_embed_lm workload), small;
    `head` says what reads the last block's output."""

    def __init__(self, head):
        super().__init__(vocab=VOCAB, d=D, layers=2, h=2, ff=32, max_len=SEQ)
        self.head = head
        make_models.randomize_norms(self)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(s))
        for b in self.blocks:
            x = b(x, self.causal[:s, :s])
        return self.head(self, x)


def last_gather(m, x):
    return torch.matmul(m.ln_f(x)[:, -1, :], m.tok.weight.t())


def last_slice(m, x):
    return torch.matmul(m.ln_f(x)[:, -1:, :], m.tok.weight.t())


def third_position(m, x):
    return torch.matmul(m.ln_f(x)[:, 2, :], m.tok.weight.t())


def per_position_scale(m, x):
    # A broadcast operand that varies along the sequence axis ([S, D]): sliced too.
    scale = torch.linspace(0.5, 1.5, SEQ * D).reshape(SEQ, D)
    return torch.relu(m.ln_f(x) * scale + 0.1)[:, -1, :]


def softmax_over_positions(m, x):
    return torch.softmax(m.ln_f(x), dim=1)[:, -1, :]


def positions_as_columns(m, x):
    h = m.ln_f(x)
    return torch.matmul(h.transpose(1, 2), h)[:, :, -1]


def cumulative(m, x):
    return torch.cumsum(m.ln_f(x), dim=1)[:, -1, :]


def attention_after(m, x):
    # Self-attention over the final positions: the pick moves through the
    # query side only (rows of the scores, their scale, Softmax over the
    # keys, rows of P . V); K and V read every position: the blocks stay whole.
    h = m.ln_f(x)
    p = torch.softmax(torch.matmul(h, h.transpose(1, 2)) * 0.25, dim=-1)
    return torch.matmul(p, h)[:, -1, :]


def read_again(m, x):
    h = m.ln_f(x)
    return h[:, -1, :], h


# name, head, opset, outputs, nodes the pass must replace (0: must not fire)
CASES = [
    # the last block from the residual stream and the query rows on: 9 + 9
    # (two exported LayerNorms), GELU 5, fc1/fc2/proj 2 each, 2 residual
    # Adds, the head merge (Reshape, Transpose), P . V, Softmax, mask Add,
    # scale Mul, Q . K^T, the query split (Transpose, Reshape)
    ("lm_gather", last_gather, 14, ("logits",), 40),
    ("lm_slice", last_slice, 14, ("logits",), 40),
    ("lm_opset17", last_gather, 17, ("logits",), 24),  # LayerNormalization: 1 node each
    ("lm_third", third_position, 14, ("logits",), 40),
    ("lm_varying_operand", per_position_scale, 14, ("y",), 43),  # + Mul, Add, Relu
    ("lm_attention_after", attention_after, 14, ("y",), 4),
    ("lm_softmax_positions", softmax_over_positions, 14, ("y",), 0),
    ("lm_positions_as_columns", positions_as_columns, 14, ("y",), 0),
    ("lm_cumsum", cumulative, 14, ("y",), 0),
    ("lm_read_again", read_again, 14, ("y", "h"), 0),
]


def export(head, opset, outputs):
    torch.manual_seed(0)
    module = Lm(head).eval()
    ids = torch.randint(0, VOCAB, (2, SEQ))
    f = io.BytesIO()
    dyn = {"ids": {0: "N", 1: "S"}}
    dyn.update({o: {0: "N"} for o in outputs})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (ids,), f, input_names=["ids"], output_names=list(outputs),
                          dynamic_axes=dyn, opset_version=opset)
    return onnx.load_from_string(f.getvalue())


def removed_by_pass(kiln, path):
    r = subprocess.run([kiln, "info", path, "--passes", "--batch", "1,3",
                        f"--shape=ids=N,{SEQ}"], capture_output=True, text=True)
    m = re.search(r"^\s*lastpos\s+(\d+)\s+(\d+)", r.stdout, re.M)
    return int(m.group(2)) if m and r.returncode == 0 else None


def main():
    kiln, outdir = sys.argv[1], sys.argv[2]
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return 77
    os.makedirs(outdir, exist_ok=True)
    failures, dirs = 0, []
    for name, head, opset, outputs, want in CASES:
        model = export(head, opset, outputs)
        for batch in ((1, 3) if want else (3,)):
            ids = np.random.default_rng(batch).integers(0, VOCAB, (batch, SEQ), dtype=np.int64)
            dirs.append(write_case(outdir, f"{name}_b{batch}", model, {"ids": ids}))
        path = os.path.join(outdir, name + ".onnx")
        onnx.save(model, path)
        got = removed_by_pass(kiln, path)
        ok = got == want
        print(f"{'PASS' if ok else 'FAIL'} {name}: lastpos replaced {got} nodes (want {want})")
        failures += not ok
        if want:
            r = subprocess.run([kiln, "compile", path, "--batch", "1,3", f"--shape=ids=N,{SEQ}",
                                "-o", path + "-out"], capture_output=True, text=True)
            ok = r.returncode == 0 and "(any batch size)" in r.stdout and not r.stderr.strip()
            print(f"{'PASS' if ok else 'FAIL'} {name}: "
                  f"{'batch-independent' if ok else (r.stderr.strip() or r.stdout.strip())}")
            failures += not ok
    r = subprocess.run([kiln, "verify"] + dirs, capture_output=True, text=True)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    failures += r.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
