"""Real-model patterns for run.py (the decorators: registry.py)."""
import io
import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from registry import Cases

_cases = Cases()
RUN, ERRORS, COMPILES = _cases.RUN, _cases.ERRORS, _cases.COMPILES
run, error, compiles = _cases.run, _cases.error, _cases.compiles


def rng(seed=13):
    return np.random.default_rng(seed)


def torch_export(make, args, names, dynamic, opset=13, outputs=("y",)):
    """Export the module make() builds; its weights are drawn after seeding,
    so a case's model is the same bytes whichever cases ran before it."""
    import warnings
    import torch
    torch.manual_seed(0)
    module = make()
    f = io.BytesIO()
    module.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, f, input_names=list(names), output_names=list(outputs),
                          dynamic_axes=dynamic, opset_version=opset)
    return onnx.load_from_string(f.getvalue())


def model(nodes, inputs, outputs, inits=(), opset=13, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vinfo(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# ---- loader repair -------------------------------------------------------


def ddx_module():
    import torch
    from torch import nn

    class DDX(nn.Module):
        """DeepDoubleX-like: per-track and per-vertex conv stacks, pooled,
        joined with global features, a dense head and softmax."""

        def __init__(self):
            super().__init__()
            self.trk = nn.Sequential(nn.Conv1d(8, 16, 1), nn.BatchNorm1d(16), nn.ReLU(),
                                     nn.Conv1d(16, 8, 1), nn.ReLU())
            self.sv = nn.Sequential(nn.Conv1d(5, 8, 1), nn.ReLU())
            self.glob = nn.Linear(6, 8)
            self.head = nn.Sequential(nn.Linear(24, 16), nn.ReLU(), nn.Linear(16, 3))

        def forward(self, glob, trk, sv):
            t = self.trk(trk.transpose(1, 2)).mean(dim=2)
            s = self.sv(sv.transpose(1, 2)).max(dim=2).values
            z = torch.cat([torch.relu(self.glob(glob)), t, s], dim=1)
            return torch.softmax(self.head(z), dim=1)
    return DDX()


@run
def unsorted_deepdoublex():
    """A DeepDoubleX-style export whose nodes are shuffled: ORT sorts them."""
    import torch
    r = rng()
    glob = r.standard_normal((4, 6), dtype=np.float32)
    trk = r.standard_normal((4, 20, 8), dtype=np.float32)
    sv = r.standard_normal((4, 5, 5), dtype=np.float32)
    m = torch_export(ddx_module, (torch.from_numpy(glob), torch.from_numpy(trk),
                                    torch.from_numpy(sv)),
                     ["glob", "trk", "sv"], {"glob": {0: "N"}, "trk": {0: "N"}, "sv": {0: "N"}})
    nodes = list(m.graph.node)
    random.Random(13).shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m, {"glob": glob, "trk": trk, "sv": sv}


def dup_const_model():
    x = vinfo("x", TensorProto.FLOAT, ["N", 4])
    y = vinfo("y", TensorProto.FLOAT, ["N", 4])
    c1 = helper.make_node("Constant", [], ["c"], name="c_first",
                          value=numpy_helper.from_array(np.full(4, 2, np.float32)))
    c2 = helper.make_node("Constant", [], ["c"], name="c_last",
                          value=numpy_helper.from_array(np.arange(4, dtype=np.float32)))
    mul = helper.make_node("Mul", ["x", "c"], ["y"], name="mul")
    return model([mul, c1, c2], [x], [y])


@run
def duplicate_constants():
    """One name from two Constant nodes (after its reader): the last is kept."""
    return dup_const_model(), {"x": rng().standard_normal((3, 4), dtype=np.float32)}


@run
def outputs_passed_through():
    """Graph outputs that are a graph input, an initializer and a Constant's
    value (ONNX Runtime hands them back as they are), beside a computed one."""
    x = vinfo("x", TensorProto.FLOAT, ["N", 4])
    outs = [vinfo("y", TensorProto.FLOAT, ["N", 4]), vinfo("x", TensorProto.FLOAT, ["N", 4]),
            vinfo("w", TensorProto.FLOAT, [4]), vinfo("k", TensorProto.INT64, [3])]
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"], name="mul"),
             helper.make_node("Constant", [], ["k"], name="kc",
                              value=numpy_helper.from_array(np.array([3, -1, 7], np.int64)))]
    w = numpy_helper.from_array(np.array([0.5, -2, 3, 1.25], np.float32), "w")
    return model(nodes, [x], outs, [w]), {"x": rng().standard_normal((3, 4), dtype=np.float32)}


@error("warning: ")
def duplicate_constants_warns():
    return dup_const_model()


def const_over_init_model():
    x = vinfo("x", TensorProto.FLOAT, ["N", 4])
    y = vinfo("y", TensorProto.FLOAT, ["N", 4])
    c = helper.make_node("Constant", [], ["c"], name="c_node",
                         value=numpy_helper.from_array(np.arange(4, dtype=np.float32)))
    mul = helper.make_node("Mul", ["x", "c"], ["y"], name="mul")
    init = numpy_helper.from_array(np.full(4, 2, np.float32), "c")
    return model([mul, c], [x], [y], [init])


@run
def constant_over_initializer():
    """A Constant node producing an initializer's name: the Constant wins."""
    return const_over_init_model(), {"x": rng().standard_normal((3, 4), dtype=np.float32)}


@error("warning: ")
def constant_over_initializer_warns():
    return const_over_init_model()


@error("error: ")
def cycle():
    x = vinfo("x", TensorProto.FLOAT, [2])
    y = vinfo("y", TensorProto.FLOAT, [2])
    a = helper.make_node("Add", ["x", "b"], ["a"], name="add_a")
    b = helper.make_node("Relu", ["a"], ["b"], name="relu_b")
    o = helper.make_node("Neg", ["a"], ["y"], name="neg")
    return model([o, a, b], [x], [y])


# ---- shape arithmetic ------------------------------------------------------


def part_module():
    import torch
    from torch import nn

    class PartBlock(nn.Module):
        """ParT-style: pair features over the lower triangle of particle
        pairs (tril_indices as ones -> tril -> nonzero, all from shapes), a
        class token expanded to the batch, attention of the token over the
        particles."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(4, 8)
            self.pair = nn.Linear(2, 1)
            self.cls = nn.Parameter(torch.randn(1, 1, 8))
            self.att = nn.MultiheadAttention(8, 2, batch_first=True)
            self.out = nn.Linear(8, 3)

        def forward(self, x):                       # x: [N, P, 4]
            p = x.size(1)
            h = self.embed(x)                        # [N, P, 8]
            ij = torch.ones(p, p, dtype=torch.long, device=x.device).tril(-1).nonzero()
            i, j = ij[:, 0], ij[:, 1]
            pt = x[:, :, 0]
            feats = torch.stack([pt[:, i] - pt[:, j], pt[:, i] * pt[:, j]], dim=-1)
            w = self.pair(feats).squeeze(-1).mean(dim=1, keepdim=True)   # [N, 1]
            cls = self.cls.expand(x.size(0), -1, -1)                     # [N, 1, 8]
            a, _ = self.att(cls, h, h, need_weights=False)
            return self.out(a.squeeze(1) + w)
    return PartBlock()


@run
def part_tril_expand():
    import torch
    x = rng(1).standard_normal((3, 6, 4), dtype=np.float32)
    m = torch_export(part_module, (torch.from_numpy(x),), ["x"], {"x": {0: "N", 1: "P"}},
                     opset=14)
    return m, {"x": x}


@compiles("--shape", "x=N,6,4", "--batch", "1,3,5")
def part_per_batch_size():
    """The expanded class token's shape depends on the batch: folded per size."""
    return part_tril_expand()[0]


@run
def tf_tensordot_chain():
    """TF Tensordot: Shape -> Cast(int32) -> Gather -> ReduceProd -> Concat ->
    Cast(int64) -> Reshape, a MatMul, and the output shape the same way."""
    r = rng(2)
    w = numpy_helper.from_array(r.standard_normal((5, 3), dtype=np.float32), "w")
    free = numpy_helper.from_array(np.array([0, 1], np.int32), "free_axes")
    fdim = numpy_helper.from_array(np.array([5], np.int32), "fdim")
    kdim = numpy_helper.from_array(np.array([3], np.int32), "kdim")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Cast", ["shape"], ["shape32"], to=TensorProto.INT32),
        helper.make_node("Gather", ["shape32", "free_axes"], ["free"], axis=0),
        helper.make_node("ReduceProd", ["free"], ["prod"], keepdims=1),
        helper.make_node("Concat", ["prod", "fdim"], ["flat32"], axis=0),
        helper.make_node("Cast", ["flat32"], ["flat"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "flat"], ["x2"]),
        helper.make_node("MatMul", ["x2", "w"], ["y2"]),
        helper.make_node("Concat", ["free", "kdim"], ["out32"], axis=0),
        helper.make_node("Cast", ["out32"], ["out"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["y2", "out"], ["y"]),
    ]
    m = model(nodes, [vinfo("x", TensorProto.FLOAT, ["N", 7, 5])],
              [vinfo("y", TensorProto.FLOAT, ["N", 7, 3])], [w, free, fdim, kdim])
    return m, {"x": r.standard_normal((2, 7, 5), dtype=np.float32)}


@run
def shape_float_min_slice():
    """Shape -> Cast(float) -> Min -> Cast(int64) -> Slice end."""
    cap = numpy_helper.from_array(np.array([4.0], np.float32), "cap")
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    zero = numpy_helper.from_array(np.array([0], np.int64), "zero")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["t"], axis=0),
        helper.make_node("Cast", ["t"], ["tf"], to=TensorProto.FLOAT),
        helper.make_node("Min", ["tf", "cap"], ["m"]),
        helper.make_node("Cast", ["m"], ["end"], to=TensorProto.INT64),
        helper.make_node("Slice", ["x", "zero", "end", "one"], ["y"]),
    ]
    m = model(nodes, [vinfo("x", TensorProto.FLOAT, ["N", 9])],
              [vinfo("y", TensorProto.FLOAT, ["N", 4])], [cap, one, zero])
    return m, {"x": rng(3).standard_normal((3, 9), dtype=np.float32)}


@run
def shape_where_equal_expand():
    """PyTorch's expand(-1): Equal(shape, -1) -> Where(shape of x) -> Expand,
    plus Range/ArgMax/CumSum on shapes in int32 and float."""
    neg = numpy_helper.from_array(np.array([1, -1, -1], np.int64), "want")
    m1 = numpy_helper.from_array(np.array([-1], np.int64), "m1")
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Equal", ["want", "m1"], ["is_neg"]),
        helper.make_node("Where", ["is_neg", "sx", "want"], ["target"]),
        helper.make_node("Expand", ["bias", "target"], ["be"]),
        helper.make_node("Add", ["x", "be"], ["y"]),
        helper.make_node("Cast", ["sx"], ["sxf"], to=TensorProto.FLOAT),
        helper.make_node("CumSum", ["sxf", "zero"], ["cs"]),
        helper.make_node("ArgMax", ["cs"], ["am"], axis=0, keepdims=1),
        helper.make_node("Cast", ["am"], ["amf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["y", "amf"], ["z"]),
    ]
    inits = [neg, m1, numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 1, 4),
                                              "bias"),
             numpy_helper.from_array(np.array(0, np.int32), "zero")]
    m = model(nodes, [vinfo("x", TensorProto.FLOAT, ["N", 2, 4])],
              [vinfo("z", TensorProto.FLOAT, ["N", 2, 4])], inits)
    return m, {"x": rng(4).standard_normal((3, 2, 4), dtype=np.float32)}


# ---- control flow --------------------------------------------------------


@run
def loop_iter_declared_1():
    """A Loop body that declares its iteration number as shape [1] (some
    exporters do; ORT then feeds it as [1]) and adds it to the carried value;
    its scan output concatenates it (rank 1) with itself."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["acc", "fi"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Concat", ["fi", "fi"], ["scan"], axis=0)],
        "body",
        [vinfo("i", TensorProto.INT64, [1]), vinfo("cond", TensorProto.BOOL, []),
         vinfo("acc", TensorProto.FLOAT, ["N", 4])],
        [vinfo("cond_out", TensorProto.BOOL, []), vinfo("acc_out", TensorProto.FLOAT, ["N", 4]),
         vinfo("scan", TensorProto.FLOAT, [2])])
    trip = numpy_helper.from_array(np.array(3, np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond0")
    loop = helper.make_node("Loop", ["trip", "cond0", "x"], ["y", "scans"], body=body)
    m = model([loop], [vinfo("x", TensorProto.FLOAT, ["N", 4])],
              [vinfo("y", TensorProto.FLOAT, ["N", 4]),
               vinfo("scans", TensorProto.FLOAT, [3, 2])], [trip, cond])
    return m, {"x": rng(5).standard_normal((2, 4), dtype=np.float32)}


@run
def if_shape_decided():
    """If whose condition comes from shapes (Shape -> ArgMax -> Equal): only
    the branch taken is compiled; the other would not even infer (its
    Reshape does not fit)."""
    bad = numpy_helper.from_array(np.array([7, 7, 7], np.int64), "bad_shape")
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [vinfo("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Reshape", ["x", "bad_shape"], ["e"])], "else",
                               [], [vinfo("e", TensorProto.FLOAT, None)])
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("ArgMax", ["sx"], ["am"], axis=0, keepdims=0),
        helper.make_node("Equal", ["am", "one"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    m = model(nodes, [vinfo("x", TensorProto.FLOAT, ["N", 16])],
              [vinfo("y", TensorProto.FLOAT, ["N", 16])], [bad, one])
    return m, {"x": rng(6).standard_normal((3, 16), dtype=np.float32)}


# ---- layouts ---------------------------------------------------------------

def seq_lstm():
    import torch
    from torch import nn

    class SeqFirst(nn.Module):
        """PyTorch's RNN default layout: x is [seq, batch, feature]."""

        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(6, 8)
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            y, _ = self.lstm(x)
            return torch.relu(self.fc(y))
    x = rng(7).standard_normal((5, 3, 6), dtype=np.float32)
    m = torch_export(SeqFirst, (torch.from_numpy(x),), ["x"], {"x": {1: "N"}, "y": {1: "N"}},
                     opset=14)
    return m, {"x": x}


@run
def seq_first_lstm():
    return seq_lstm()


@compiles("--shape", "x=5,N,6", "--batch", "1,4")
def seq_first_lstm_batch_independent():
    return seq_lstm()[0]


def deepjet_style(batch):
    import torch
    from torch import nn

    class Branch(nn.Module):
        """A constituent collection [N, P, C]: input BatchNorm, a 1x1 Conv1d
        stack, an LSTM over the P constituents, its last hidden state."""

        def __init__(self, c_in, chans, hidden, bidirectional=False):
            super().__init__()
            layers, c = [nn.BatchNorm1d(c_in)], c_in
            for co in chans:
                layers += [nn.Conv1d(c, co, 1), nn.ReLU()]
                c = co
            self.conv = nn.Sequential(*layers)
            self.lstm = nn.LSTM(c, hidden, batch_first=True, bidirectional=bidirectional)

        def forward(self, x):
            y = self.conv(x.transpose(1, 2)).transpose(1, 2)
            _, (h, _) = self.lstm(y)
            return torch.cat(list(h), dim=1)

    class DeepJetStyle(nn.Module):
        """DeepJet's shape, smaller: charged (bidirectional LSTM, 48 units:
        three whole gate blocks), neutral (20 units: 16 + 4) and vertex (16)
        branches, joined with the global features, a dense head and softmax."""

        def __init__(self):
            super().__init__()
            self.cpf = Branch(16, (32, 16), 48, bidirectional=True)
            self.npf = Branch(6, (16, 4), 20)
            self.sv = Branch(12, (16, 8), 16)
            self.head = nn.Sequential(nn.Linear(15 + 96 + 20 + 16, 64), nn.ReLU(),
                                      nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 6))

        def forward(self, glob, cpf, npf, sv):
            z = torch.cat([glob, self.cpf(cpf), self.npf(npf), self.sv(sv)], dim=1)
            return torch.softmax(self.head(z), dim=-1)
    r = rng(9)
    x = {"global": r.standard_normal((batch, 15), dtype=np.float32),
         "cpf": r.standard_normal((batch, 25, 16), dtype=np.float32),
         "npf": r.standard_normal((batch, 25, 6), dtype=np.float32),
         "sv": r.standard_normal((batch, 4, 12), dtype=np.float32)}
    names = ["global", "cpf", "npf", "sv"]
    m = torch_export(DeepJetStyle, tuple(torch.from_numpy(x[k]) for k in names), names,
                     {**{k: {0: "N"} for k in names}, "y": {0: "N"}})
    return m, x


@run
def deepjet_style_batch1():
    return deepjet_style(1)


@run
def deepjet_style_batch5():
    return deepjet_style(5)


def deepsets():
    import torch
    from torch import nn

    class DeepSets(nn.Module):
        """phi per constituent, sum over constituents, rho: both the batch
        and the constituent count are symbolic in the export."""

        def __init__(self):
            super().__init__()
            self.phi = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
            self.rho = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))

        def forward(self, c):
            return self.rho(self.phi(c).sum(dim=1))
    x = rng(8).standard_normal((3, 10, 4), dtype=np.float32)
    m = torch_export(DeepSets, (torch.from_numpy(x),), ["constituents"],
                     {"constituents": {0: "N", 1: "P"}, "y": {0: "N"}})
    return m, {"constituents": x}


@run
def deepsets_fixed_constituents():
    return deepsets()


@compiles("--shape", "constituents=N,10,4", "--batch", "1,8")
def deepsets_batch_independent():
    return deepsets()[0]


@error("hint: --shape constituents=N,<P>,4")
def deepsets_check_suggests_shape():
    return deepsets()[0]


# ---- kNN EdgeConv (passes/edgeconv.c) ------------------------------------


@run
def particlenet_edgeconv():
    """ParticleNet-style: kNN by MatMul + TopK, neighbour Gather, two EdgeConv
    blocks (fused into kiln_f32_edgeconv by the edgeconv pass)."""
    import edgeconv_model
    return edgeconv_model.export()


@run
def particlenet_edgeconv_batch1():
    import edgeconv_model
    return edgeconv_model.export(batch=1, seed=4)


@run
def particlenet_edgeconv_near_miss():
    """The Concat swapped ([x_j - x_i ; x_i]): not fused, still right."""
    import edgeconv_model
    return edgeconv_model.export(near_miss=True)


@compiles("--batch", "1,4")
def particlenet_edgeconv_batches():
    """Fused, the neighbour indices stay within each sample: batch-independent."""
    import edgeconv_model
    return edgeconv_model.export()[0]


# ---- LpNormalization (ops/misc.c, runtime/kernels/f32-lpnorm) ------------


def lpnorm_model(shape, **attrs):
    x = vinfo("x", TensorProto.FLOAT, shape)
    y = vinfo("y", TensorProto.FLOAT, shape)
    return model([helper.make_node("LpNormalization", ["x"], ["y"], name="lp", **attrs)], [x], [y])


@run
def lpnorm_default_zero_rows():
    """Defaults (axis -1, p 2) on [N, 7], batch 5; rows 1 and 3 are zero (ONNX
    Runtime gives zeros there) and row 4 is all negative."""
    x = rng().standard_normal((5, 7), dtype=np.float32)
    x[1] = 0
    x[3] = 0
    x[4] = -np.abs(x[4])
    return lpnorm_model(["N", 7]), {"x": x}


@run
def lpnorm_l1_channels():
    """p 1 over axis 1 of an image batch [N, 6, 4, 5] (strided lines), batch 3,
    with one zero line."""
    x = rng(5).standard_normal((3, 6, 4, 5), dtype=np.float32)
    x[1, :, 2, 3] = 0
    return lpnorm_model(["N", 6, 4, 5], axis=1, p=1), {"x": x}


@run
def lpnorm_l2_negative_axis_wide():
    """p 2 over axis -2 of [N, 9, 130]: 130 lines per sample, more than the
    kernel's chunk of 64, batch 2."""
    x = rng(7).standard_normal((2, 9, 130), dtype=np.float32) * 50
    return lpnorm_model(["N", 9, 130], axis=-2, p=2), {"x": x}


@run
def lpnorm_over_batch_axis():
    """axis 0: each column is normalized over the batch (compiles for the
    compiled sizes only; kiln verify compiles the data's batch, 4)."""
    x = rng(9).standard_normal((4, 3), dtype=np.float32)
    x[:, 1] = 0
    return lpnorm_model(["N", 3], axis=0, p=1), {"x": x}


@compiles("--batch", "1,4")
def lpnorm_batches():
    """Normalizing within each sample (axis -1) keeps the model batch-independent."""
    return lpnorm_model(["N", 3, 8], axis=-1)


@error('compile: node 0 "lp" (LpNormalization, ai.onnx opset 13): p must be 1 or 2, got 3')
def lpnorm_p3():
    return lpnorm_model(["N", 4], p=3)


# ---- MaxRoiPool (ops/sampling.c, runtime/kernels/f32-roipool) --------------

# (batch index, x1, y1, x2, y2) in input pixels: inside, halves (rounded away
# from zero), partly outside at either corner, wholly outside (zeros),
# reversed corners (1x1), a fractional batch index (truncated).
ROIS = np.array([[0, 0, 0, 15, 11], [1, 3, 2.5, 9, 7], [0.7, -6, -4, 5, 3],
                 [1, 10, 6, 30, 21], [0, 40, 40, 50, 50], [1, 7, 7, 2, 3],
                 [1.9, 4, 4, 5, 5]], np.float32)


def roipool_model(x_shape, nrois, rois_init=None, **attrs):
    x = vinfo("x", TensorProto.FLOAT, x_shape)
    ins = [x] if rois_init is not None else [x, vinfo("rois", TensorProto.FLOAT, [nrois, 5])]
    y = vinfo("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(rois_init, "rois")] if rois_init is not None else []
    node = helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], name="roipool", **attrs)
    return model([node], ins, [y], inits)


@run
def maxroipool_edges():
    """pooled 3x4 at spatial_scale 1 over a batch of 2 images [2, 3, 12, 16]
    (values of both signs): ROIs inside, partly and wholly outside, reversed,
    with fractional batch indices."""
    x = rng(21).standard_normal((2, 3, 12, 16), dtype=np.float32)
    return roipool_model(["N", 3, 12, 16], len(ROIS), pooled_shape=[3, 4]), \
        {"x": x, "rois": ROIS}


@run
def maxroipool_scaled_fine_bins():
    """spatial_scale 0.5 (coordinates in a twice larger image) and pooled 5x7:
    more bins than some ROIs have pixels; the ROIs a weight."""
    x = rng(22).standard_normal((2, 4, 12, 16), dtype=np.float32)
    rois = ROIS * np.array([1, 2, 2, 2, 2], np.float32)
    return roipool_model(["N", 4, 12, 16], len(ROIS), rois_init=rois, pooled_shape=[5, 7],
                         spatial_scale=0.5), {"x": x}


@run
def maxroipool_default_scale_one_bin():
    """spatial_scale omitted (1), pooled 1x1: each ROI's maximum, batch 1."""
    x = rng(23).standard_normal((1, 2, 12, 16), dtype=np.float32)
    rois = ROIS.copy()
    rois[:, 0] = 0
    return roipool_model([1, 2, 12, 16], len(rois), pooled_shape=[1, 1]), \
        {"x": x, "rois": rois}


@run
def maxroipool_fast_rcnn_head():
    """A Fast R-CNN-style head: Conv + Relu feature map at stride 2, MaxRoiPool
    with spatial_scale 1/2 on image-pixel ROIs, Flatten, Gemm; batch 2."""
    r = rng(24)
    w = numpy_helper.from_array(r.standard_normal((8, 3, 3, 3), dtype=np.float32) * 0.3, "w")
    wd = numpy_helper.from_array(r.standard_normal((5, 8 * 2 * 2), dtype=np.float32) * 0.2, "wd")
    nodes = [helper.make_node("Conv", ["img", "w"], ["c"], name="conv", pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["f"], name="relu"),
             helper.make_node("MaxRoiPool", ["f", "rois"], ["p"], name="roipool",
                              pooled_shape=[2, 2], spatial_scale=0.5),
             helper.make_node("Flatten", ["p"], ["fl"], name="flat"),
             helper.make_node("Gemm", ["fl", "wd"], ["y"], name="cls", transB=1)]
    rois = np.array([[0, 2, 2, 20, 14], [1, 0, 0, 31, 23], [1, 10, 4, 17, 9],
                     [0, 24, 16, 40, 30]], np.float32)
    m = model(nodes, [vinfo("img", TensorProto.FLOAT, ["N", 3, 24, 32]),
                      vinfo("rois", TensorProto.FLOAT, [4, 5])],
              [vinfo("y", TensorProto.FLOAT, [4, 5])], [w, wd])
    return m, {"img": r.standard_normal((2, 3, 24, 32), dtype=np.float32), "rois": rois}


@error('compile: node 0 "roipool" (MaxRoiPool, ai.onnx opset 13): pooled_shape must be (height, '
       'width), got 3 values')
def maxroipool_pooled_3d():
    return roipool_model(["N", 3, 12, 16], 2, pooled_shape=[2, 2, 2])


# ---- Particle Transformer (part_model.py) ---------------------------------
# weaver-style ParT exports: the pair embedding's tril_indices chain
# (ConstantOfShape -> Trilu -> NonZero over [P, P]) folds on demand at any
# particle count (peval.c); compared with ONNX Runtime at several batch sizes.


@run
def part_tril_opset17_b1():
    import part_model
    return part_model.export(opset=17, batch=1, npf=24, nsv=8, seed=1)


@run
def part_tril_opset17_b3_p108():
    """108 particles: the [P, P] mask is larger than routine folding keeps."""
    import part_model
    return part_model.export(opset=17, batch=3, npf=100, nsv=8, seed=2)


@run
def part_tril_opset14_static_b2():
    import part_model
    return part_model.export(opset=14, dynamic=False, batch=2, npf=40, nsv=6, seed=3)


@run
def part_allpairs_opset13_b2():
    """Opset 13 (no Trilu): the features of all P x P pairs, weaver's for_onnx path."""
    import part_model
    return part_model.export(opset=13, batch=2, npf=20, nsv=5, seed=4)


@run
def part_nopair_opset13_b5():
    import part_model
    return part_model.export(opset=13, pair=False, batch=5, npf=30, nsv=4, seed=5)


@run
def part_nopair_opset17_static_b1():
    import part_model
    return part_model.export(opset=17, pair=False, dynamic=False, batch=1, npf=16, nsv=4, seed=6)


# ---- BatchNorm1d on a Linear's output through [N, C, 1] (passes/fuse_bn.c) -


def mlp_bn_module(how, c=16, dims=(32, 24)):
    """Linear, BatchNorm1d, ReLU layers with the BatchNorm run on [N, C, 1]
    (x.unsqueeze(2) ... squeeze(2), or x.view(N, -1, 1) ... view(N, -1)),
    which exports as Gemm, Unsqueeze/Reshape, BatchNormalization,
    Squeeze/Reshape: the BatchNorm folds into the Gemm through the views."""
    import torch
    from torch import nn

    class BN(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.bn = nn.BatchNorm1d(d)

        def forward(self, x):
            if how == "unsqueeze":
                return self.bn(x.unsqueeze(2)).squeeze(2)
            return self.bn(x.view(x.size(0), -1, 1)).view(x.size(0), -1)

    import torch_util
    torch.manual_seed(3)
    layers = []
    for d in dims:
        layers += [nn.Linear(c, d), BN(d), nn.ReLU()]
        c = d
    return torch_util.random_bn_stats(nn.Sequential(*layers, nn.Linear(c, 3)))


def mlp_bn(how, opset, batch):
    import torch
    x = rng(batch).standard_normal((batch, 16), dtype=np.float32)
    m = torch_export(lambda: mlp_bn_module(how), (torch.from_numpy(x),), ["x"],
                     {"x": {0: "N"}, "y": {0: "N"}}, opset=opset)
    return m, {"x": x}


@run
def mlp_bn_unsqueeze_opset11_b1():
    return mlp_bn("unsqueeze", 11, 1)


@run
def mlp_bn_unsqueeze_opset13_b7():
    return mlp_bn("unsqueeze", 13, 7)


@run
def mlp_bn_view_opset13_b64():
    return mlp_bn("view", 13, 64)


@compiles("--batch", "1,16")
def mlp_bn_view_batches():
    return mlp_bn("view", 13, 4)[0]


# ---- 1-D convolutions written as 2-D on [N, C, P, 1] (emit/nn.c) ----------


@run
def resnet1d_columns_b1():
    """(3, 1) kernels on images one pixel wide run as 1-D rows."""
    import resnet1d_model
    return resnet1d_model.export(batch=1, particles=50, seed=1)


@run
def resnet1d_columns_b9_opset11():
    import resnet1d_model
    return resnet1d_model.export(batch=9, particles=37, opset=11, seed=2)


@run
def resnet1d_conv1d_b5_opset17():
    """The same network written with Conv1d on [N, C, P]: the 1-D Winograd
    F(4, 3) path as for the (3, 1) kernels (ops/conv_algo.c)."""
    import resnet1d_model
    return resnet1d_model.export(batch=5, particles=61, opset=17, seed=3, conv1d=True)


@compiles("--batch", "1,16")
def resnet1d_columns_batches():
    import resnet1d_model
    return resnet1d_model.export()[0]


# ---- interaction network (Rr, Rs MatMuls and transposes) ------------------


@run
def interaction_network_b3():
    import interaction_model
    return interaction_model.export(batch=3, seed=1)


@compiles("--batch", "1,64")
def interaction_network_batches():
    import interaction_model
    return interaction_model.export()[0]


@error("compile: the result has 65792 elements; kiln folds at most 65536")
def part_tril_p256_too_many_pairs():
    """256 particles: the triangle's indices (2 x 32896) are past NonZero's
    compile-time limit; one error line naming the node, not a crash."""
    import part_model
    return part_model.export(opset=17, dynamic=False, batch=1, npf=248, nsv=8, blocks=1)[0]
