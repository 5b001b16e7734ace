"""ParticleNet as weaver-core defines it (weaver/nn/model/ParticleNet.py),
written here from its layer list, with random weights, exported with
torch.onnx the way weaver's --export-onnx does: inputs points [N, 2, P],
features [N, C, P], mask [N, 1, P], a dynamic batch axis.

The layers:
  - kNN: pairwise distance -|x_i|^2 + 2 x_i.x_j - |x_j|^2 from a MatMul,
    TopK(k + 1) over the last axis, the first neighbour (the point itself)
    sliced off;
  - the neighbour features, two ways:
      v1 (GPU form): idx + arange(N).view(-1, 1, 1) * P, flattened; the
         features transposed to [N, P, C], reshaped to [N*P, C], rows
         gathered (Gather axis 0), viewed back as [N, P, k, C] and permuted
         to [N, C, P, k];
      v2 (cpu_mode, what for_inference exports): the features transposed to
         [C, N, P], reshaped to [C, N*P], columns gathered (Gather axis 1),
         viewed as [C, N, P, k] and transposed to [N, C, P, k];
    then [x_i ; x_j - x_i] with x_i repeated k times;
  - EdgeConv block: Conv2d 1x1 (no bias) + BatchNorm2d + ReLU per layer, mean
    over k, shortcut Conv1d + BatchNorm1d (or the features themselves when
    the widths agree), ReLU of the sum;
  - the network: points and features masked, a coordinate shift 1e9 where
    the mask is 0 added to the kNN input, optional BatchNorm1d on the input
    features, the blocks' outputs (each times the mask) concatenated into a
    fusion Conv1d + BatchNorm1d + ReLU, the pooled mean over particles
    (divided by the count of real particles with use_counts), Linear + ReLU
    (+ Dropout), Linear, softmax (for_inference).

Variants (VARIANTS): AK4-like (2 blocks, k 16, 50 particles), AK8-like (3
blocks, k 16, 100 particles), an HLT-like one with other widths, use_fts_bn
and use_counts off, the v2 gather, at opsets 11, 13 and 17, a dynamic
particle axis (dynamic_p, as weaver's --export-onnx); keep_bn exports
with TrainingMode.PRESERVE, so the BatchNormalization nodes stay (EVAL, the
default, folds them into the Convs).

Negative models (BAD): the same network with the flat index offset wrong
(base times P - 1, base times P + 1, no base at all: their Gather reads
other samples' rows; indices from a TopK over an axis of 2P elements, whose
second half never wins but nothing proves it): kiln must not call them
batch-independent.
"""
import io
import warnings

import numpy as np


def _net(input_dims=8, conv_params=((16, (32, 32, 32)), (16, (64, 64, 64))), fc_params=((64, 0.1),),
         use_fts_bn=True, use_counts=True, gather="v1", bad=None, num_classes=5, seed=0):
    import torch
    from torch import nn

    def knn(x, k):
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        sq = torch.sum(x ** 2, dim=1, keepdim=True)
        dist = -sq - inner - sq.transpose(2, 1)
        if bad == "topk_axis":   # a TopK over an axis of 2P: indices up to 2P - 1 for all
            # the proof knows (the second half never wins here, but nothing says so)
            dist = torch.cat([dist, dist * 0 - float("inf")], dim=-1)
        return dist.topk(k=k + 1, dim=-1)[1][:, :, 1:]

    def neighbours(x, k, idx):
        n, c, p = x.size()
        scale = {"p_minus_1": p - 1, "p_plus_1": p + 1}.get(bad, p)
        if bad == "no_base":
            flat_idx = idx.reshape(-1)
        else:
            flat_idx = (idx + torch.arange(0, n).view(-1, 1, 1) * scale).view(-1)
        if gather == "v1":
            f = x.transpose(2, 1).reshape(-1, c)
            f = f[flat_idx, :].view(n, p, k, c).permute(0, 3, 1, 2).contiguous()
        else:
            f = x.transpose(0, 1).reshape(c, -1)
            f = f[:, flat_idx].view(c, n, p, k).transpose(1, 0).contiguous()
        ctr = x.view(n, c, p, 1).repeat(1, 1, 1, k)
        return torch.cat((ctr, f - ctr), dim=1)

    class EdgeConv(nn.Module):
        def __init__(self, k, cin, outs):
            super().__init__()
            self.k = k
            ch = [2 * cin] + list(outs)
            self.convs = nn.ModuleList(nn.Conv2d(ch[i], ch[i + 1], 1, bias=False) for i in range(len(outs)))
            self.bns = nn.ModuleList(nn.BatchNorm2d(o) for o in outs)
            self.acts = nn.ModuleList(nn.ReLU() for _ in outs)
            if cin == outs[-1]:
                self.sc = None
            else:
                self.sc = nn.Conv1d(cin, outs[-1], 1, bias=False)
                self.sc_bn = nn.BatchNorm1d(outs[-1])
            self.sc_act = nn.ReLU()

        def forward(self, points, features):
            x = neighbours(features, self.k, knn(points, self.k))
            for conv, bn, act in zip(self.convs, self.bns, self.acts):
                x = act(bn(conv(x)))
            fts = x.mean(dim=-1)
            sc = self.sc_bn(self.sc(features)) if self.sc is not None else features
            return self.sc_act(sc + fts)

    class ParticleNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.use_fts_bn, self.use_counts = use_fts_bn, use_counts
            if use_fts_bn:
                self.bn_fts = nn.BatchNorm1d(input_dims)
            self.edge_convs = nn.ModuleList()
            cin = input_dims
            for k, outs in conv_params:
                self.edge_convs.append(EdgeConv(k, cin, outs))
                cin = outs[-1]
            width = sum(outs[-1] for _, outs in conv_params)
            fused = int(np.clip(width // 128 * 128, 128, 1024))
            self.fusion_block = nn.Sequential(nn.Conv1d(width, fused, 1, bias=False),
                                              nn.BatchNorm1d(fused), nn.ReLU())
            fcs, cin = [], fused
            for ch, drop in fc_params:
                fcs.append(nn.Sequential(nn.Linear(cin, ch), nn.ReLU(), nn.Dropout(drop)))
                cin = ch
            fcs.append(nn.Linear(cin, num_classes))
            self.fc = nn.Sequential(*fcs)

        def forward(self, points, features, mask):
            points = points * mask
            features = features * mask
            shift = (mask == 0) * (0.0 if bad == "no_shift" else 1e9)   # no_shift: padded points
            # at the origin, neighbours of real points (padproof.py)
            if self.use_counts:
                counts = mask.float().sum(dim=-1)
                counts = torch.max(counts, torch.ones_like(counts))
            fts = self.bn_fts(features) * mask if self.use_fts_bn else features
            outs = []
            for i, conv in enumerate(self.edge_convs):
                pts = (points if i == 0 else fts) + shift
                fts = conv(pts, fts) * mask
                outs.append(fts)
            fts = self.fusion_block(torch.cat(outs, dim=1)) * mask
            x = fts.sum(dim=-1) / counts if self.use_counts else fts.mean(dim=-1)
            return torch.softmax(self.fc(x), dim=1)

    torch.manual_seed(seed)
    net = ParticleNet()
    g = torch.Generator().manual_seed(seed + 1)
    for m in net.modules():   # trained-looking BatchNorm statistics
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.rand(n, generator=g) * 0.4 - 0.2)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(n, generator=g) * 0.2 - 0.1)
    return net.eval()


# name -> (network arguments, particles P, opset)
AK4 = dict(input_dims=8, conv_params=((16, (32, 32, 32)), (16, (64, 64, 64))), fc_params=((64, 0.1),))
AK8 = dict(input_dims=10, conv_params=((16, (32, 32, 32)), (16, (64, 64, 64)), (16, (96, 96, 96))),
           fc_params=((128, 0.1),))
HLT = dict(input_dims=6, conv_params=((12, (24, 24)), (12, (48, 48))), fc_params=((48, 0.1),))
VARIANTS = {
    "ak4_op11": (AK4, 50, 11),
    "ak4_op13": (AK4, 50, 13),
    "ak4_op17": (AK4, 50, 17),
    "ak8_op13": (AK8, 100, 13),
    "ak8_op11": (AK8, 100, 11),
    "hlt_op17": (HLT, 40, 17),
    "ak4_nobn_nocounts_op13": (dict(AK4, use_fts_bn=False, use_counts=False), 50, 13),
    "ak4_v2_op11": (dict(AK4, gather="v2"), 50, 11),
    "hlt_v2_op17": (dict(HLT, gather="v2", use_counts=False), 40, 17),
    "ak4_bn_op13": (dict(AK4, keep_bn=True), 50, 13),
    "ak8_bn_v2_op17": (dict(AK8, keep_bn=True, gather="v2"), 100, 17),
    "ak4_dynp_op11": (dict(AK4, dynamic_p=True), 50, 11),
    "gathernd_op13": (dict(gathernd=True, input_dims=4, k=4), 12, 13),
}
SMALL = dict(input_dims=4, conv_params=((4, (8, 8)), (4, (16, 16))), fc_params=((16, 0.1),))
BAD = {
    "p_minus_1": (dict(SMALL, bad="p_minus_1"), 12, 13),
    "p_plus_1": (dict(SMALL, bad="p_plus_1"), 12, 13),
    "no_base": (dict(SMALL, bad="no_base"), 12, 13),
    "topk_axis": (dict(SMALL, bad="topk_axis"), 12, 13),
    "v2_p_minus_1": (dict(SMALL, bad="p_minus_1", gather="v2"), 12, 11),
    "flat_as_data": (dict(flat_as_data=True), 12, 13),
}


def gathernd_model(input_dims=4, k=4, points=12, widths=(8, 8), opset=13, seed=0):
    """One EdgeConv block written with onnx.helper the way a TensorFlow
    ParticleNet gathers (tf.gather(batch_dims=1) -> GatherND batch_dims 1 on
    [N, P, C] at the [N, P*k, 1] neighbour indices: no flat index), the kNN
    as the bench writes it, two 1x1 Conv + Relu, mean over k, then over the
    points: inputs points [N, 2, P], features [N, C, P]; output y [N, C']."""
    from onnx import TensorProto, helper, numpy_helper
    r = np.random.default_rng(seed)
    C, P = input_dims, points

    def const(name, arr):
        return numpy_helper.from_array(np.asarray(arr), name)

    ws, cin = [], 2 * C
    inits = [const("two", np.float32(2)), const("kk", np.array([k + 1], np.int64)),
             const("s1", np.array([1], np.int64)), const("sk", np.array([k + 1], np.int64)),
             const("ax2", np.array([2], np.int64)), const("ax1", np.array([1], np.int64)),
             const("ishape", np.array([0, -1, 1], np.int64)),
             const("nshape", np.array([0, P, k, C], np.int64)),
             const("eshape", np.array([1, 1, 1, k], np.int64)),
             const("ax3", np.array([3], np.int64))]
    for i, co in enumerate(widths):
        inits += [const("w%d" % i, (r.standard_normal((co, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)),
                  const("b%d" % i, (r.standard_normal(co) * 0.1).astype(np.float32))]
        cin = co
    N = helper.make_node
    nodes = [
        N("Transpose", ["points"], ["pt"], perm=[0, 2, 1]),
        N("MatMul", ["pt", "points"], ["mm"]),
        N("Mul", ["mm", "two"], ["mm2"]),
        N("Mul", ["points", "points"], ["p2"]),
        N("ReduceSum", ["p2", "ax1"], ["sq"], keepdims=1),
        N("Sub", ["mm2", "sq"], ["d1"]),
        N("Transpose", ["sq"], ["sqt"], perm=[0, 2, 1]),
        N("Sub", ["d1", "sqt"], ["dist"]),
        N("TopK", ["dist", "kk"], ["tv", "ti"], axis=-1),
        N("Slice", ["ti", "s1", "sk", "ax2"], ["idx"]),
        N("Transpose", ["features"], ["xt"], perm=[0, 2, 1]),
        N("Reshape", ["idx", "ishape"], ["ind"]),
        N("GatherND", ["xt", "ind"], ["g"], batch_dims=1),
        N("Reshape", ["g", "nshape"], ["nb"]),
        N("Transpose", ["nb"], ["nbt"], perm=[0, 3, 1, 2]),
        N("Unsqueeze", ["features", "ax3"], ["u"]),
        N("Expand", ["u", "eshape"], ["e"]),
        N("Sub", ["nbt", "e"], ["diff"]),
        N("Concat", ["e", "diff"], ["edge"], axis=1),
    ]
    at = "edge"
    for i in range(len(widths)):
        nodes += [N("Conv", [at, "w%d" % i, "b%d" % i], ["c%d" % i], kernel_shape=[1, 1]),
                  N("Relu", ["c%d" % i], ["r%d" % i])]
        at = "r%d" % i
    nodes += [N("ReduceMean", [at], ["agg"], axes=[-1], keepdims=0),
              N("ReduceMean", ["agg"], ["y"], axes=[2], keepdims=0)]
    g = helper.make_graph(nodes, "gathernd_edgeconv",
                          [helper.make_tensor_value_info("points", TensorProto.FLOAT, ["N", 2, P]),
                           helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", C, P])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", widths[-1]])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def flat_as_data_model(points=12, k=4, opset=13):
    """A flat index n*P + TopK index, as ParticleNet builds it, cast to float
    and added to the output instead of gathering: each row then depends on
    where its sample sits in the batch, and must not be stitched. Inputs
    points [N, 2, P], features [N, C, P] (unused but for the batch); output
    y [N, P, k]."""
    from onnx import TensorProto, helper, numpy_helper
    P = points
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             (("kk", [k]), ("zero", 0), ("one", 1), ("ax0", [0]), ("ax1", [1]), ("p", P),
              ("bshape", [-1, 1, 1]))]
    N = helper.make_node
    nodes = [
        N("MatMul", ["pt", "points"], ["mm"]),
        N("Transpose", ["points"], ["pt"], perm=[0, 2, 1]),
        N("TopK", ["mm", "kk"], ["tv", "ti"], axis=-1),
        N("Shape", ["points"], ["shp"]),
        N("Gather", ["shp", "zero"], ["nb"], axis=0),
        N("Range", ["zero", "nb", "one"], ["ar"]),
        N("Reshape", ["ar", "bshape"], ["ar3"]),
        N("Mul", ["ar3", "p"], ["base"]),
        N("Add", ["ti", "base"], ["flat"]),
        N("Cast", ["flat"], ["flatf"], to=TensorProto.FLOAT),
        N("Add", ["flatf", "tv"], ["y"]),
    ]
    nodes = nodes[1:2] + nodes[:1] + nodes[2:]
    g = helper.make_graph(nodes, "flat_as_data",
                          [helper.make_tensor_value_info("points", TensorProto.FLOAT, ["N", 2, P])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", P, k])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def inputs(args, batch, points, seed=3, empty_rows=()):
    """points [N, 2, P], features [N, C, P], mask [N, 1, P]: each sample's
    first 40-100 % of particles real, the rest zero (and masked); samples
    in empty_rows have no particle at all."""
    r = np.random.default_rng(seed)
    c = args.get("input_dims", 8)
    pts = r.standard_normal((batch, 2, points), dtype=np.float32)
    fts = r.standard_normal((batch, c, points), dtype=np.float32)
    mask = np.zeros((batch, 1, points), np.float32)
    for b in range(batch):
        real = 0 if b in empty_rows else int(r.integers(max(1, points * 2 // 5), points + 1))
        mask[b, :, :real] = 1
    if args.get("gathernd"):   # no mask input
        return {"points": pts, "features": fts}
    return {"points": pts * mask, "features": fts * mask, "mask": mask}


def export(name, batch=2, seed=3, table=None):
    """(ONNX model, {name: array}) of variant name (VARIANTS or BAD)."""
    import onnx
    import torch
    args, points, opset = (table or (BAD if name in BAD else VARIANTS))[name]
    args = dict(args)
    if args.pop("flat_as_data", False):
        return flat_as_data_model(points=points, opset=opset), None
    if args.pop("gathernd", False):
        return gathernd_model(opset=opset, points=points, **args), inputs(dict(args, gathernd=1), batch, points, seed)
    keep_bn = args.pop("keep_bn", False)
    dynamic_p = args.pop("dynamic_p", False)
    net = _net(**args)
    feed = inputs(args, batch, points, seed)
    f = io.BytesIO()
    dyn = {k: {0: "N"} for k in ("points", "features", "mask", "softmax")}
    if dynamic_p:   # weaver's --export-onnx: the particle axis dynamic too
        dyn = {k: ({0: "N"} if k == "softmax" else {0: "N", 2: "P"}) for k in dyn}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, tuple(torch.from_numpy(feed[k]) for k in ("points", "features", "mask")), f,
                          input_names=["points", "features", "mask"], output_names=["softmax"],
                          dynamic_axes=dyn, opset_version=opset,
                          # PRESERVE: eval-mode BatchNorms stay nodes, not folded into the Convs
                          training=torch.onnx.TrainingMode.PRESERVE if keep_bn else
                          torch.onnx.TrainingMode.EVAL)
    return onnx.load_from_string(f.getvalue()), feed


if __name__ == "__main__":   # write every variant: particlenet_weaver.py OUTDIR
    import os
    import sys
    import onnx
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n in list(VARIANTS) + list(BAD):
        m, _ = export(n)
        onnx.save(m, os.path.join(out, ("bad_" if n in BAD else "") + n + ".onnx"))
