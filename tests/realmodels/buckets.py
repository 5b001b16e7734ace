#!/usr/bin/python3
"""Buckets on the particle axis (issue 31): `kiln compile --dim P=v1,...,vk`
and kiln_run_lengths, against ONNX Runtime evaluated at every jet's exact
length.

Each case is an export with a dynamic particle axis: ParticleNet as
weaver-core writes it (particlenet_weaver.py: AK4 with k 16 and at most 50
particles, its v2 gather at opset 11, AK8 at most 100, an HLT-like one with k
12), the Particle Transformer with masks (part_model.py: the pair embedding
at opset 17, none at opset 13; n_sv fixed at 4 with --dim, buckets on n_pf),
and a DeepSets model written here (a masked sum over the particles, then an
MLP; a per-particle output that carries the axis; [N, C, P] and [N, P, C]
layouts, opsets 13 and 17, the mask an input or computed from the features).

For every case: one jet of each length 1..LMAX in a shuffled order, run
through lengths_rows.c (kiln_run_lengths on all of them at once; compiled at
batch 1 and 8, so each bucket's jets are stitched): once laid out at LMAX + 3
with NaN past every jet's length (kiln_run_lengths reads only the first
`length` positions and pads with zeros itself) and lmax given, once at LMAX
with zero padding and lmax derived. Every jet's outputs must match ONNX
Runtime's run of that jet alone at its own length, and a per-particle
output must be exactly zero past the jet's length. A kNN with k neighbours
needs k + 1 points in ONNX Runtime: a shorter jet is compared with ONNX
Runtime at k + 1 points, the rest padded the model's way (features zero,
mask zero), which is what kiln computes in the smallest bucket.
lengths_rows.c also checks KILN_LENGTH for a length past the largest
bucket, past lmax and below zero, and KILN_USAGE for a model without
buckets. The context of the bucketed model must be no larger than the
largest bucket's own (lengths_rows.c: its arena, staging and plans) and no
larger than that of the model compiled at the largest bucket alone
(NAME_CONTEXT_BYTES of both headers).

Tolerances: rtol 1e-3, atol 1e-5 (ParticleNet, DeepSets); the Particle
Transformer within rtol 1e-2, atol 2e-3 (part_stitch.py's TOL_EXPORTS: its
pair features of physical jets move with the last bit of the inputs).

usage: buckets.py KILN SOURCE_ROOT LIBKILN_A OUTDIR [CASE...]
(env CC, SANFLAGS; exits 77, "skipped", without ONNX Runtime)
"""
import io
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import part_model  # noqa: E402
import particlenet_weaver as pnw  # noqa: E402
from stitch_util import Stitcher, run, start  # noqa: E402

ST = Stitcher(*sys.argv[1:4])
KILN, OUT = sys.argv[1], sys.argv[4]
WANTED = set(sys.argv[5:])
TOL = (1e-3, 1e-5)
TOL_PART = (1e-2, 2e-3)


# ---- the models ---------------------------------------------------------------

def deepsets(layout="ncp", mask_input=True, opset=13, c=6, h=32, classes=3, seed=0):
    """DeepSets: phi per particle, masked sum, rho; outputs the class
    probabilities [N, classes] and a per-particle score ([N, P] for
    [N, C, P] inputs, [N, P, 2] for [N, P, C])."""
    import torch
    from torch import nn
    torch.manual_seed(seed)
    ncp = layout == "ncp"

    class DeepSets(nn.Module):
        def __init__(self):
            super().__init__()
            lin = (lambda a, b: nn.Conv1d(a, b, 1)) if ncp else nn.Linear
            self.phi = nn.Sequential(lin(c, h), nn.ReLU(), lin(h, h), nn.ReLU())
            self.score = lin(h, 1 if ncp else 2)
            self.rho = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, classes))

        def forward(self, x, mask=None):
            axis = 2 if ncp else 1
            if mask is None:    # real particles have some non-zero feature
                mask = (x.abs().sum(dim=1 if ncp else 2, keepdim=True) > 0).float()
            z = self.phi(x) * mask
            probs = torch.softmax(self.rho(z.sum(dim=axis)), dim=1)
            per = self.score(z) * mask
            return probs, per.squeeze(1) if ncp else per

    net = DeepSets().eval()
    names = ["x", "mask"] if mask_input else ["x"]
    p = 5
    ex = [torch.zeros(2, c, p) if ncp else torch.zeros(2, p, c)]
    if mask_input:
        ex.append(torch.ones(2, 1, p) if ncp else torch.ones(2, p, 1))
    axes = {k: {0: "N", (2 if ncp else 1): "P"} for k in names}
    axes["probs"] = {0: "N"}
    axes["per_particle"] = {0: "N", 1: "P"}
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, tuple(ex), f, input_names=names,
                          output_names=["probs", "per_particle"], dynamic_axes=axes,
                          opset_version=opset)
    return onnx.load_from_string(f.getvalue())


def deepsets_jets(lengths, lmax, layout="ncp", mask_input=True, c=6, seed=5):
    r = np.random.default_rng(seed)
    n = len(lengths)
    m = (np.arange(lmax)[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)
    x = r.standard_normal((n, c, lmax)).astype(np.float32) * m[:, None, :]
    mask = m[:, None, :]
    if layout != "ncp":
        x, mask = x.transpose(0, 2, 1).copy(), mask.transpose(0, 2, 1).copy()
    return {"x": x, "mask": mask} if mask_input else {"x": x}


def particlenet(args, opset):
    net_args = dict(args)
    m, _ = pnw.export("case", table={"case": (dict(net_args, dynamic_p=True), 20, opset)})
    return m


def particlenet_jets(args, lengths, lmax, seed=3):
    r = np.random.default_rng(seed)
    n, c = len(lengths), args.get("input_dims", 8)
    m = (np.arange(lmax)[None, :] < np.asarray(lengths)[:, None]).astype(np.float32)[:, None, :]
    pts = r.standard_normal((n, 2, lmax)).astype(np.float32) * m
    fts = r.standard_normal((n, c, lmax)).astype(np.float32) * m
    return {"points": pts, "features": fts, "mask": m}


def part(pair, opset):
    m, _ = part_model.export(pair=pair, opset=opset, npf=12, nsv=4)
    return m


def part_jets(pair, lengths, lmax, nsv=4):
    feed = part_model.jets(len(lengths), lmax, nsv, seed=11, pf_real=lengths)
    if not pair:
        feed = {k: v for k, v in feed.items() if "vectors" not in k}
    return feed


# name -> (model maker, jets maker (lengths, lmax), symbol, buckets, LMAX,
#          the shortest length ONNX Runtime evaluates, extra flags, tolerance)
CASES = {
    "deepsets_ncp_op13": (lambda: deepsets("ncp", True, 13),
                          lambda L, lm: deepsets_jets(L, lm, "ncp", True),
                          "P", "8,16,32,64", 64, 1, [], TOL),
    "deepsets_npc_op17": (lambda: deepsets("npc", True, 17),
                          lambda L, lm: deepsets_jets(L, lm, "npc", True),
                          "P", "10,30,50", 50, 1, [], TOL),
    "deepsets_nomask_op17": (lambda: deepsets("ncp", False, 17),
                             lambda L, lm: deepsets_jets(L, lm, "ncp", False),
                             "P", "16,50", 50, 1, [], TOL),
    "pn_ak4_op13": (lambda: particlenet(pnw.AK4, 13),
                    lambda L, lm: particlenet_jets(pnw.AK4, L, lm),
                    "P", "20,32,50", 50, 17, [], TOL),
    "pn_ak4_v2_op11": (lambda: particlenet(dict(pnw.AK4, gather="v2"), 11),
                       lambda L, lm: particlenet_jets(pnw.AK4, L, lm),
                       "P", "24,50", 50, 17, [], TOL),
    "pn_ak8_op13": (lambda: particlenet(pnw.AK8, 13),
                    lambda L, lm: particlenet_jets(pnw.AK8, L, lm),
                    "P", "24,48,100", 100, 17, [], TOL),
    "pn_hlt_op17": (lambda: particlenet(pnw.HLT, 17),
                    lambda L, lm: particlenet_jets(pnw.HLT, L, lm),
                    "P", "16,40", 40, 13, [], TOL),
    "part_tril_op17": (lambda: part(True, 17), lambda L, lm: part_jets(True, L, lm),
                       "n_pf", "8,16,32", 32, 1, ["--dim", "n_sv=4"], TOL_PART),
    "part_nopair_op13": (lambda: part(False, 13), lambda L, lm: part_jets(False, L, lm),
                         "n_pf", "8,32", 32, 1, ["--dim", "n_sv=4"], TOL_PART),
}


# ---- running ------------------------------------------------------------------

def bucket_axes(model, symbol):
    """Per graph input name, the axis whose dim is symbol (or None)."""
    init = {i.name for i in model.graph.initializer}
    out = {}
    for v in model.graph.input:
        if v.name in init:
            continue
        dims = v.type.tensor_type.shape.dim
        out[v.name] = next((k for k, d in enumerate(dims) if d.dim_param == symbol), None)
    return out


def at_length(arr, axis, length, fill):
    """arr with its `axis` cut or padded to `length`, new positions `fill`."""
    if axis is None:
        return arr
    have = arr.shape[axis]
    if length <= have:
        return np.take(arr, range(length), axis=axis)
    pad = [(0, 0)] * arr.ndim
    pad[axis] = (0, length - have)
    return np.pad(arr, pad, constant_values=fill)


def header_define(path, macro):
    with open(path) as f:
        for line in f:
            if line.startswith("#define %s " % macro):
                return int(line.split()[2])
    raise RuntimeError("%s defines no %s" % (path, macro))


def build(name, d, model_path, symbol, buckets, extra):
    r = run([KILN, "compile", model_path, "--batch", "1,8", "--dim", "%s=%s" % (symbol, buckets),
             "--name", "t", "-o", d] + extra)
    if r.returncode:
        ST.fail("%s: kiln compile: %s" % (name, r.stderr.strip()))
        return None
    # The context of every bucket is no larger than that of the model compiled
    # at the largest bucket alone (kiln_run at the fixed maximum).
    top = buckets.split(",")[-1]
    r = run([KILN, "compile", model_path, "--batch", "1,8", "--dim", "%s=%s" % (symbol, top),
             "--name", "f", "--no-cc", "-o", os.path.join(d, "fixed")] + extra)
    if r.returncode:
        ST.fail("%s: kiln compile at %s=%s: %s" % (name, symbol, top, r.stderr.strip()))
        return None
    got, fixed = (header_define(os.path.join(dd, nm + ".h"), nm.upper() + "_CONTEXT_BYTES")
                  for dd, nm in ((d, "t"), (os.path.join(d, "fixed"), "f")))
    if got > fixed:
        ST.fail("%s: the bucketed context is %d bytes, more than the %d at %s=%s alone"
                % (name, got, fixed, symbol, top))
    else:
        print("%s: context %d bytes with buckets %s, %d at %s=%s alone"
              % (name, got, buckets, fixed, symbol, top))
    exe = os.path.join(d, "lengths_rows")
    # The generated C, with the typed NAME_run_lengths, builds warning-free.
    r = run(ST.cc + ["-std=c11", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", d,
                     "-I", os.path.join(ST.src, "include"), os.path.join(d, "t.c")])
    if r.returncode:
        ST.fail("%s: the generated C warns: %s" % (name, r.stderr.strip()[:2000]))
    r = run(ST.cc + ["-std=c11", "-O1", "-I", d, "-I", os.path.join(ST.src, "include"),
                     "-DMODEL=t_model", "-include", os.path.join(d, "t.h"),
                     os.path.join(HERE, "lengths_rows.c"), os.path.join(d, "t.o"), ST.libkiln,
                     "-lm"] + ST.san + ["-o", exe])
    if r.returncode:
        ST.fail("%s: cc: %s" % (name, r.stderr.strip()))
        return None
    return exe


def kiln_lengths(exe, d, tag, feed, order, lengths, lfile, lpass, nout):
    """kiln_run_lengths' outputs (arrays in the caller's layout) or None."""
    files = []
    for k, arr in enumerate(feed.values()):
        files.append(os.path.join(d, "%s_in%d.bin" % (tag, k)))
        np.ascontiguousarray(arr).tofile(files[-1])
    lf = os.path.join(d, "%s_lengths.bin" % tag)
    np.asarray(lengths, np.int64).tofile(lf)
    outs = [os.path.join(d, "%s_out%d.bin" % (tag, k)) for k in range(nout)]
    r = run([exe, str(len(lengths)), str(lfile), str(lpass), lf] + files + outs)
    if r.returncode:
        ST.fail("%s: lengths_rows: %s" % (d, r.stderr.strip()))
        return None
    return [np.fromfile(f, np.float32) for f in outs]


def ort_per_length(model_path, d, feeds):
    """ONNX Runtime's outputs of each feed (one session): a list per feed."""
    spec = {"model": model_path, "runs": []}
    for i, feed in enumerate(feeds):
        rd = os.path.join(d, "ort%d" % i)
        os.makedirs(rd, exist_ok=True)
        ins = []
        for k, (nm, arr) in enumerate(feed.items()):
            f = os.path.join(rd, "in%d.bin" % k)
            np.ascontiguousarray(arr, np.float32).tofile(f)
            ins.append({"name": nm, "dims": list(arr.shape), "file": f})
        spec["runs"].append({"outdir": rd, "inputs": ins})
    with open(os.path.join(d, "ort_spec.json"), "w") as f:
        json.dump(spec, f)
    r = run(["node", os.path.join(HERE, "ort_runs.js"), os.path.join(d, "ort_spec.json")])
    if r.returncode:
        raise RuntimeError("ONNX Runtime: " + r.stderr.strip())
    res = []
    for i in range(len(feeds)):
        rd = os.path.join(d, "ort%d" % i)
        with open(os.path.join(rd, "outputs.json")) as f:
            meta = json.load(f)
        res.append([np.fromfile(os.path.join(rd, "output_%d.bin" % k), np.float32).reshape(o["dims"])
                    for k, o in enumerate(meta)])
    return res


def check_case(name):
    t0 = time.time()
    make, jets, symbol, buckets, lmax, lmin, extra, tol = CASES[name]
    d = os.path.join(OUT, name)
    os.makedirs(d)
    model = make()
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    exe = build(name, d, path, symbol, buckets, extra)
    if not exe:
        return
    axes = bucket_axes(model, symbol)
    out_axes = [next((k for k, dm in enumerate(o.type.tensor_type.shape.dim) if dm.dim_param == symbol),
                     None) for o in model.graph.output]
    order = np.random.default_rng(1).permutation(np.arange(1, lmax + 1))
    feed = jets(list(order), lmax)                  # zero padded at lmax, in `order`
    # ONNX Runtime: each jet alone at its own length (at least lmin, padded with zeros).
    refs = ort_per_length(path, d, [
        {k: at_length(v[i:i + 1], axes[k], max(int(order[i]), lmin), 0) for k, v in feed.items()}
        for i in range(len(order))])
    nout = len(model.graph.output)
    garbage = {k: at_length(v, axes[k], lmax + 3, np.nan) for k, v in feed.items()}
    for k, v in garbage.items():
        if axes[k] is not None:   # NaN past each jet's length: never read
            idx = np.arange(lmax + 3).reshape([-1 if a == axes[k] else 1 for a in range(v.ndim)])
            v[np.broadcast_to(idx >= order.reshape([-1] + [1] * (v.ndim - 1)), v.shape)] = np.nan
    worst, before = 0.0, len(ST.failures)
    for tag, f, lfile, lpass in (("nan", garbage, lmax + 3, lmax + 3), ("exact", feed, lmax, -1)):
        got = kiln_lengths(exe, d, tag, f, order, order, lfile, lpass, nout)
        if got is None:
            return
        for o in range(nout):
            y = got[o].reshape(len(order), -1)
            for i, length in enumerate(order):
                ref = refs[i][o][0]
                row = y[i]
                if out_axes[o] is not None:
                    shape = list(ref.shape)
                    shape[out_axes[o] - 1] = lfile
                    row = row.reshape(shape)
                    tail = np.take(row, range(length, lfile), axis=out_axes[o] - 1)
                    if np.any(tail != 0):
                        ST.fail("%s (%s): output %d of the jet of length %d is not zero past it"
                                % (name, tag, o, length))
                    row = np.take(row, range(length), axis=out_axes[o] - 1)
                    ref = np.take(ref, range(length), axis=out_axes[o] - 1)
                row = row.reshape(ref.shape)
                err = float(np.abs(row - ref).max()) if ref.size else 0.0
                worst = max(worst, err)
                if not np.allclose(row, ref, rtol=tol[0], atol=tol[1]):
                    ST.fail("%s (%s): output %d of the jet of length %d differs from ONNX "
                            "Runtime by %.3g" % (name, tag, o, length, err))
    if len(ST.failures) == before:
        print("%s: %d jets of lengths 1..%d in buckets %s: every output within rtol %g, atol %g "
              "of ONNX Runtime at its length (largest difference %.3g)"
              % (name, len(order), lmax, buckets, tol[0], tol[1], worst))
    print("  (%.1f s)" % (time.time() - t0))


def main():
    if not start(OUT):
        return 77
    for name in CASES:
        if not WANTED or name in WANTED:
            check_case(name)
    if ST.failures:
        print("%d failures" % len(ST.failures))
        return 1
    print("buckets: every case passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
