"""A DeepBoostedJet-style 1-D ResNet over particles, written with Conv2d on
images one pixel wide ([N, C, P, 1], kernels (3, 1), padding (1, 0)) as
some exporters of that network do: a stem Conv/BatchNorm/ReLU, residual
blocks of two (3, 1) convolutions with BatchNorm (a 1x1 shortcut where the
width changes), a mean over the particles and a dense head. Random weights,
exported with torch.onnx for the realmodels cases and the bench. With
conv1d=True the same network is written with Conv1d/BatchNorm1d on [N, C,
P] (the other way exporters write it)."""
import numpy as np

import torch_util


def module(c_in=16, widths=(32, 32, 64, 64), classes=5, conv1d=False):
    import torch
    from torch import nn

    if conv1d:
        def Conv(c, d, k, padding=0):
            return nn.Conv1d(c, d, k if isinstance(k, int) else k[0],
                             padding=padding if isinstance(padding, int) else padding[0])
        Norm, unsq, dims = nn.BatchNorm1d, (lambda x: x), (2,)
    else:
        Conv, Norm, unsq, dims = nn.Conv2d, nn.BatchNorm2d, (lambda x: x.unsqueeze(-1)), (2, 3)

    class Block(nn.Module):
        def __init__(self, c, d):
            super().__init__()
            self.conv1 = Conv(c, d, (3, 1), padding=(1, 0))
            self.bn1 = Norm(d)
            self.conv2 = Conv(d, d, (3, 1), padding=(1, 0))
            self.bn2 = Norm(d)
            self.short = nn.Sequential(Conv(c, d, 1), Norm(d)) if c != d else None

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (self.short(x) if self.short is not None else x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(Conv(c_in, widths[0], (3, 1), padding=(1, 0)),
                                      Norm(widths[0]), nn.ReLU())
            blocks, c = [], widths[0]
            for d in widths:
                blocks.append(Block(c, d))
                c = d
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Sequential(nn.Linear(c, 64), nn.ReLU(), nn.Linear(64, classes))

        def forward(self, x):                     # [N, C, P]
            x = self.blocks(self.stem(unsq(x)))
            return torch.softmax(self.fc(x.mean(dim=dims)), dim=1)

    torch.manual_seed(11)
    return torch_util.random_bn_stats(Net(), mean=0.3)


def export(batch=2, particles=50, opset=13, seed=0, **kw):
    """(ModelProto, {"x": [batch, C, particles]}); dynamic batch axis."""
    mod = module(**kw)
    c = mod.stem[0].in_channels
    x = np.random.default_rng(seed).standard_normal((batch, c, particles), dtype=np.float32)
    return torch_util.export_x(mod, x, opset)
