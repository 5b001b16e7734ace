"""A DeepBoostedJet-style 1-D ResNet over particles, written with Conv2d on
images one pixel wide ([N, C, P, 1], kernels (3, 1), padding (1, 0)) as
some exporters of that network do: a stem Conv/BatchNorm/ReLU, residual
blocks of two (3, 1) convolutions with BatchNorm (a 1x1 shortcut where the
width changes), a mean over the particles and a dense head. Random weights,
exported with torch.onnx for the realmodels cases and the bench."""
import numpy as np

import torch_util


def module(c_in=16, widths=(32, 32, 64, 64), classes=5):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c, d):
            super().__init__()
            self.conv1 = nn.Conv2d(c, d, (3, 1), padding=(1, 0))
            self.bn1 = nn.BatchNorm2d(d)
            self.conv2 = nn.Conv2d(d, d, (3, 1), padding=(1, 0))
            self.bn2 = nn.BatchNorm2d(d)
            self.short = nn.Sequential(nn.Conv2d(c, d, 1), nn.BatchNorm2d(d)) if c != d else None

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (self.short(x) if self.short is not None else x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(c_in, widths[0], (3, 1), padding=(1, 0)),
                                      nn.BatchNorm2d(widths[0]), nn.ReLU())
            blocks, c = [], widths[0]
            for d in widths:
                blocks.append(Block(c, d))
                c = d
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Sequential(nn.Linear(c, 64), nn.ReLU(), nn.Linear(64, classes))

        def forward(self, x):                     # [N, C, P]
            x = self.blocks(self.stem(x.unsqueeze(-1)))
            return torch.softmax(self.fc(x.mean(dim=(2, 3))), dim=1)

    torch.manual_seed(11)
    return torch_util.random_bn_stats(Net(), mean=0.3)


def export(batch=2, particles=50, opset=13, seed=0, **kw):
    """(ModelProto, {"x": [batch, C, particles]}); dynamic batch axis."""
    mod = module(**kw)
    c = mod.stem[0].in_channels
    x = np.random.default_rng(seed).standard_normal((batch, c, particles), dtype=np.float32)
    return torch_util.export_x(mod, x, opset)
