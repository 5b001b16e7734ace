# LpNormalization cases in libonnx-testdata format where float sums over- or
# underflow: rows of 1e-30, 1e30, 3e38 and subnormals (ONNX Runtime 1.30 sums
# in float and gives zeros there; kiln sums in double and normalizes them),
# beside zero rows and ordinary ones, for p 1 and 2 along the last axis and
# along axis 0. Reference: numpy in double, a zero norm giving zeros.
#   usage: gen_lpnorm.py OUTDIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def reference(x, axis, p):
    xd = x.astype(np.float64)
    norm = np.sum(np.abs(xd) ** p, axis=axis, keepdims=True) ** (1.0 / p)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(norm == 0, 0.0, xd / norm)
    return y.astype(np.float32)


def case(root, name, x, axis, p):
    d = os.path.join(root, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    node = helper.make_node("LpNormalization", ["x"], ["y"], axis=axis, p=p)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, os.path.join(root, name, "model.onnx"))
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(reference(x, axis, p), "y").SerializeToString())


def main():
    root = sys.argv[1]
    rng = np.random.default_rng(11)
    base = rng.standard_normal((6, 5)).astype(np.float32)
    scales = np.array([1e-30, 1e30, 1.0, 0.0, 1e19, 1e-20], np.float32)[:, None]
    x = (base * scales).astype(np.float32)
    x[2, :] = [3e38, -3e38, 3e38, 1.0, 0.0]
    sub = np.array([1e-45, 0, -3e-45, 0, 2e-44], np.float32)   # subnormals
    x = np.concatenate([x, sub[None]])
    for p in (1, 2):
        case(root, f"test_lpnorm_extremes_p{p}", x, -1, p)
        case(root, f"test_lpnorm_extremes_axis0_p{p}", x.T.copy(), 0, p)


main()
