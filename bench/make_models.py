#!/usr/bin/env python3
# Copied into kiln from ../shared/bench-models/make_models.py (the benchmark
# workloads of issue #10, as measured in its BASELINE.md) and kept here as the
# project's own file, so that a clone alone can rebuild the workloads.
# bench/compare.sh runs it with BENCH_MODELS_DIR=build/bench/models.
"""Generate the baseline ONNX model zoo for the AOT ONNX->C compiler yardstick.

Run with Debian's interpreter (python3-torch 1.13, python3-onnx 1.12):

    /usr/bin/python3 make_models.py            # all models
    /usr/bin/python3 make_models.py ff12_128   # a subset

Writes
    models/<name>.onnx                 dynamic batch dim "N" (and "S" for the LM)
    models/ref/<name>/<tensor>.bin     raw little-endian reference I/O (batch 2,
                                       torch eager output) for correctness checks
    models/torch/<name>.pt             torch state_dict (for torch_bench.py)
    models/models.json                 metadata: inputs, params, weight bytes,
                                       FLOPs per sample, op histogram, sha256

Everything is deterministic: fixed seeds, weights are random (no training),
BatchNorm running statistics are calibrated on random inputs so activations
stay O(1) through deep stacks.

The torch modules are also imported by torch_bench.py (build_specs()).
"""
import argparse
import hashlib
import json
import math
import os
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import onnx
from onnx import helper, numpy_helper, shape_inference, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIR = os.environ.get("BENCH_MODELS_DIR", os.path.join(HERE, "models"))
REF_BATCH = 2

warnings.filterwarnings("ignore")


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def seed_all(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)


def randomize_norms(model):
    """Random affine params for BatchNorm/LayerNorm (default ones/zeros would be
    deduplicated by the exporter into shared initializers + Identity nodes,
    which no trained network has)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm)) and m.weight is not None:
                m.weight.copy_(1.0 + 0.1 * torch.randn_like(m.weight))
                m.bias.copy_(0.1 * torch.randn_like(m.bias))


def calibrate_bn(model, make_inputs, batches=4, batch=64, seed=1234):
    """Set BatchNorm running stats to the cumulative mean/var seen on random
    inputs (momentum=None -> exact average), then switch to eval."""
    randomize_norms(model)
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        model.eval()
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(batches):
            model(*make_inputs(batch, g))
    for m in bns:
        m.momentum = 0.1
    model.eval()


# --------------------------------------------------------------------------
# 1. feed-forward nets (CMS AOT study style)
# --------------------------------------------------------------------------
class FFNet(nn.Module):
    """32 -> Dense 64 -> `depth` x Dense `width` -> 10, each hidden Dense
    followed by BatchNorm1d and SELU; softmax output."""

    def __init__(self, n_in=32, first=64, width=128, depth=12, n_out=10):
        super().__init__()
        dims = [n_in, first] + [width] * depth
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            lin = nn.Linear(a, b)
            nn.init.normal_(lin.weight, std=1.0 / math.sqrt(a))  # LeCun normal (SELU)
            nn.init.normal_(lin.bias, std=0.05)
            layers += [lin, nn.BatchNorm1d(b), nn.SELU()]
        layers.append(nn.Linear(dims[-1], n_out))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return torch.softmax(self.body(x), dim=-1)


def ff_inputs(batch, g=None):
    return (torch.randn(batch, 32, generator=g),)


# --------------------------------------------------------------------------
# 2. DeepJet-like tagger
# --------------------------------------------------------------------------
class SeqBranch(nn.Module):
    """Input BN over features, stack of 1x1 Conv1d+ReLU, LSTM summary."""

    def __init__(self, n_feat, conv_chans, lstm_hidden):
        super().__init__()
        self.bn = nn.BatchNorm1d(n_feat)
        convs, c = [], n_feat
        for co in conv_chans:
            convs += [nn.Conv1d(c, co, kernel_size=1), nn.ReLU()]
            c = co
        self.convs = nn.Sequential(*convs)
        self.lstm = nn.LSTM(c, lstm_hidden, batch_first=True)

    def forward(self, x):  # x: [N, L, F]
        y = self.convs(self.bn(x.transpose(1, 2)))  # [N, C, L]
        _, (h, _) = self.lstm(y.transpose(1, 2))    # h: [1, N, H]
        return h[0]


class DeepJetLike(nn.Module):
    def __init__(self, n_out=6):
        super().__init__()
        self.glob_bn = nn.BatchNorm1d(15)
        self.cpf = SeqBranch(16, (64, 32, 32, 8), 150)
        self.npf = SeqBranch(6, (32, 16, 4), 50)
        self.sv = SeqBranch(12, (64, 32, 32, 8), 50)
        dims = [15 + 150 + 50 + 50, 200] + [100] * 7
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], n_out))
        self.head = nn.Sequential(*layers)

    def forward(self, glob, cpf, npf, sv):
        z = torch.cat([self.glob_bn(glob), self.cpf(cpf), self.npf(npf), self.sv(sv)], dim=1)
        return torch.softmax(self.head(z), dim=-1)


def deepjet_inputs(batch, g=None):
    return (torch.randn(batch, 15, generator=g), torch.randn(batch, 25, 16, generator=g),
            torch.randn(batch, 25, 6, generator=g), torch.randn(batch, 4, 12, generator=g))


# --------------------------------------------------------------------------
# 3. ParticleNet-like EdgeConv net
# --------------------------------------------------------------------------
def knn_indices(pts, k):
    """pts [N, C, P] -> indices [N, P, k] of the k nearest neighbours
    (self excluded) using -|a-b|^2 = 2ab - |a|^2 - |b|^2 and TopK."""
    inner = torch.matmul(pts.transpose(1, 2), pts)               # [N, P, P]
    sq = (pts * pts).sum(dim=1, keepdim=True)                    # [N, 1, P]
    neg_d2 = 2.0 * inner - sq - sq.transpose(1, 2)
    return neg_d2.topk(k + 1, dim=-1)[1][:, :, 1:]


def edge_features(x, idx, k):
    """x [N, C, P], idx [N, P, k] -> [N, 2C, P, k] = (x_i, x_j - x_i)."""
    n, c, p = x.shape
    flat = x.transpose(1, 2).reshape(-1, c)                      # [N*P, C]
    base = torch.arange(n).view(-1, 1, 1) * p
    nbr = torch.index_select(flat, 0, (idx + base).reshape(-1))  # Gather
    nbr = nbr.view(n, p, k, c).permute(0, 3, 1, 2)               # [N, C, P, k]
    ctr = x.unsqueeze(-1).expand(n, c, p, k)
    return torch.cat([ctr, nbr - ctr], dim=1)


class EdgeConv(nn.Module):
    def __init__(self, k, c_in, chans):
        super().__init__()
        self.k = k
        layers, c = [], 2 * c_in
        for co in chans:
            layers += [nn.Conv2d(c, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU()]
            c = co
        self.mlp = nn.Sequential(*layers)
        self.sc = nn.Sequential(nn.Conv1d(c_in, chans[-1], 1, bias=False), nn.BatchNorm1d(chans[-1]))

    def forward(self, pts, x):
        idx = knn_indices(pts, self.k)
        y = self.mlp(edge_features(x, idx, self.k)).mean(dim=-1)
        return F.relu(y + self.sc(x))


class ParticleNetLike(nn.Module):
    def __init__(self, k=16, c_in=16, blocks=((32, 32, 32), (64, 64, 64)), fc=128, n_out=2):
        super().__init__()
        self.bn = nn.BatchNorm1d(c_in)
        convs, c = [], c_in
        for chans in blocks:
            convs.append(EdgeConv(k, c, chans))
            c = chans[-1]
        self.blocks = nn.ModuleList(convs)
        self.head = nn.Sequential(nn.Linear(c, fc), nn.ReLU(), nn.Linear(fc, n_out))

    def forward(self, points, features):
        x = self.bn(features)
        for i, blk in enumerate(self.blocks):
            x = blk(points if i == 0 else x, x)
        return torch.softmax(self.head(x.mean(dim=-1)), dim=-1)


def pnet_inputs(batch, g=None):
    return (torch.randn(batch, 2, 100, generator=g), torch.randn(batch, 16, 100, generator=g))


# --------------------------------------------------------------------------
# 4. transformer encoder (MatMul and Einsum variants, identical weights)
# --------------------------------------------------------------------------
class EncoderLayer(nn.Module):
    """Post-LN encoder layer. Einsum variant mirrors Keras MultiHeadAttention /
    EinsumDense equations (as in the keras GPT-2 export)."""

    def __init__(self, d=128, h=8, ff=512, seq=64, use_einsum=False):
        super().__init__()
        self.d, self.h, self.dh, self.seq, self.use_einsum = d, h, d // h, seq, use_einsum
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.gelu = nn.GELU()

    def _proj_einsum(self, x, lin):  # 'abc,cde->abde' with kernel [d, h, dh]
        w = lin.weight.t().reshape(self.d, self.h, self.dh)
        return torch.einsum("abc,cde->abde", x, w) + lin.bias.reshape(self.h, self.dh)

    def attn(self, x):
        scale = 1.0 / math.sqrt(self.dh)
        if self.use_einsum:
            q = self._proj_einsum(x, self.q) * scale                # [N, S, h, dh]
            k = self._proj_einsum(x, self.k)
            v = self._proj_einsum(x, self.v)
            s = torch.einsum("aecd,abcd->acbe", k, q)               # [N, h, Sq, Sk]
            p = torch.softmax(s, dim=-1)
            c = torch.einsum("acbe,aecd->abcd", p, v)               # [N, S, h, dh]
            wo = self.o.weight.t().reshape(self.h, self.dh, self.d)
            return torch.einsum("abcd,cde->abe", c, wo) + self.o.bias
        def split(t):
            return t.reshape(-1, self.seq, self.h, self.dh).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * scale, dim=-1)
        c = torch.matmul(p, v).transpose(1, 2).reshape(-1, self.seq, self.d)
        return self.o(c)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ff2(self.gelu(self.ff1(x))))


class TransformerEnc(nn.Module):
    def __init__(self, layers=4, d=128, h=8, ff=512, seq=64, use_einsum=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d, h, ff, seq, use_einsum) for _ in range(layers))

    def forward(self, x):
        for l in self.layers:
            x = l(x)
        return x


def tfm_inputs(batch, g=None):
    return (torch.randn(batch, 64, 128, generator=g),)


# --------------------------------------------------------------------------
# 5. resnet18
# --------------------------------------------------------------------------
def make_resnet18():
    import torchvision
    return torchvision.models.resnet18(weights=None)


def resnet_inputs(batch, g=None):
    return (torch.randn(batch, 3, 224, 224, generator=g),)


# --------------------------------------------------------------------------
# 6. tiny decoder LM with tied embedding / lm_head
# --------------------------------------------------------------------------
class DecoderBlock(nn.Module):
    def __init__(self, d, h, ff):
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, mask):
        n, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.reshape(n, s, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        a = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.dh)) + mask
        c = torch.matmul(torch.softmax(a, dim=-1), v).transpose(1, 2).reshape(n, s, d)
        x = x + self.proj(c)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TiedLM(nn.Module):
    """Returns next-token logits for the last position: [N, vocab].
    lm_head = tok_emb.weight^T (tied)."""

    def __init__(self, vocab=32000, d=256, layers=2, h=4, ff=1024, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = nn.Embedding(max_len, d)
        nn.init.normal_(self.pos.weight, std=0.02)
        self.blocks = nn.ModuleList(DecoderBlock(d, h, ff) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("causal", torch.triu(torch.full((max_len, max_len), -1e4), diagonal=1))

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(s))
        mask = self.causal[:s, :s]
        for b in self.blocks:
            x = b(x, mask)
        h = self.ln_f(x)[:, -1, :]
        return torch.matmul(h, self.tok.weight.transpose(0, 1))


LM_SEQ = 32


def lm_inputs(batch, g=None):
    return (torch.randint(0, 32000, (batch, LM_SEQ), generator=g),)


def tie_lm_head(model_proto):
    """torch's constant folding turns Transpose(tok.weight) into a second,
    transposed initializer. Undo that: MatMul(h, Transpose(tok.weight))."""
    g = model_proto.graph
    inits = {i.name: i for i in g.initializer}
    emb_name = next(n for n, i in inits.items() if list(i.dims) == [32000, 256])
    emb = numpy_helper.to_array(inits[emb_name])
    for node in g.node:
        if node.op_type == "MatMul" and node.input[1] in inits and list(inits[node.input[1]].dims) == [256, 32000]:
            dup = node.input[1]
            assert np.array_equal(numpy_helper.to_array(inits[dup]), emb.T)
            t_out = "lm_head.weight_T"
            tnode = helper.make_node("Transpose", [emb_name], [t_out], name="lm_head_transpose", perm=[1, 0])
            node.input[1] = t_out
            idx = list(g.node).index(node)
            g.node.insert(idx, tnode)
            g.initializer.remove(inits[dup])
            return emb_name
    # constant folding may not have fired: accept an existing Transpose(emb)
    for node in g.node:
        if node.op_type == "Transpose" and node.input[0] == emb_name:
            return emb_name
    raise RuntimeError("tied lm_head pattern not found")


# --------------------------------------------------------------------------
# spec table
# --------------------------------------------------------------------------
def build_specs():
    """name -> dict(make, build, inputs, input_names, output_names, dyn, opset, ...).
    build() returns a calibrated eval-mode torch module (deterministic);
    make() the same architecture uncalibrated (torch_bench.py loads the saved
    state_dict into it)."""

    def recipe(seed, ctor, inputs, **cal):
        """make(): seeded bare module (random init, train mode);
        build(): make() + norm randomisation + BN calibration + eval()."""
        def make():
            seed_all(seed)
            return ctor()

        def build():
            m = make()
            calibrate_bn(m, inputs, **cal)
            return m
        return dict(make=make, build=build)

    ff = lambda width, depth: recipe(1, lambda: FFNet(width=width, depth=depth), ff_inputs)
    deepjet = recipe(2, DeepJetLike, deepjet_inputs)
    pnet = recipe(3, ParticleNetLike, pnet_inputs, batch=32)
    # same seed -> identical weights in both transformer variants
    tfm = lambda use_einsum: recipe(4, lambda: TransformerEnc(use_einsum=use_einsum), tfm_inputs)
    resnet = recipe(5, make_resnet18, resnet_inputs, batches=2, batch=8)
    lm = recipe(6, TiedLM, lm_inputs)

    return {
        "ff12_128": dict(**ff(128, 12), inputs=ff_inputs, input_names=["x"], output_names=["probs"],
                         dyn={"x": {0: "N"}, "probs": {0: "N"}}, opset=13, batches=[1, 16, 256],
                         notes="32 -> Dense64 -> 12 x Dense128, each Dense+BatchNorm+SELU, -> Dense10 + softmax"),
        "ff25_256": dict(**ff(256, 25), inputs=ff_inputs, input_names=["x"], output_names=["probs"],
                         dyn={"x": {0: "N"}, "probs": {0: "N"}}, opset=13, batches=[1, 16, 256],
                         notes="32 -> Dense64 -> 25 x Dense256, each Dense+BatchNorm+SELU, -> Dense10 + softmax"),
        "deepjet_like": dict(**deepjet, inputs=deepjet_inputs,
                             input_names=["global", "cpf", "npf", "sv"], output_names=["probs"],
                             dyn={"global": {0: "N"}, "cpf": {0: "N"}, "npf": {0: "N"}, "sv": {0: "N"},
                                  "probs": {0: "N"}}, opset=13, batches=[1, 16, 256],
                             notes="input BN per branch; 1x1 Conv1d stacks cpf(64,32,32,8) npf(32,16,4) "
                                   "sv(64,32,32,8); LSTM 150/50/50 (last hidden); concat+global -> "
                                   "Dense200 + 7xDense100 ReLU -> 6 softmax"),
        "particlenet_like": dict(**pnet, inputs=pnet_inputs, input_names=["points", "features"],
                                 output_names=["probs"],
                                 dyn={"points": {0: "N"}, "features": {0: "N"}, "probs": {0: "N"}},
                                 opset=13, batches=[1, 16, 256],
                                 notes="100 particles, k=16 kNN (MatMul+TopK, self dropped), Gather of "
                                       "neighbour features, 2 EdgeConv blocks (32,32,32),(64,64,64) with "
                                       "Conv2d1x1+BN+ReLU (BN folded into Conv by exporter), shortcut, "
                                       "mean over points, Dense128 -> 2 softmax"),
        "transformer_enc": dict(**tfm(False), inputs=tfm_inputs, input_names=["x"], output_names=["y"],
                                dyn={"x": {0: "N"}, "y": {0: "N"}}, opset=17, batches=[1, 16, 256],
                                notes="4 post-LN layers, d=128, 8 heads, FFN 512 GELU(erf), seq 64; "
                                      "MatMul/Softmax/LayerNormalization(opset17)"),
        "transformer_enc_einsum": dict(**tfm(True), inputs=tfm_inputs, input_names=["x"], output_names=["y"],
                                       dyn={"x": {0: "N"}, "y": {0: "N"}}, opset=17, batches=[1, 16, 256],
                                       notes="same weights as transformer_enc; Q/K/V/O projections and "
                                             "attention products as Einsum (Keras MultiHeadAttention "
                                             "equations abc,cde->abde / aecd,abcd->acbe / acbe,aecd->abcd / "
                                             "abcd,cde->abe); FFN stays MatMul"),
        "resnet18": dict(**resnet, inputs=resnet_inputs, input_names=["image"], output_names=["logits"],
                         dyn={"image": {0: "N"}, "logits": {0: "N"}}, opset=13, batches=[1, 16],
                         notes="torchvision resnet18, random weights, 3x224x224; BN folded into Conv "
                               "by the exporter"),
        "tied_embed_lm": dict(**lm, inputs=lm_inputs, input_names=["input_ids"], output_names=["logits"],
                              dyn={"input_ids": {0: "N", 1: "S"}, "logits": {0: "N"}}, opset=14,
                              batches=[1, 16, 256], post=tie_lm_head, seq=LM_SEQ,
                              notes="vocab 32000, d 256, 2 pre-LN decoder layers (4 heads, FFN 1024), "
                                    "causal; logits of last position only [N,32000]; lm_head = "
                                    "MatMul(h, Transpose(tok.weight)) sharing the Gather's initializer; "
                                    "opset 14 so LayerNorm is decomposed; FLOPs per sample at S=32"),
    }


# --------------------------------------------------------------------------
# analysis: params, bytes, FLOPs
# --------------------------------------------------------------------------
ELEMWISE_1 = {"Add", "Sub", "Mul", "Div", "Relu", "Selu", "Elu", "LeakyRelu", "Sigmoid", "Tanh", "Erf",
              "Sqrt", "Pow", "Exp", "Log", "Neg", "Abs", "Max", "Min", "Where", "Sum", "Reciprocal",
              "Gelu", "HardSigmoid", "Clip"}


def _shape_map(model):
    m = shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
            shapes[vi.name] = dims
    for i in m.graph.initializer:
        shapes[i.name] = list(i.dims)
    return m, shapes


def shapes_via_ort(model, ref):
    """Exact shapes of every intermediate tensor by running the model once in
    onnxruntime-node (optimizations off) on the reference inputs (batch
    REF_BATCH), with every node output exposed as a graph output."""
    import shutil
    import subprocess
    node_bin = shutil.which("node")
    if node_bin is None:
        raise RuntimeError("node not found")
    inf = shape_inference.infer_shapes(model)
    types = {}
    for vi in list(inf.graph.value_info) + list(inf.graph.output) + list(inf.graph.input):
        if vi.type.tensor_type.elem_type:
            types[vi.name] = vi.type.tensor_type.elem_type
    exp = onnx.ModelProto()
    exp.CopyFrom(model)
    have = {o.name for o in exp.graph.output}
    for node in exp.graph.node:
        for o in node.output:
            if o and o not in have and o in types:
                exp.graph.output.append(helper.make_tensor_value_info(o, types[o], None))
                have.add(o)
    with tempfile.TemporaryDirectory() as td:
        mp, ip = os.path.join(td, "exposed.onnx"), os.path.join(td, "inputs.json")
        onnx.save(exp, mp)
        json.dump([dict(name=i["name"], dtype=i["dtype"], shape=i["shape"],
                        file=os.path.join(MODEL_DIR, i["file"])) for i in ref["inputs"]], open(ip, "w"))
        res = subprocess.run([node_bin, os.path.join(HERE, "ort_shapes.js"), mp, ip],
                             capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise RuntimeError("ort_shapes.js failed: " + res.stderr[-2000:])
        shapes = json.loads(res.stdout)
    for i in model.graph.initializer:
        shapes[i.name] = list(i.dims)
    for i in ref["inputs"]:
        shapes[i["name"]] = list(i["shape"])
    return shapes


def count_flops(model, shapes=None):
    """Dense (MAC-based, 2 flops/MAC) and approximate elementwise op counts.
    `shapes` maps tensor name -> dims (from shapes_via_ort); if None, ONNX
    shape inference is used (needs a static-shape model)."""
    if shapes is None:
        model, shapes = _shape_map(model)
    dense, other, missing = 0, 0, []

    def shp(name):
        s = shapes.get(name)
        if s is None or any(d is None for d in s):
            missing.append(name)
            return None
        return s

    for node in model.graph.node:
        op = node.op_type
        if op in ("MatMul", "Gemm"):
            a, y = shp(node.input[0]), shp(node.output[0])
            if a is None or y is None:
                continue
            trans_a = any(at.name == "transA" and at.i for at in node.attribute)
            k = a[-2] if (op == "Gemm" and trans_a) else a[-1]
            dense += 2 * int(np.prod(y)) * k
        elif op == "Conv":
            w, y = shp(node.input[1]), shp(node.output[0])
            if w is None or y is None:
                continue
            dense += 2 * int(np.prod(y)) * int(np.prod(w[1:]))
        elif op in ("LSTM", "GRU", "RNN"):
            x, w, r = shp(node.input[0]), shp(node.input[1]), shp(node.input[2])
            if x is None or w is None or r is None:
                continue
            seq, batch = x[0], x[1]
            ndir, gh, inp = w
            hid = r[2]
            dense += 2 * seq * batch * ndir * gh * (inp + hid)
        elif op == "Einsum":
            eq = next(a.s.decode() for a in node.attribute if a.name == "equation")
            lhs = eq.split("->")[0].split(",")
            dims = {}
            for term, name in zip(lhs, node.input):
                s = shp(name)
                if s is None:
                    break
                for ch, d in zip(term, s):
                    dims[ch] = d
            dense += 2 * int(np.prod(list(dims.values())))
        elif op in ELEMWISE_1:
            y = shp(node.output[0])
            if y is not None:
                other += int(np.prod(y))
        elif op == "Softmax":
            y = shp(node.output[0])
            if y is not None:
                other += 5 * int(np.prod(y))
        elif op == "BatchNormalization":
            y = shp(node.output[0])
            if y is not None:
                other += 2 * int(np.prod(y))
        elif op == "LayerNormalization":
            y = shp(node.output[0])
            if y is not None:
                other += 8 * int(np.prod(y))
        elif op in ("ReduceMean", "ReduceSum", "GlobalAveragePool", "TopK"):
            x = shp(node.input[0])
            if x is not None:
                other += int(np.prod(x))
        elif op == "MaxPool":
            y = shp(node.output[0])
            ks = next(a.ints for a in node.attribute if a.name == "kernel_shape")
            if y is not None:
                other += int(np.prod(y)) * int(np.prod(ks))
    return dense, other, sorted(set(missing))


def param_stats(model):
    n, nbytes, n_float_inits, largest = 0, 0, 0, (None, 0)
    for i in model.graph.initializer:
        if i.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16):
            k = int(np.prod(i.dims)) if len(i.dims) else 1
            b = k * {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8,
                     TensorProto.BFLOAT16: 2}[i.data_type]
            n += k
            nbytes += b
            n_float_inits += 1
            if b > largest[1]:
                largest = (i.name, b)
    return n, nbytes, n_float_inits, largest


def op_histogram(model):
    h = {}
    for node in model.graph.node:
        key = node.op_type if not node.domain else f"{node.domain}:{node.op_type}"
        h[key] = h.get(key, 0) + 1
    return dict(sorted(h.items()))


def io_desc(model, spec):
    out = []
    init_names = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in init_names:
            continue
        t = vi.type.tensor_type
        dims = [d.dim_param if d.dim_param else d.dim_value for d in t.shape.dim]
        out.append(dict(name=vi.name, dtype=TensorProto.DataType.Name(t.elem_type).lower(), shape=dims))
    return out


def export(module, args, path, spec, dynamic=True):
    torch.onnx.export(module, args, path, input_names=spec["input_names"], output_names=spec["output_names"],
                      dynamic_axes=spec["dyn"] if dynamic else None, opset_version=spec["opset"],
                      do_constant_folding=True, export_params=True)


def write_ref(name, spec, module, model_path):
    """Reference I/O at batch REF_BATCH from torch eager, raw .bin files."""
    g = torch.Generator().manual_seed(777)
    args = spec["inputs"](REF_BATCH, g)
    with torch.no_grad():
        out = module(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    d = os.path.join(MODEL_DIR, "ref", name)
    os.makedirs(d, exist_ok=True)
    desc = {"batch": REF_BATCH, "inputs": [], "outputs": []}
    for kind, names, tensors in (("inputs", spec["input_names"], args), ("outputs", spec["output_names"], outs)):
        for n_, t in zip(names, tensors):
            a = t.detach().cpu().numpy()
            fn = f"{n_}.bin"
            a.tofile(os.path.join(d, fn))
            desc[kind].append(dict(name=n_, dtype=str(a.dtype), shape=list(a.shape),
                                   file=os.path.relpath(os.path.join(d, fn), MODEL_DIR)))
    return desc


def make_probe():
    """Trivial model (x + 1) to measure per-call binding/dispatch overhead."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])
    one = numpy_helper.from_array(np.ones((1,), np.float32), "one")
    g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y"])], "probe", [x], [y], [one])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_models.py")
    onnx.checker.check_model(m)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(MODEL_DIR, exist_ok=True)
    specs = build_specs()
    names = args.names or list(specs)
    meta_path = os.path.join(MODEL_DIR, "models.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) and args.names else {}
    meta["_about"] = ("Generated by make_models.py (torch %s, onnx %s). flops_dense_per_sample = 2*MACs of "
                      "MatMul/Gemm/Conv/LSTM/Einsum, from exact tensor shapes of one "
                      "onnxruntime run at batch 2 (ort_shapes.js) divided by 2; flops_other_per_sample = approx elementwise/normalisation/reduction op count. "
                      "weight_bytes = float initializers in the ONNX file." % (torch.__version__, onnx.__version__))
    for name in names:
        spec = specs[name]
        print(f"[{name}] building", flush=True)
        module = spec["build"]()
        path = os.path.join(MODEL_DIR, f"{name}.onnx")
        ex = spec["inputs"](1, torch.Generator().manual_seed(0))
        with torch.no_grad():
            export(module, ex, path, spec, dynamic=True)
        model = onnx.load(path)
        tied = None
        if spec.get("post"):
            tied = spec["post"](model)
        model.producer_name = "make_models.py"
        onnx.checker.check_model(model)
        onnx.save(model, path)
        n_par, nbytes, n_inits, largest = param_stats(model)
        torch_params = sum(p.numel() for p in module.parameters())
        ref = write_ref(name, spec, module, path)
        os.makedirs(os.path.join(MODEL_DIR, "torch"), exist_ok=True)
        torch.save(module.state_dict(), os.path.join(MODEL_DIR, "torch", f"{name}.pt"))
        try:  # exact shapes from one ORT run on the shipped graph at batch REF_BATCH
            dense, other, missing = count_flops(model, shapes_via_ort(model, ref))
            dense, other, flops_method = dense // REF_BATCH, other // REF_BATCH, "ort_shapes"
        except Exception as e:  # fall back to ONNX shape inference on a static export
            print(f"[{name}] ORT shape run unavailable ({str(e)[:200]}); using ONNX shape inference")
            with tempfile.TemporaryDirectory() as td:
                sp = os.path.join(td, "static.onnx")
                with torch.no_grad():
                    export(module, ex, sp, spec, dynamic=False)
                dense, other, missing = count_flops(onnx.load(sp))
            flops_method = "onnx_shape_inference_static_batch1"
        raw = open(path, "rb").read()
        meta[name] = dict(
            file=f"{name}.onnx", opset=spec["opset"], notes=spec["notes"], batches=spec["batches"],
            inputs=io_desc(model, spec), outputs=spec["output_names"],
            seq_len=spec.get("seq"),
            params=n_par, weight_bytes=nbytes, float_initializers=n_inits,
            largest_initializer={"name": largest[0], "bytes": largest[1]},
            torch_params=torch_params,
            flops_dense_per_sample=dense, flops_other_per_sample=other, flops_method=flops_method,
            flops_unresolved_tensors=missing[:10],
            file_bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest(),
            ops=op_histogram(model), tied_initializer=tied, ref=ref)
        print(f"[{name}] params={n_par} weight_bytes={nbytes} dense_flops/sample={dense/1e6:.2f}M "
              f"other={other/1e6:.2f}M file={len(raw)} ops={sum(meta[name]['ops'].values())}"
              + (f" MISSING {missing[:5]}" if missing else ""), flush=True)
    probe = make_probe()
    onnx.save(probe, os.path.join(MODEL_DIR, "_probe_add.onnx"))
    meta["_probe_add"] = dict(file="_probe_add.onnx", opset=13, notes="x+1 on [N,32]: per-call overhead probe",
                              batches=[1], inputs=[dict(name="x", dtype="float", shape=["N", 32])],
                              outputs=["y"], params=1, weight_bytes=4, flops_dense_per_sample=0,
                              flops_other_per_sample=32)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", meta_path)


if __name__ == "__main__":
    main()
