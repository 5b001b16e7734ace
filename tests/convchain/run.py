#!/usr/bin/python3
"""The convchain pass (compiler/passes/convchain.c, runtime/kernels/
f32-convchain) on models exported by PyTorch (Debian's python3-torch,
torch.onnx.export): chains of 1x1 Conv1d layers become one KilnConvChain
node that runs a block of points at a time through every layer. And the
scatterrows pass (compiler/passes/scatterrows.c): ScatterND at the index
tuples PyTorch's index_put concatenates from broadcast pieces (ParT's
y[:, :, i, j] = el) becomes one KilnScatterRows node reading the pieces.

Models: the Particle Transformer's pair embedding as weaver-core writes it
(BatchNorm1d, then Conv1d(k=1) / BatchNorm1d / GELU layers, 4 -> 64 -> 64 ->
8 channels over the 1540 pairs of 55 particles) at opsets 11, 13 and 17,
stacks with Relu, Tanh, LeakyReLU, Sigmoid or no activation, points a
multiple of 1024 (rows 4 KiB apart: the GEMM packs them), a first layer of
300 input channels (more than one K block: left out of the chain), near
misses (an intermediate read twice, a kernel-3 Conv between, 32 points: the
small-plane kernel's), and the whole ParT export (tests/realmodels/
part_model.py, the triangle of pairs at opset 17, all pairs at opset 13);
index_put models for scatterrows: the pairs both ways (4 components, one
element a tuple), rows of 7 channels (2 components, a slice of 7), negative
indices.

Checks per model:
  - the generated C holds the expected chains (their layer counts) and
    KilnScatterRows nodes;
  - against ONNX Runtime 1.30 (`kiln verify`, batch 1 and 3, rtol 1e-3,
    atol 1e-5; the ParT exports with their own tolerance below);
  - bits: compiled with and without `--no-pass=convchain` (`--batch 1,8`,
    and `--no-pass=scatterrows`; tests/realmodels/stitch_rows.c), run under
    every KILN_ISA this machine
    has on 8 samples at n = 8 and one by one: with the pass == without it,
    every output byte, under each ISA; with the pass, the same bytes under
    every ISA, and row r of the n = 8 run == sample r alone.

usage: run.py KILN SOURCE_ROOT LIBKILN_A OUTDIR   (env CC, SANFLAGS; exits 77,
"skipped", without ONNX Runtime)
"""
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "realmodels"))
sys.path.insert(0, os.path.join(HERE, "..", "repro"))
sys.path.append(os.path.join(HERE, "..", "mlpconv"))
from run import ort_available, write_case  # noqa: E402
from bits import machine_isas  # noqa: E402
import onehot_bits  # noqa: E402
import torch_util  # noqa: E402

import onnx  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

ROWS = onehot_bits.ROWS


class Stack(nn.Module):
    """x [N, C, P] through 1x1 Conv1d layers; `bn`: BatchNorm1d before and
    after each (weaver's pair embedding); `mid`: a kernel-3 Conv1d after
    layer 1; `twice`: layer 0's output also added to the result."""

    def __init__(self, c, dims, act=nn.GELU, bn=False, mid=False, twice=False):
        super().__init__()
        layers = [nn.BatchNorm1d(c)] if bn else []
        for i, d in enumerate(dims):
            layers.append(nn.Conv1d(c, d, 1))
            if bn:
                layers.append(nn.BatchNorm1d(d))
            if act:
                layers.append(act())
            if mid and i == 1:
                layers += [nn.Conv1d(d, d, 3, padding=1), nn.ReLU()]
            c = d
        self.layers = nn.ModuleList(layers)
        self.twice = twice

    def forward(self, x):
        first = None
        for m in self.layers:
            x = m(x)
            if first is None and not isinstance(m, (nn.Conv1d, nn.BatchNorm1d)):
                first = x
        return x + first[:, :x.shape[1]] if self.twice else x


class Scatter(nn.Module):
    """index_put as weaver's ParT and users write it: the lower triangle of
    pairs both ways (`pairs`), rows of a [N, P, C] tensor (`rows`), negative
    row indices (`negative`)."""

    def __init__(self, kind, p=12, h=3):
        super().__init__()
        self.kind, self.p, self.h = kind, p, h
        ij = torch.ones(p, p, dtype=torch.long).tril(-1).nonzero()
        self.register_buffer("i", ij[:, 0].contiguous())
        self.register_buffer("j", ij[:, 1].contiguous())

    def forward(self, x):
        n = x.shape[0]
        if self.kind == "rows":
            y = torch.zeros(n, self.p, x.shape[2], dtype=x.dtype) + 1
            y[:, self.i[:x.shape[1]] + 1] = x
            return y
        y = torch.zeros(n, self.h, self.p, self.p, dtype=x.dtype)
        if self.kind == "negative":
            y[:, :, self.i - self.p, self.j] = x
            return y
        y[:, :, self.i, self.j] = x
        y[:, :, self.j, self.i] = x * 2
        return y


def scatter(kind, shape):
    def make(opset):
        x = np.random.default_rng(0).standard_normal((2,) + shape, dtype=np.float32)
        return torch_util.export_x(Scatter(kind).eval(), x, opset)[0], None
    return make


def stack(c, p, dims, **kw):
    def make(opset):
        torch.manual_seed(7)
        m = torch_util.random_bn_stats(Stack(c, dims, **kw))
        x = np.random.default_rng(0).standard_normal((2, c, p), dtype=np.float32)
        return torch_util.export_x(m, x, opset)[0], None
    return make


def part(opset, npf, nsv):
    """The ParT export with its particle axes fixed (as --shape would)."""
    def make(_):
        import part_model
        torch.manual_seed(0)
        m, _ = part_model.export(opset=opset, npf=npf, nsv=nsv, embed=32, heads=4,
                                 pair_dims=(64, 64))
        sizes = {"n_pf": npf, "n_sv": nsv}
        for vi in m.graph.input:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param in sizes:
                    d.dim_value = sizes[d.dim_param]

        def feed(batch, seed):
            j = part_model.jets(batch, npf, nsv, seed=seed)
            return [j[k] for k in part_model.NAMES]
        return m, feed
    return make


# name, maker, opset, the chains' layer counts in the generated C[, KilnScatterRows nodes]
CASES = [
    ("pair_embed_opset17", stack(4, 1540, (64, 64, 8), bn=True), 17, [3]),
    ("pair_embed_opset13", stack(4, 1540, (64, 64, 8), bn=True), 13, [3]),
    ("pair_embed_opset11", stack(4, 300, (32, 16, 8), bn=True), 11, [3]),
    ("relu_p100", stack(12, 100, (32, 32, 16), act=nn.ReLU), 13, [3]),
    ("tanh_p1024", stack(8, 1024, (16, 24), act=nn.Tanh), 13, [2]),
    ("leaky_p33", stack(5, 33, (20, 7, 3, 9), act=nn.LeakyReLU), 17, [4]),
    ("sigmoid_none_p77", stack(6, 77, (10, 11), act=None), 13, [2]),
    ("sigmoid_p77", stack(6, 77, (10, 11), act=nn.Sigmoid), 13, [2]),
    ("deep_10_layers", stack(4, 64, (8,) * 10, act=nn.ReLU), 13, [8, 2]),
    ("first_k300", stack(300, 40, (64, 32, 8), act=nn.ReLU), 13, [2]),
    ("read_twice", stack(8, 50, (16, 16, 16), act=nn.ReLU, twice=True), 13, [2]),
    ("kernel3_between", stack(8, 50, (16, 16, 16, 8), act=nn.ReLU, mid=True), 13, [2, 2]),
    ("p32_small_plane", stack(8, 32, (16, 16), act=nn.ReLU), 13, []),
    ("part_tril_opset17", part(17, 30, 5), 17, [3], 2),
    ("part_allpairs_opset13", part(13, 20, 4), 13, [3], 0),
    ("scatter_pairs_opset13", scatter("pairs", (3, 66)), 13, [], 2),
    ("scatter_pairs_opset17", scatter("pairs", (3, 66)), 17, [], 2),
    ("scatter_rows_opset11", scatter("rows", (5, 7)), 11, [], 1),
    ("scatter_negative_opset13", scatter("negative", (3, 66)), 13, [], 1),
]
# ParT's pair features (ln m^2 of nearly collinear pairs) are ill-conditioned
# in float32 (bench/compare.py: ATOL_FOR part_test)
TOLERANCE = {"part_tril_opset17": "1e-3,3e-3", "part_allpairs_opset13": "1e-3,3e-3"}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def chains(kiln, path, outdir):
    r = run([kiln, "compile", path, "--batch", "3", "--name", "c", "-o", outdir])
    if r.returncode:
        return None
    src = open(os.path.join(outdir, "c.c")).read()
    return (sorted((int(m) for m in re.findall(r"\.nlayers = (\d+)", src)), reverse=True),
            len(re.findall(r"\(KilnScatterRows\)", src)))


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
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(f"{'PASS' if ok else 'FAIL'} {what}")
        failures += not ok

    for name, make, opset, want, *scat in CASES:
        model, feed = make(opset)
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        got, nscat = chains(kiln, path, os.path.join(d, "chains")) or (None, None)
        check(got == sorted(want, reverse=True), f"{name}: chains of {got} layers (want {want})")
        want_scat = scat[0] if scat else 0
        check(nscat == want_scat, f"{name}: {nscat} KilnScatterRows (want {want_scat})")
        names = [i.name for i in model.graph.input]
        shapes = [[x.dim_value for x in i.type.tensor_type.shape.dim[1:]] for i in model.graph.input]

        def inputs(batch, seed):
            if feed:
                return feed(batch, seed)
            return [np.random.default_rng(seed).standard_normal([batch] + s, dtype=np.float32)
                    for s in shapes]
        dirs = [write_case(outdir, f"{name}_b{b}", model, dict(zip(names, inputs(b, b))))
                for b in (1, 3)]
        tol = ["--tolerance=" + TOLERANCE[name]] if name in TOLERANCE else []
        r = run([kiln, "verify"] + tol + dirs)
        check(r.returncode == 0, f"{name}: against ONNX Runtime "
              f"({(r.stdout + r.stderr).strip().splitlines()[-1:] if r.returncode else 'ok'})")
        # bits: with the pass against without, under every ISA, and batch
        x = inputs(ROWS, 11)
        wexe = onehot_bits.build(kiln, src_root, libkiln, model, os.path.join(d, "with"), [])
        oexe = onehot_bits.build(kiln, src_root, libkiln, model, os.path.join(d, "without"),
                                 ["--no-pass=convchain", "--no-pass=scatterrows"])
        got, ref = {}, {}
        for isa in isas:
            got[isa] = onehot_bits.outputs(wexe, os.path.join(d, "with"), x, isa).view(np.uint32)
            ref[isa] = onehot_bits.outputs(oexe, os.path.join(d, "without"), x,
                                           isa).view(np.uint32)
            check(np.array_equal(got[isa], ref[isa]),
                  f"{name}: KILN_ISA={isa}: the same bits as the Convs and ScatterNDs "
                  f"({int((got[isa] != ref[isa]).sum())} of {got[isa].size} differ)")
            half = got[isa].size // 2
            check(np.array_equal(got[isa][:half], got[isa][half:]),
                  f"{name}: KILN_ISA={isa}: n = {ROWS} rows == each sample alone")
        for isa in isas[1:]:
            check(np.array_equal(got[isa], got[isas[0]]),
                  f"{name}: the same bits under KILN_ISA={isas[0]} and {isa}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
