"""A small Particle Transformer (ParT, arXiv:2202.03772) built the way
weaver-core's network defines it, with random weights, exported with
torch.onnx for the realmodels cases and the bench:

- two particle collections (charged/neutral "pf" and secondary vertices
  "sv"), each with features [N, C, P], 4-vectors (px, py, pz, E) [N, 4, P]
  and a mask [N, 1, P], concatenated along the particles;
- the particle embedding: BatchNorm1d over [N, C, P], then (LayerNorm,
  Linear, GELU) layers on [P, N, C];
- the pair embedding: the lower triangle of particle pairs (tril_indices
  written as ones -> tril -> nonzero, the form that exports), the pairwise
  kinematics ln kT, ln z, ln delta R and ln m^2 of each pair, BatchNorm1d and
  1x1 Conv1d/BatchNorm1d/GELU layers, scattered into a zero [N, H, P, P]
  tensor at (i, j) and (j, i): the additive attention mask of every head;
- particle blocks (LayerNorm, nn.MultiheadAttention with that mask and the
  padding mask, per-head scale by einsum, LayerNorm, the feed-forward with
  its LayerNorm and residual weights), class-attention blocks over
  [cls; particles], a final LayerNorm and Linear, softmax.

pair=False drops the pair embedding (no attention mask); tril=False computes
the features of all P x P pairs instead of the triangle and views them as
[N, H, P, P] (weaver's for_onnx path; Trilu needs opset 14)."""
import io
import math
import warnings

import numpy as np

import torch_util


def module(pair=True, tril=True, embed=64, heads=4, blocks=2, cls_blocks=1, classes=5,
           pf_dim=7, sv_dim=5, pair_dims=(16, 16)):
    import torch
    from torch import nn

    def tri_pairs(p, offset):
        """Row and column of every element of the lower triangle of a p x p
        matrix (torch.tril_indices, which torch.onnx cannot export)."""
        ij = torch.ones(p, p, dtype=torch.long).tril(offset).nonzero()
        return ij[:, 0], ij[:, 1]

    def kinematics(v, eps=1e-8):
        """pt, rapidity, phi of 4-vectors [N, 4, ...] (atan2 from arctan
        and signs, as ONNX has no Atan2)."""
        px, py, pz, e = v[:, 0:1], v[:, 1:2], v[:, 2:3], v[:, 3:4]
        pt = torch.sqrt((px * px + py * py).clamp(min=eps))
        rap = 0.5 * torch.log(1 + 2 * pz / (e - pz).clamp(min=1e-20))
        sx, sy = torch.sign(px), torch.sign(py)
        phi = torch.arctan(py / (px + (1 - sx * sx))) * sx * sx + \
            (sy + sx * (sy * sy - 1)) * (sx - 1) * (-math.pi / 2)
        return pt, rap, phi

    def mass2(v, eps=1e-8):
        return (v[:, 3:4] ** 2 - (v[:, 0:3] ** 2).sum(dim=1, keepdim=True)).clamp(min=eps)

    def pair_features(a, b, eps=1e-8):
        pta, rapa, phia = kinematics(a)
        ptb, rapb, phib = kinematics(b)
        dphi = torch.remainder(phia - phib + math.pi, 2 * math.pi) - math.pi
        dr = torch.sqrt((rapa - rapb) ** 2 + dphi ** 2)
        ptmin = torch.minimum(pta, ptb)
        lnkt = torch.log((ptmin * dr).clamp(min=eps))
        lnz = torch.log((ptmin / (pta + ptb).clamp(min=eps)).clamp(min=eps))
        lndr = torch.log(dr.clamp(min=eps))
        lnm2 = torch.log(mass2(a + b))
        return torch.cat([lnkt, lnz, lndr, lnm2], dim=1)

    def conv_stack(c, dims):
        layers = [nn.BatchNorm1d(c)]
        for d in dims:
            layers += [nn.Conv1d(c, d, 1), nn.BatchNorm1d(d), nn.GELU()]
            c = d
        return nn.Sequential(*layers)

    class Embed(nn.Module):
        def __init__(self, c, dims):
            super().__init__()
            self.bn = nn.BatchNorm1d(c)
            layers = []
            for d in dims:
                layers += [nn.LayerNorm(c), nn.Linear(c, d), nn.GELU()]
                c = d
            self.mlp = nn.Sequential(*layers)

        def forward(self, x):                      # [N, C, P] -> [P, N, D]
            return self.mlp(self.bn(x).permute(2, 0, 1))

    class PairEmbed(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = conv_stack(4, list(pair_dims) + [heads])

        def forward(self, v):                      # [N, 4, P] -> [N, H, P, P]
            n, _, p = v.shape
            if not tril:                           # every pair, both orders
                el = self.embed(pair_features(v.unsqueeze(-1), v.unsqueeze(-2)).view(n, 4, -1))
                return el.view(-1, heads, p, p)
            i, j = tri_pairs(p, 0)
            rep = v.unsqueeze(-1).repeat(1, 1, 1, p)
            el = self.embed(pair_features(rep[:, :, i, j], rep[:, :, j, i]))
            y = torch.zeros(n, heads, p, p, dtype=el.dtype)
            y[:, :, i, j] = el
            y[:, :, j, i] = el
            return y

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.hd = embed // heads
            self.norm1 = nn.LayerNorm(embed)
            self.attn = nn.MultiheadAttention(embed, heads)
            self.norm2 = nn.LayerNorm(embed)
            self.norm3 = nn.LayerNorm(embed)
            self.fc1 = nn.Linear(embed, 4 * embed)
            self.act = nn.GELU()
            self.norm4 = nn.LayerNorm(4 * embed)
            self.fc2 = nn.Linear(4 * embed, embed)
            self.c_attn = nn.Parameter(1 + 0.1 * torch.randn(heads))
            self.w_resid = nn.Parameter(1 + 0.1 * torch.randn(embed))

        def forward(self, x, pad, cls=None, mask=None):
            bias = torch.zeros_like(pad, dtype=x.dtype).masked_fill(pad, float("-inf"))
            if cls is not None:
                bias = torch.cat([torch.zeros_like(bias[:, :1]), bias], dim=1)
                res = cls
                u = self.norm1(torch.cat([cls, x], dim=0))
                x = self.attn(cls, u, u, key_padding_mask=bias, need_weights=False)[0]
            else:
                res = x
                x = self.norm1(x)
                x = self.attn(x, x, x, key_padding_mask=bias, attn_mask=mask,
                              need_weights=False)[0]
            t = x.size(0)
            x = torch.einsum("tbhd,h->tbdh", x.view(t, -1, heads, self.hd), self.c_attn)
            x = self.norm2(x.reshape(t, -1, embed)) + res
            res = x
            x = self.fc2(self.norm4(self.act(self.fc1(self.norm3(x)))))
            return x + self.w_resid * res

    class ParT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = Embed(pf_dim, [embed, embed])
            self.sv_embed = Embed(sv_dim, [embed, embed])
            self.pair = PairEmbed() if pair else None
            self.blocks = nn.ModuleList(Block() for _ in range(blocks))
            self.cls_blocks = nn.ModuleList(Block() for _ in range(cls_blocks))
            self.cls = nn.Parameter(0.02 * torch.randn(1, 1, embed))
            self.norm = nn.LayerNorm(embed)
            self.fc = nn.Linear(embed, classes)

        def forward(self, pf_x, pf_v, pf_m, sv_x, sv_v, sv_m):
            m = torch.cat([pf_m, sv_m], dim=2).bool()
            pad = ~m.squeeze(1)                                   # [N, P]
            x = torch.cat([self.embed(pf_x), self.sv_embed(sv_x)], dim=0)
            x = x.masked_fill(~m.permute(2, 0, 1), 0)             # [P, N, D]
            mask = None
            if self.pair is not None:
                v = torch.cat([pf_v, sv_v], dim=2)
                mask = self.pair(v).view(-1, v.size(-1), v.size(-1))   # [N*H, P, P]
            for b in self.blocks:
                x = b(x, pad, mask=mask)
            cls = self.cls.expand(1, x.size(1), -1)
            for b in self.cls_blocks:
                cls = b(x, pad, cls=cls)
            return torch.softmax(self.fc(self.norm(cls).squeeze(0)), dim=1)

    torch.manual_seed(7)
    return torch_util.random_bn_stats(ParT())


NAMES = ["pf_features", "pf_vectors", "pf_mask", "sv_features", "sv_vectors", "sv_mask"]


def inputs(batch, npf, nsv, seed=0, pf_dim=7, sv_dim=5):
    """Random jets: real particles first, then zero padding (mask 0); every
    jet has at least one real pf particle."""
    r = np.random.default_rng(seed)

    def coll(n, p, c):
        x = r.standard_normal((n, c, p), dtype=np.float32)
        p3 = r.standard_normal((n, 3, p)).astype(np.float32) * 10
        mass = r.uniform(0, 1, (n, 1, p)).astype(np.float32)
        e = np.sqrt((p3 ** 2).sum(axis=1, keepdims=True) + mass ** 2)
        v = np.concatenate([p3, e], axis=1).astype(np.float32)
        real = r.integers(1, p + 1, n)
        m = (np.arange(p)[None, None, :] < real[:, None, None]).astype(np.float32)
        return x * m, v * m, m

    pf = coll(batch, npf, pf_dim)
    sv = coll(batch, nsv, sv_dim)
    return dict(zip(NAMES, pf + sv))


def jets(batch, npf, nsv, seed=0, pf_dim=7, sv_dim=5, empty_rows=(), pf_real=None):
    """Plausible jets: a jet axis (eta in [-2.4, 2.4], any phi, pt in [30,
    1000] GeV), its particles (pt shares of the jet, pions or photons) and
    secondary vertices (masses 0.5-5 GeV) within about 0.4 of the axis in
    eta and phi, real ones first, sorted by pt, then zero padding (mask 0),
    as the 4-vectors (px, py, pz, E) with m >= 0 that ParT's pair features
    need (random 4-vectors give NaN). Rows in empty_rows have no particle;
    pf_real, if given, is each jet's count of pf particles."""
    r = np.random.default_rng(seed)
    eta0 = r.uniform(-2.4, 2.4, (batch, 1))
    phi0 = r.uniform(-np.pi, np.pi, (batch, 1))
    pt0 = r.uniform(30, 1000, (batch, 1))

    def coll(p, c, lo, mass, fixed=None):
        real = r.integers(lo, p + 1, batch)
        if fixed is not None:
            real = np.asarray(fixed)
        real[list(empty_rows)] = 0
        m = np.arange(p)[None, :] < real[:, None]
        share = -np.sort(-r.exponential(1.0, (batch, p)) * m, axis=1)
        pt = pt0 * share / np.maximum(share.sum(axis=1, keepdims=True), 1e-9)
        eta = eta0 + r.normal(0, 0.15, (batch, p))
        phi = phi0 + r.normal(0, 0.15, (batch, p))
        mm = mass(p)
        v = np.stack([pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta),
                      np.sqrt((pt * np.cosh(eta)) ** 2 + mm ** 2)], axis=1)
        x = r.standard_normal((batch, c, p))
        m = m[:, None, :]
        return [(a * m).astype(np.float32) for a in (x, v, m.astype(np.float64))]

    pf = coll(npf, pf_dim, 1, lambda p: np.where(r.uniform(size=(batch, p)) < 0.7, 0.1396, 0.0),
              pf_real)
    sv = coll(nsv, sv_dim, 0, lambda p: r.uniform(0.5, 5.0, (batch, p)))
    return dict(zip(NAMES, pf + sv))


def _wrap(full):
    import torch

    class Wrap(torch.nn.Module):
        """ParT without the pair embedding takes no 4-vectors."""

        def __init__(self):
            super().__init__()
            self.full = full

        def forward(self, pf_x, pf_m, sv_x, sv_m):
            return self.full(pf_x, None, pf_m, sv_x, None, sv_m)
    return Wrap().eval()


def export(pair=True, opset=17, dynamic=True, batch=2, npf=24, nsv=8, seed=0, tril=None, **kw):
    """(ModelProto, inputs): dynamic batch and particle axes as weaver's
    --export-onnx writes them (N, n_pf, n_sv), or everything fixed. The
    triangle of pairs from opset 14 (Trilu), all pairs before."""
    import onnx
    import torch
    mod = module(pair=pair, tril=opset >= 14 if tril is None else tril, **kw)
    feeds = inputs(batch, npf, nsv, seed)
    names = NAMES
    if not pair:                # the 4-vectors are unused: not inputs of the export
        names = [k for k in NAMES if "vectors" not in k]
        feeds = {k: feeds[k] for k in names}
        mod = _wrap(mod)
    args = tuple(torch.from_numpy(feeds[k]) for k in names)
    axes = None
    if dynamic:
        axes = {k: {0: "N", 2: "n_" + k.split("_")[0]} for k in names}
        axes["softmax"] = {0: "N"}
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(mod, args, f, input_names=names, output_names=["softmax"],
                          dynamic_axes=axes, opset_version=opset)
    return onnx.load_from_string(f.getvalue()), feeds


if __name__ == "__main__":
    import sys
    import onnx
    m, _ = export(opset=int(sys.argv[2]) if len(sys.argv) > 2 else 13)
    onnx.save(m, sys.argv[1])
