#!/usr/bin/python3
"""The mlpconv pass (compiler/passes/mlpconv.c) on models exported by
PyTorch (Debian's python3-torch, torch.onnx.export), against ONNX Runtime.

Linear layers applied to the rows of a transposed [N, C, R] tensor (the
interaction network's edge and object MLPs, tests/realmodels/
interaction_model.py, and small variants written other ways: permute or
transpose, view or reshape with a shape computed from x.shape, Tanh /
LeakyRelu / Sigmoid / Elu, transposed back or not) must become 1x1 Convs on
the untransposed tensor; `kiln info --passes` says how many nodes the pass
removed (the Transpose, the Reshape, each Gemm and activation, and the
closing Reshape + Transpose when there is one), which must be the number
expected. Where the rewrite would not pay or is not exact (more outputs
than inputs with nothing transposing back, a value read twice, a Linear of
a 3-D tensor, the transpose over another axis) it must not happen (0).
A 1x1 Conv on the channel concatenation of column selections of one x
(the interaction network's Rr and Rs products, and 2 or 3 selections with
Relu, Tanh or no activation) must move before the selections (KilnSelectSum,
counted by mlpconv too), but not where the selections narrow x.
ONNX Runtime 1.30 (node, onnxruntime-node) computes the reference outputs,
written as ONNX backend-test folders (tests/realmodels/run.py's write_case)
that `kiln verify` compiles with the whole optimizer, runs and compares
(rtol 1e-3, atol 1e-5) at batch 1 and 3; each rewritten model must also
still compile as batch-independent ("any batch size").

The onehot pass (compiler/passes/onehot.c) on the same harness: the
interaction network's Rr and Rs products (30 and 40 particles: a row of
x in two registers or not) and a bare x @ S on a 3-D x must become KilnSelect
(`onehot` removes that many MatMuls); a matrix with a 2, with two ones in a
column, or with an empty column must stay a MatMul (0). A Gather with
negative indices checks the kernel's register path on its own, a Gather of
float16 pairs its path for 2-byte elements. tests/mlpconv/onehot_bits.py
checks the bits on infinities, NaNs and signed zeros.

usage: run.py KILN OUTDIR   (exits 77, "skipped", without ORT)
"""
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "realmodels"))
from run import ort_available, write_case  # noqa: E402
import interaction_model  # noqa: E402
import torch_util  # noqa: E402

import onnx  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

C, R = 12, 20


class RowMlp(nn.Module):
    """x [N, C, R] -> an MLP on each of the R columns, written as PyTorch
    users write it; `how` picks the spelling."""

    def __init__(self, how, widths=(16, 8), act=nn.ReLU):
        super().__init__()
        self.how = how
        layers, c = [], C
        for w in widths:
            layers += [nn.Linear(c, w), act()]
            c = w
        self.mlp = nn.Sequential(*layers)
        self.d = c

    def forward(self, x):
        n = x.shape[0]
        if self.how == "transpose_back":       # the edge MLP's form
            h = self.mlp(x.transpose(1, 2).contiguous().view(-1, C))
            return h.view(-1, R, self.d).transpose(1, 2).contiguous() * 2.0
        if self.how == "permute_reshape":      # shapes from x.shape, permute back
            h = self.mlp(x.permute(0, 2, 1).reshape(n * R, C))
            return h.reshape(n, R, self.d).permute(0, 2, 1) + 1.0
        if self.how == "rows_out":             # the object MLP's form: summed over R
            h = self.mlp(x.transpose(1, 2).reshape(-1, C))
            return h.view(-1, R, self.d).sum(dim=1)
        if self.how == "read_twice":           # the transposed rows are read again
            t = x.transpose(1, 2).reshape(-1, C)
            return self.mlp(t).sum(dim=1, keepdim=True) + t[:, :1]
        if self.how == "linear_3d":            # Linear on [N, R, C]: MatMul + Add, not a Gemm
            h = self.mlp(x.transpose(1, 2))
            return h.transpose(1, 2)
        if self.how == "other_axis":           # the transpose swaps N and C
            h = self.mlp(x.permute(1, 0, 2).reshape(C, -1).t())
            return h.sum(dim=0, keepdim=True)
        raise ValueError(self.how)


def row_mlp(how, **kw):
    def make(opset):
        torch.manual_seed(3)
        x = np.random.default_rng(0).standard_normal((2, C, R), dtype=np.float32)
        return torch_util.export_x(RowMlp(how, **kw).eval(), x, opset)[0]
    return make


def interaction(opset):
    return interaction_model.export(opset=opset)[0]


def interaction40(opset):
    return interaction_model.export(opset=opset, no=40)[0]


class Select(nn.Module):
    """x [N, C, R] @ S [R, M]: S picks one column of x per output column
    (kind "pick", with repeats and in any order) or is almost such a matrix."""

    def __init__(self, kind):
        super().__init__()
        src = np.random.default_rng(7).integers(0, R, 3 * R)
        s = np.zeros((R, 3 * R), np.float32)
        s[src, np.arange(3 * R)] = 1
        if kind == "two":
            s[(src[5] + 1) % R, 5] = 1
        elif kind == "scaled":
            s[src[5], 5] = 2
        elif kind == "empty":
            s[:, 5] = 0
        self.register_buffer("s", torch.from_numpy(s))

    def forward(self, x):
        return torch.matmul(x, self.s) - 0.5


class SelCat(nn.Module):
    """Column selections of x [N, C, R] (x @ S_t, S_t [R, M] picking one
    column each) concatenated along the channels, then an MLP on each of the
    M columns written as the edge MLP (transpose, Linear, transpose back):
    mlpconv makes the first layer a 1x1 Conv of the concatenation and then
    moves it before the selections (KilnSelectSum)."""

    def __init__(self, parts, m, widths, act, twice=False):
        super().__init__()
        self.twice = twice
        rng = np.random.default_rng(11)
        for t in range(parts):
            s = np.zeros((R, m), np.float32)
            s[rng.integers(0, R, m), np.arange(m)] = 1
            self.register_buffer(f"s{t}", torch.from_numpy(s))
        self.parts, self.m = parts, m
        layers, c = [], parts * C
        for w in widths:
            layers += [nn.Linear(c, w)] + ([act()] if act else [])
            c = w
        self.mlp = nn.Sequential(*layers)
        self.d = c

    def forward(self, x):
        sel = [torch.matmul(x, getattr(self, f"s{t}")) for t in range(self.parts)]
        if self.twice:                         # one selection read twice by the Concat
            sel = [sel[0]] * self.parts
        b = torch.cat(sel, dim=1)
        h = self.mlp(b.transpose(1, 2).contiguous().view(-1, self.parts * C))
        return h.view(-1, self.m, self.d).transpose(1, 2).contiguous()


def sel_cat(parts, m, widths=(8,), act=nn.ReLU, twice=False):
    def make(opset):
        torch.manual_seed(4)
        x = np.random.default_rng(0).standard_normal((2, C, R), dtype=np.float32)
        return torch_util.export_x(SelCat(parts, m, widths, act, twice).eval(), x, opset)[0]
    return make


def gather_negative(opset):
    """Gather along the last axis with negative indices and a tail of 11
    (the gather kernel's permute path, not reached through onehot)."""
    from onnx import TensorProto, helper
    idx = np.array([-1, 0, 5, -20, 19, 3, 3, -7, 2, 1, 0, 18, 17, 16, 15, 14, 13, 12, 11, 10,
                    -2, -3, 4, 6, 8, 9, 7], np.int64)
    g = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=-1)], "gather_negative",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, R])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", C, len(idx)])],
        [onnx.numpy_helper.from_array(idx, "i")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def gather_half_pairs(opset):
    """float16 pairs gathered along axis -2 ([N, C, R/2, 2]): 4-byte blocks of
    2-byte elements, the gather kernel's vector paths for float16 data."""
    from onnx import TensorProto, helper
    idx = np.array([9, 0, -1, 3, 3, 5, -10, 2, 8, 7, 1, 4, 6, -4, 0, 9, 2], np.int64)
    shape = np.array([-1, C, R // 2, 2], np.int64)
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
         helper.make_node("Reshape", ["h", "shape"], ["p"]),
         helper.make_node("Gather", ["p", "i"], ["q"], axis=-2),
         helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], "gather_half_pairs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, R])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", C, len(idx), 2])],
        [onnx.numpy_helper.from_array(idx, "i"), onnx.numpy_helper.from_array(shape, "shape")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def select(kind):
    def make(opset):
        x = np.random.default_rng(0).standard_normal((2, C, R), dtype=np.float32)
        return torch_util.export_x(Select(kind).eval(), x, opset)[0]
    return make


# name, model maker, opset, nodes mlpconv removes (0: none).
# The interaction network: edge MLP 3 Gemm + 3 Relu between two transposes
# (2 + 6 + 2), object MLP 3 Gemm + 2 Relu, 24 -> 8 (2 + 5), then the edge
# MLP's first Conv moved before the Rr and Rs selections (KilnSelectSum: the
# Concat, the two KilnSelects, the two Reshapes after them and the Relu it
# takes in, 6; 40 particles: rows of P beyond two registers, the kernel's C
# loop). sel_cat: the MLP (2 + 1 per Gemm and activation: its output stays
# transposed), then the Concat and KilnSelects (1 + parts) and a Relu taken
# in (a Tanh stays a node); when they do not widen x (M <= R), or the Concat
# reads one selection twice, only the MLP.
CASES = [
    ("interaction_opset11", interaction, 11, 17 + 6),
    ("interaction_opset13", interaction, 13, 17 + 6),
    ("interaction_opset17", interaction, 17, 17 + 6),
    ("interaction40_opset13", interaction40, 13, 17 + 6),
    ("selcat_3_relu", sel_cat(3, 3 * R), 13, 2 + 2 + 1 + 3 + 1),
    ("selcat_2_linear", sel_cat(2, 2 * R + 7, widths=(6, 5), act=None), 13, 2 + 2 + 1 + 2),
    ("selcat_2_tanh", sel_cat(2, 2 * R, act=nn.Tanh), 13, 2 + 2 + 1 + 2),
    ("selcat_narrow", sel_cat(2, R - 5), 13, 2 + 2),
    ("selcat_twice", sel_cat(2, 2 * R, twice=True), 13, 2 + 2),
    ("transpose_back_relu", row_mlp("transpose_back"), 13, 2 + 4 + 2),
    ("transpose_back_tanh", row_mlp("transpose_back", act=nn.Tanh), 15, 2 + 4 + 2),
    ("permute_reshape_leaky", row_mlp("permute_reshape", act=nn.LeakyReLU), 13, 2 + 4 + 2),
    ("permute_reshape_wide", row_mlp("permute_reshape", widths=(32, 24)), 17, 2 + 4 + 2),
    ("rows_out_sigmoid", row_mlp("rows_out", act=nn.Sigmoid), 11, 2 + 4),
    ("rows_out_elu_3", row_mlp("rows_out", widths=(16, 16, 4), act=nn.ELU), 13, 2 + 6),
    ("rows_out_wider", row_mlp("rows_out", widths=(16, 16)), 13, 0),
    ("read_twice", row_mlp("read_twice"), 13, 0),
    ("linear_3d", row_mlp("linear_3d"), 13, 0),
    ("other_axis", row_mlp("other_axis"), 13, 0),
]


# name, model maker, opset, MatMuls onehot turns into Gathers.
ONEHOT = [
    ("interaction_opset11", interaction, 11, 2),
    ("interaction_opset13", interaction, 13, 2),
    ("interaction_opset17", interaction, 17, 2),
    ("interaction40_opset13", interaction40, 13, 2),
    ("select_pick", select("pick"), 13, 1),
    ("select_two_ones", select("two"), 13, 0),
    ("select_scaled", select("scaled"), 11, 0),
    ("select_empty_column", select("empty"), 17, 0),
    ("gather_negative", gather_negative, 13, 0),
    ("gather_half_pairs", gather_half_pairs, 13, 0),
]


def removed_by_pass(kiln, path, name="mlpconv"):
    r = subprocess.run([kiln, "info", path, "--passes", "--batch", "1,3"],
                       capture_output=True, text=True)
    m = re.search(r"^\s*" + name + r"\s+(\d+)\s+(\d+)", r.stdout, re.M)
    return int(m.group(2)) if m and r.returncode == 0 else None


def save_cases(outdir, name, model, dirs):
    """The model's cases at batch 1 and 3 (their folders appended to dirs)
    and the model itself; returns its path."""
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal([batch] + shape, dtype=np.float32)
        dirs.append(write_case(outdir, f"{name}_b{batch}", model, {"x": x}))
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(model, path)
    return path


def main():
    kiln, outdir = sys.argv[1], sys.argv[2]
    if not ort_available():
        print("SKIP: ONNX Runtime (node + onnxruntime-node) is not available: "
              "NODE_PATH=$(scripts/install-ort.sh) to run these tests")
        return 77
    os.makedirs(outdir, exist_ok=True)
    failures, dirs = 0, []
    for name, make, opset, want in ONEHOT:
        path = save_cases(outdir, "onehot_" + name, make(opset), dirs)
        got = removed_by_pass(kiln, path, "onehot")
        ok = got == want
        print(f"{'PASS' if ok else 'FAIL'} {name}: onehot removed {got} MatMuls (want {want})")
        failures += not ok
    for name, make, opset, want in CASES:
        path = save_cases(outdir, name, make(opset), dirs)
        got = removed_by_pass(kiln, path)
        ok = got == want
        print(f"{'PASS' if ok else 'FAIL'} {name}: mlpconv removed {got} nodes (want {want})")
        failures += not ok
        if want:
            r = subprocess.run([kiln, "compile", path, "--batch", "1,3", "-o", path + "-out"],
                               capture_output=True, text=True)
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
