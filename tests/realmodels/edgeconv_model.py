"""A small ParticleNet-style network (kNN by MatMul + TopK, neighbour Gather,
EdgeConv blocks of 1x1 Conv2d + BatchNorm + ReLU, mean over neighbours,
shortcut) exported with torch.onnx, for the realmodels cases and the
optimizer's edgeconv test (tests/opt/passes.py). near_miss=True writes the
edge features as [x_j - x_i ; x_i] (the Concat swapped), which the edgeconv
pass must leave alone."""
import io
import warnings


def module(near_miss=False, k=4, c_in=4, blocks=((8, 8), (16, 16, 16))):
    import torch
    from torch import nn

    def knn(pts, k):
        inner = torch.matmul(pts.transpose(1, 2), pts)
        sq = (pts * pts).sum(dim=1, keepdim=True)
        return (2.0 * inner - sq - sq.transpose(1, 2)).topk(k + 1, dim=-1)[1][:, :, 1:]

    def edges(x, idx, k):
        n, c, p = x.shape
        flat = x.transpose(1, 2).reshape(-1, c)
        base = torch.arange(n).view(-1, 1, 1) * p
        nbr = torch.index_select(flat, 0, (idx + base).reshape(-1))
        nbr = nbr.view(n, p, k, c).permute(0, 3, 1, 2)
        ctr = x.unsqueeze(-1).expand(n, c, p, k)
        return torch.cat([nbr - ctr, ctr] if near_miss else [ctr, nbr - ctr], dim=1)

    class Block(nn.Module):
        def __init__(self, c, chans):
            super().__init__()
            layers, ci = [], 2 * c
            for co in chans:
                layers += [nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU()]
                ci = co
            self.mlp = nn.Sequential(*layers)
            self.sc = nn.Conv1d(c, chans[-1], 1)

        def forward(self, pts, x):
            y = self.mlp(edges(x, knn(pts, k), k)).mean(dim=-1)
            return torch.relu(y + self.sc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            convs, c = [], c_in
            for chans in blocks:
                convs.append(Block(c, chans))
                c = chans[-1]
            self.blocks = nn.ModuleList(convs)
            self.head = nn.Linear(c, 3)

        def forward(self, points, features):
            x = features
            for i, b in enumerate(self.blocks):
                x = b(points if i == 0 else x, x)
            return torch.softmax(self.head(x.mean(dim=-1)), dim=-1)

    torch.manual_seed(7)
    net = Net()
    for m in net.modules():   # BatchNorm statistics that are not the identity
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return net.eval()


def export(near_miss=False, batch=3, points=20, seed=3):
    """(ONNX model, {name: array}) with a dynamic batch axis."""
    import numpy as np
    import onnx
    import torch
    r = np.random.default_rng(seed)
    pts = r.standard_normal((batch, 2, points), dtype=np.float32)
    feats = r.standard_normal((batch, 4, points), dtype=np.float32)
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module(near_miss), (torch.from_numpy(pts), torch.from_numpy(feats)), f,
                          input_names=["points", "features"], output_names=["y"],
                          dynamic_axes={"points": {0: "N"}, "features": {0: "N"}, "y": {0: "N"}},
                          opset_version=13)
    return onnx.load_from_string(f.getvalue()), {"points": pts, "features": feats}
