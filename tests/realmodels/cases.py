"""The cases of run.py: RUN = [(name, make)] where make() returns
(ModelProto, {input name: ndarray}); ERRORS = [(name, make, expected)] where
make() returns a ModelProto and expected is a piece of kiln's stderr (an
"error:" is expected to exit 2, anything else, a warning, to exit 0)."""
import io
import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RUN = []
ERRORS = []


def run(fn):
    RUN.append((fn.__name__, fn))
    return fn


def error(expected):
    def wrap(fn):
        ERRORS.append((fn.__name__, fn, expected))
        return fn
    return wrap


def rng(seed=13):
    return np.random.default_rng(seed)


def torch_export(module, args, names, dynamic, opset=13, outputs=("y",)):
    import torch
    torch.manual_seed(0)
    f = io.BytesIO()
    module.eval()
    with torch.no_grad():
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
    m = torch_export(ddx_module(), (torch.from_numpy(glob), torch.from_numpy(trk),
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


@error("warning: ")
def duplicate_constants_warns():
    return dup_const_model()


@error("error: ")
def cycle():
    x = vinfo("x", TensorProto.FLOAT, [2])
    y = vinfo("y", TensorProto.FLOAT, [2])
    a = helper.make_node("Add", ["x", "b"], ["a"], name="add_a")
    b = helper.make_node("Relu", ["a"], ["b"], name="relu_b")
    o = helper.make_node("Neg", ["a"], ["y"], name="neg")
    return model([o, a, b], [x], [y])
