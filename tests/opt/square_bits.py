#!/usr/bin/python3
"""Pow by a constant 2 is emitted as x * x (compiler/emit/elementwise.c):
the same bits as kiln_powf(x, 2) on every input.

One model, x [N, 64] and e [N, 1]: y0 = Pow(x, 2) with the exponent a
constant (float32, then int64: the x * x expression), y1 = Pow(x, e) with
the exponent an input (kiln_powf), y2 = Pow(x, 2) inside an elementwise
chain (Pow(x + 0.5, 2) - 1, the ewchain pass's fused loop). Inputs: normal
values, large ones whose square overflows, tiny ones whose square is
subnormal or 0, +-0, +-Inf, NaNs with payloads, subnormals; e = 2. Compiled
at batch 1 and 8 (`kiln compile`, tests/realmodels/stitch_rows.c) and run
under every KILN_ISA this machine has at n = 8 and one sample at a time.
Checks: y0 == y1 bit for bit, y0 == numpy's float32 x * x bit for bit
(NaN: NaN), y2 == numpy's (x + 0.5) * (x + 0.5) - 1 bit for bit, and the
generated C calls kiln_powf only for Pow(x, e).

usage: square_bits.py KILN SOURCE_ROOT LIBKILN_A OUTDIR   (env CC, SANFLAGS)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mlpconv"))
sys.path.insert(0, os.path.join(HERE, "..", "repro"))
from onehot_bits import ROWS, build, outputs  # noqa: E402
from bits import machine_isas  # noqa: E402

W = 64


def model(two):
    g = helper.make_graph(
        [helper.make_node("Pow", ["x", "two"], ["y0"]),
         helper.make_node("Pow", ["x", "e"], ["y1"]),
         helper.make_node("Add", ["x", "half"], ["h"]),
         helper.make_node("Pow", ["h", "two"], ["s"]),
         helper.make_node("Sub", ["s", "one"], ["y2"])], "square",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", W]),
         helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 1])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", W]) for y in ("y0", "y1", "y2")],
        [numpy_helper.from_array(two, "two"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def inputs():
    r = np.random.default_rng(11)
    x = r.standard_normal((ROWS, W)).astype(np.float32)
    special = np.array([0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
                        0x7fc12345, 0x7f800001, 0x00000001, 0x807fffff, 0x1f800000, 0x1f7fffff,
                        0x20000000, 0x5f800000, 0xdf800001, 0x7f7fffff, 0x3f800000, 0xbf800000],
                       np.uint32).view(np.float32)
    x[1, :len(special)] = special
    x[2] = (r.standard_normal(W) * 1e19).astype(np.float32)    # squares near overflow
    x[3] = (r.standard_normal(W) * 1e-21).astype(np.float32)   # squares subnormal or 0
    x[4] = r.uniform(-3e-38, 3e-38, W).astype(np.float32)      # subnormal / tiny normal
    e = np.full((ROWS, 1), 2.0, np.float32)
    return x, e


def same(a, b):
    """Bit for bit, NaN for NaN; the count of elements that differ."""
    a, b = a.reshape(-1), b.reshape(-1)
    both_nan = np.isnan(a) & np.isnan(b)
    return int(((a.view(np.uint32) != b.view(np.uint32)) & ~both_nan).sum())


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    kiln, src_root, libkiln, outdir = sys.argv[1:]
    x, e = inputs()
    with np.errstate(all="ignore"):
        want0 = x * x
        h = x + np.float32(0.5)
        want2 = h * h - np.float32(1.0)
    failures = 0
    for name, two in (("f32", np.array(2.0, np.float32)), ("i64", np.array(2, np.int64))):
        d = os.path.join(outdir, name)
        exe = build(kiln, src_root, libkiln, model(two), d, [])
        src = open(os.path.join(d, "t.c")).read()
        calls = src.count("kiln_powf(")
        ok = calls == 2   # the Pow by the input e only, at batch 1 and at 8
        print(f"{'PASS' if ok else 'FAIL'} {name}: {calls} kiln_powf calls in the C (want 2: "
              "Pow(x, e) at batch 1 and 8)")
        failures += not ok
        for isa in machine_isas():
            y0, y1, y2 = outputs(exe, d, [x, e], isa, nout=3)
            for run_name, sl in (("n = 8", slice(0, ROWS * W)), ("alone", slice(ROWS * W, None))):
                got = [y[sl].reshape(ROWS, W) for y in (y0, y1, y2)]
                bad = (same(got[0], got[1]), same(got[0], want0), same(got[2], want2))
                ok = bad == (0, 0, 0)
                print(f"{'PASS' if ok else 'FAIL'} {name} KILN_ISA={isa} {run_name}: x * x against "
                      f"kiln_powf {bad[0]}, against numpy {bad[1]}, in a chain {bad[2]} "
                      "elements differ")
                failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
