"""An interaction network over particles (Moreno et al., JEDI-net style):
the receiver and sender matrices Rr, Rs [No, Nr] (one column per ordered
pair of distinct particles) applied as MatMuls to the features [N, P, No],
the edge MLP on [N * Nr, 2P] after a transpose, the effects summed back to
the receivers through Rr^T, the object MLP on [N * No, P + De] after
another transpose, a sum over particles and a dense head. Random weights,
exported with torch.onnx for the realmodels cases and the bench."""
import numpy as np

import torch_util


def module(p=16, no=30, de=8, do=8, hidden=32, classes=5):
    import torch
    from torch import nn

    nr = no * (no - 1)
    rr = torch.zeros(no, nr)
    rs = torch.zeros(no, nr)
    k = 0
    for i in range(no):
        for j in range(no):
            if i != j:
                rr[i, k] = 1
                rs[j, k] = 1
                k += 1

    def tmul(x, y):                     # [N, A, B] @ [B, C] -> [N, A, C]
        return torch.matmul(x.reshape(-1, x.shape[2]), y).reshape(-1, x.shape[1], y.shape[1])

    class IN(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rr", rr)
            self.register_buffer("rs", rs)
            self.fr = nn.Sequential(nn.Linear(2 * p, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden // 2), nn.ReLU(),
                                    nn.Linear(hidden // 2, de), nn.ReLU())
            self.fo = nn.Sequential(nn.Linear(p + de, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden // 2), nn.ReLU(),
                                    nn.Linear(hidden // 2, do))
            self.fc = nn.Linear(do, classes)

        def forward(self, x):           # [N, P, No]
            b = torch.cat([tmul(x, self.rr), tmul(x, self.rs)], dim=1)      # [N, 2P, Nr]
            e = self.fr(b.transpose(1, 2).contiguous().view(-1, 2 * p))     # [N*Nr, De]
            e = e.view(-1, nr, de).transpose(1, 2).contiguous()            # [N, De, Nr]
            c = torch.cat([x, tmul(e, self.rr.t().contiguous())], dim=1)    # [N, P+De, No]
            o = self.fo(c.transpose(1, 2).contiguous().view(-1, p + de))    # [N*No, Do]
            return torch.softmax(self.fc(o.view(-1, no, do).sum(dim=1)), dim=1)

    torch.manual_seed(5)
    return IN().eval()


def export(batch=2, opset=13, seed=0, **kw):
    """(ModelProto, {"x": [batch, P, No]}); dynamic batch axis."""
    mod = module(**kw)
    x = np.random.default_rng(seed).standard_normal(
        (batch, mod.fr[0].in_features // 2, mod.rr.shape[0]), dtype=np.float32)
    return torch_util.export_x(mod, x, opset)
