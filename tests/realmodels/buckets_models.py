"""The models and references of tests/realmodels/buckets.py (issue 31),
shared with tests/python/checks.py (model.run_lengths): exports with a
dynamic particle axis (DeepSets written here, ParticleNet as weaver-core
writes it, the Particle Transformer), jets of given lengths padded at
lmax, and ONNX Runtime run on each jet alone at its own length.

CASES: name -> (model maker, jets maker (lengths, lmax), symbol, buckets,
LMAX, the shortest length ONNX Runtime evaluates, extra kiln flags,
tolerance). reference(name, d) writes the model and computes what a test
compares with (run it without a sanitizer runtime preloaded: it starts
torch and node).
"""
import io
import json
import os
import sys
import warnings

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import part_model  # noqa: E402
import particlenet_weaver as pnw  # noqa: E402
from stitch_util import run  # noqa: E402

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


# ---- references ---------------------------------------------------------------

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



def reference(name, d):
    """Case `name` in folder d: the model written to d/model.onnx, one jet of
    every length 1..LMAX in a shuffled order zero padded at LMAX, and ONNX
    Runtime's outputs of each jet alone at its own length (at least the
    case's shortest, padded with zeros). Returns a dict: model, path, order,
    feed, refs (per jet, per output), axes (per input name, the axis of the
    dim or None), out_axes (per output)."""
    make, jets, symbol, buckets, lmax, lmin, extra, tol = CASES[name]
    model = make()
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    axes = bucket_axes(model, symbol)
    out_axes = [next((k for k, dm in enumerate(o.type.tensor_type.shape.dim)
                      if dm.dim_param == symbol), None) for o in model.graph.output]
    order = np.random.default_rng(1).permutation(np.arange(1, lmax + 1))
    feed = jets(list(order), lmax)
    refs = ort_per_length(path, d, [
        {k: at_length(v[i:i + 1], axes[k], max(int(order[i]), lmin), 0) for k, v in feed.items()}
        for i in range(len(order))])
    return {"model": model, "path": path, "order": order, "feed": feed, "refs": refs,
            "axes": axes, "out_axes": out_axes}


if __name__ == "__main__":
    # buckets_models.py NAME DIR: reference(NAME, DIR) into DIR/reference.pkl
    # (for a process that should not start torch or node itself).
    import pickle
    ref = reference(sys.argv[1], sys.argv[2])
    del ref["model"]
    _, _, ref["symbol"], ref["buckets"], _, _, ref["extra"], ref["tol"] = CASES[sys.argv[1]]
    with open(os.path.join(sys.argv[2], "reference.pkl"), "wb") as f:
        pickle.dump(ref, f)
