#!/usr/bin/python3
"""float16 and bfloat16 arithmetic, end to end.

Builds small ONNX cases (model.onnx + test_data_set_0) for the elementwise
ops in float16 and bfloat16, plus EyeLike, Det and MeanVarianceNormalization,
with numpy references: inputs are exact 16-bit values, the reference computes
in float32 (float64 for Det and MVN, as kiln does) and rounds once to nearest
even. `kiln verify` compares 16-bit outputs bit for bit. Then checks that ops
kiln does not compute on 16-bit floats yet refuse them with a clear error
instead of treating the bits as integers.

usage: run.py KILN
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

F16, BF16, BOOL, I64 = TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.BOOL, TensorProto.INT64
rng = np.random.default_rng(12345)
f = np.float32


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet)."""
    x = np.atleast_1d(np.asarray(x, np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bits(x, dt):
    """An array of float values as the 16-bit type's bit patterns."""
    x = np.asarray(x, np.float32)
    b = x.astype(np.float16).view(np.uint16) if dt == F16 else bf16_bits(x).reshape(x.shape)
    return b.reshape(x.shape)


def exact(x, dt):
    """Random float32 values made exactly representable in dt."""
    b = bits(x, dt)
    return b.view(np.float16).astype(np.float32) if dt == F16 else (b.astype(np.uint32) << 16).view(np.float32)


def tensor(name, arr, dt):
    t = TensorProto(name=name, data_type=dt, dims=list(np.shape(arr)))
    if dt in (F16, BF16):
        t.raw_data = bits(arr, dt).tobytes()
    elif dt == BOOL:
        t.raw_data = np.asarray(arr, np.bool_).tobytes()
    else:
        t.raw_data = np.ascontiguousarray(arr).tobytes()
    return t


def case(root, name, nodes, inputs, out, out_dt, opset=15):
    """inputs: [(name, values, dtype)]; out: the reference values."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    vi = [helper.make_tensor_value_info(n, dt, np.shape(v)) for n, v, dt in inputs]
    g = helper.make_graph(nodes, name, vi, [helper.make_tensor_value_info("y", out_dt, np.shape(out))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), os.path.join(d, "model.onnx"))
    for i, (n, v, dt) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % i), "wb") as fp:
            fp.write(tensor(n, v, dt).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as fp:
        fp.write(tensor("y", out, out_dt).SerializeToString())


UNARY = {
    "Relu": (lambda x: np.maximum(x, f(0)), {}, (-3, 3)),
    "Sigmoid": (lambda x: f(1) / (f(1) + np.exp(-x)), {}, (-3, 3)),
    "Tanh": (np.tanh, {}, (-3, 3)), "Sqrt": (np.sqrt, {}, (0, 5)), "Exp": (np.exp, {}, (-3, 3)),
    "Log": (np.log, {}, (0.1, 5)), "Neg": (np.negative, {}, (-3, 3)), "Abs": (np.abs, {}, (-3, 3)),
    "Sign": (np.sign, {}, (-3, 3)), "Floor": (np.floor, {}, (-3, 3)), "Ceil": (np.ceil, {}, (-3, 3)),
    "Round": (np.round, {}, (-6, 6)), "Reciprocal": (lambda x: f(1) / x, {}, (0.5, 3)),
    "Sin": (np.sin, {}, (-3, 3)), "Cos": (np.cos, {}, (-3, 3)), "Atan": (np.arctan, {}, (-3, 3)),
    "Sinh": (np.sinh, {}, (-3, 3)),
    "LeakyRelu": (lambda x: np.where(x < 0, f(0.1) * x, x), {"alpha": 0.1}, (-3, 3)),
    "Softsign": (lambda x: x / (f(1) + np.abs(x)), {}, (-3, 3)),
    "HardSigmoid": (lambda x: np.clip(f(0.2) * x + f(0.5), 0, 1), {}, (-3, 3)),
    "Elu": (lambda x: np.where(x < 0, np.exp(x) - f(1), x), {}, (-3, 3)),
    "Celu": (lambda x: np.maximum(f(0), x) + np.minimum(f(0), np.exp(x) - f(1)), {}, (-3, 3)),
}
BINARY = {
    "Add": (np.add, False), "Sub": (np.subtract, False), "Mul": (np.multiply, False),
    "Div": (np.divide, False), "Pow": (np.power, False), "Equal": (np.equal, True),
    "Less": (np.less, True), "Greater": (np.greater, True), "LessOrEqual": (np.less_equal, True),
    "GreaterOrEqual": (np.greater_equal, True), "PRelu": (lambda a, b: np.where(a < 0, a * b, a), False),
}


def build(root):
    for dt, tag in ((F16, "f16"), (BF16, "bf16")):
        def rnd(shape, lo=-3, hi=3):
            return exact(rng.uniform(lo, hi, shape).astype(np.float32), dt)

        def ref(y):
            return np.asarray(y, np.float32)

        for op, (fn, attrs, (lo, hi)) in UNARY.items():
            x = rnd((3, 7), lo, hi)
            case(root, "%s_%s" % (op, tag), [helper.make_node(op, ["x"], ["y"], **attrs)],
                 [("x", x, dt)], ref(fn(x)), dt)
        for op, (fn, to_bool) in BINARY.items():
            a, b = rnd((2, 3, 4)), rnd((3, 4))
            if op == "Pow":
                a = np.abs(a)
            case(root, "%s_%s" % (op, tag), [helper.make_node(op, ["a", "b"], ["y"])],
                 [("a", a, dt), ("b", b, dt)], fn(a, b) if to_bool else ref(fn(a, b)), BOOL if to_bool else dt)
        xs = [("a", rnd((2, 3)), dt), ("b", rnd((3,)), dt), ("c", rnd((2, 1)), dt)]
        a, b, c = (v for _, v, _ in xs)
        for op, y in (("Sum", a + b + c), ("Mean", (a + b + c) / f(3)),
                      ("Max", np.maximum(np.maximum(a, b), c)), ("Min", np.minimum(np.minimum(a, b), c))):
            case(root, "%s_%s" % (op, tag), [helper.make_node(op, ["a", "b", "c"], ["y"])], xs, ref(y), dt)
        a, b = rnd((6,)), rnd((6,), 0.5, 2)
        case(root, "Mod_%s" % tag, [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
             [("a", a, dt), ("b", b, dt)], ref(np.fmod(a, b)), dt)
        x = rnd((3, 5))
        case(root, "Clip_%s" % tag, [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
             [("x", x, dt), ("lo", np.array(-1, f), dt), ("hi", np.array(1.5, f), dt)],
             ref(np.clip(x, -1, 1.5)), dt)
        special = x.copy()
        special[0, 0], special[1, 1], special[2, 2] = np.nan, np.inf, -np.inf
        for op, fn in (("IsNaN", np.isnan), ("IsInf", np.isinf)):
            case(root, "%s_%s" % (op, tag), [helper.make_node(op, ["x"], ["y"])], [("x", special, dt)], fn(special), BOOL)
        cond = rng.uniform(size=(3, 5)) < 0.5
        case(root, "Where_%s" % tag, [helper.make_node("Where", ["c", "a", "b"], ["y"])],
             [("c", cond, BOOL), ("a", special, dt), ("b", x, dt)], np.where(cond, special, x), dt)
        case(root, "Identity_%s" % tag, [helper.make_node("Identity", ["x"], ["y"])], [("x", special, dt)], special, dt)
        case(root, "EyeLike_%s" % tag, [helper.make_node("EyeLike", ["x"], ["y"], k=1)], [("x", x, dt)],
             np.eye(3, 5, 1, dtype=np.float32), dt)
        m = rnd((2, 3, 3))
        case(root, "Det_%s" % tag, [helper.make_node("Det", ["x"], ["y"])], [("x", m, dt)],
             np.linalg.det(m.astype(np.float64)).astype(np.float32), dt, opset=13)
        v = rnd((2, 3, 2, 2))
        mean = v.astype(np.float64).mean(axis=(0, 2, 3), keepdims=True)
        std = np.sqrt(((v - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True))
        case(root, "MVN_%s" % tag, [helper.make_node("MeanVarianceNormalization", ["x"], ["y"])],
             [("x", v, dt)], ((v - mean) / (std + np.float64(np.float32(1e-9)))).astype(np.float32), dt, opset=13)


# Ops that do not compute on 16-bit floats yet: (name, node, inputs, message).
REFUSED = [
    ("CumSum", lambda: helper.make_node("CumSum", ["x", "axis"], ["y"]), [("axis", I64, [])]),
    ("TopK", lambda: helper.make_node("TopK", ["x", "k"], ["y", "i"]), [("k", I64, [1])]),
    ("Einsum", lambda: helper.make_node("Einsum", ["x", "x2"], ["y"], equation="ij,jk->ik"), [("x2", F16, [4, 4])]),
]


def refused(kiln, root):
    bad = 0
    for op, node, extra in REFUSED:
        ins = [helper.make_tensor_value_info("x", F16, [4, 4])]
        inits = []
        for n, dt, shape in extra:
            if dt == I64:
                inits.append(helper.make_tensor(n, I64, shape, [1] * max(1, int(np.prod(shape)))))
            else:
                ins.append(helper.make_tensor_value_info(n, dt, shape))
        outs = [helper.make_tensor_value_info("y", F16, None)]
        if op == "TopK":
            outs.append(helper.make_tensor_value_info("i", I64, None))
        g = helper.make_graph([node()], op, ins, outs, inits)
        path = os.path.join(root, op + ".onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)]), path)
        p = subprocess.run([kiln, "compile", path, "--batch", "4", "-o", os.path.join(root, "out")],
                           capture_output=True, text=True)
        want = "float16 not supported by %s yet" % op
        if p.returncode != 2 or want not in p.stderr:
            print("FAIL: %s on float16: want exit 2 and \"%s\", got exit %d: %s" % (op, want, p.returncode, p.stderr.strip()))
            bad += 1
        else:
            print("ok: %s refuses float16" % op)
    return bad


def main():
    kiln = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="kiln-f16-") as root:
        cases = os.path.join(root, "cases")
        build(cases)
        names = sorted(os.listdir(cases))
        p = subprocess.run([kiln, "verify"] + [os.path.join(cases, n) for n in names], capture_output=True, text=True)
        print(p.stdout, end="")
        bad = sum(1 for line in p.stdout.splitlines() if not line.startswith(("PASS", "verify:")))
        bad += p.returncode != 0
        bad += refused(kiln, root)
    print("f16: %d cases, %s" % (len(names), "all passed" if not bad else "%d failed" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
