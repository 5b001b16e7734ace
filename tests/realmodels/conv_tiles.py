#!/usr/bin/python3
"""A convolutional network's large batch run as tiles of a few samples
(compiler/batchtile.c): the DeepBoostedJet-style 1-D ResNet of
resnet1d_model.py, written as Conv2d (3, 1) on [N, C, P, 1] (opsets 13 and
17) and as Conv1d on [N, C, P] (opset 11), compiled at batch 1 and 256.

For each export:
  - `kiln info --plan` says batch 256 runs as 32 tiles of 8 samples (its
    convolutions have 50 output pixels a sample; t x 50 >= 256 rows per
    weight read takes t = 8, the smallest divisor of 256 from 6; the dense
    head of one row a sample carries under 1 % of the products' work and
    does not count);
  - kiln_run (stitch_rows.c) of all 256 rows, the tiled call, matches ONNX
    Runtime (rtol 1e-3, atol 1e-5) and equals each row's own batch-1 call
    bit for bit (the tiles take the whole batch's paths: the same bits).
And the rules that keep a convolution network whole, by `kiln info
--plan` only: two 3x3 convolutions of 64 channels on 128 x 128 images at
batch 4 (over 8 MiB of arena, but a tile of one sample would still have
4 MiB, beyond the 2 MiB a tile of convolutions may have) and the 1-D ResNet
at batch 64 (3 MiB of arena, under the 8 MiB worth tiling).

usage: conv_tiles.py KILN SOURCE_ROOT LIBKILN_A OUTDIR
(env CC, SANFLAGS; exits 77, "skipped", without ONNX Runtime)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import resnet1d_model  # noqa: E402
from stitch_util import Stitcher, build, ort, run, start, stitched  # noqa: E402

ST = Stitcher(*sys.argv[1:4])
KILN, OUT = sys.argv[1], sys.argv[4]
ROWS = 256
TILED = "batch 256 runs as 32 tiles of 8 samples"

EXPORTS = {
    "conv2d_op13": dict(opset=13),
    "conv2d_op17": dict(opset=17),
    "conv1d_op11": dict(opset=11, conv1d=True),
}


def plan(path, batch):
    r = run([KILN, "info", path, "--plan", "--batch", str(batch)])
    if r.returncode:
        ST.fail("%s: kiln info --plan: %s" % (path, r.stderr.strip()))
    return r.stdout


def check_export(name, kw):
    d = os.path.join(OUT, name)
    os.makedirs(d)
    model, _ = resnet1d_model.export(particles=50, **kw)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    if TILED not in plan(path, ROWS):
        ST.fail("%s: kiln info --plan does not say '%s'" % (name, TILED))
        return
    x = np.random.default_rng(3).standard_normal((ROWS, 16, 50), dtype=np.float32)
    ref = ort(path, {"x": x}, d)[0]
    exe = build(ST, path, d, "1,%d" % ROWS)
    if not exe:
        return
    got, err = stitched(exe, d, {"x": x}, ROWS, [ROWS], ref.shape[1])
    if err:
        ST.fail("%s: stitch_rows: %s" % (name, err))
        return
    res, alone = got
    code = open(os.path.join(d, "t.c")).read()
    if "tiles of 8 samples" not in code:
        ST.fail("%s: the generated C does not run batch %d as tiles" % (name, ROWS))
    if not np.allclose(res[ROWS], ref, rtol=1e-3, atol=1e-5):
        ST.fail("%s: batch %d in tiles differs from ONNX Runtime by %.3g" % (
            name, ROWS, float(np.abs(res[ROWS] - ref).max())))
    diff = int((res[ROWS].view(np.uint32) != alone.view(np.uint32)).any(axis=1).sum())
    if diff:
        ST.fail("%s: %d of %d rows of the tiled batch differ from their batch-1 call" % (
            name, diff, ROWS))
    else:
        print("PASS %s: batch %d as 32 tiles of 8 matches ONNX Runtime (max diff %.2g), "
              "every row the bits of its own call" % (name, ROWS, float(np.abs(res[ROWS] - ref).max())))


def big_images():
    """x [N, 64, 128, 128] -> two 3x3 convolutions of 64 channels with ReLU:
    4 MiB a sample between them."""
    rng = np.random.default_rng(0)
    ws = [helper.make_tensor(n, TensorProto.FLOAT, [64, 64, 3, 3],
                             (rng.standard_normal(64 * 64 * 9) * 0.05).astype(np.float32))
          for n in ("w1", "w2")]
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c2"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64, 128, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 64, 128, 128])], ws)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main():
    if not start(OUT):
        return 77
    for name, kw in EXPORTS.items():
        check_export(name, kw)
    p = os.path.join(OUT, "big_images.onnx")
    onnx.save(big_images(), p)
    if "tiles of" in plan(p, 4):
        ST.fail("big_images: batch 4 runs as tiles (a tile's arena is beyond L2)")
    else:
        print("PASS big_images: batch 4 stays whole")
    p = os.path.join(OUT, "conv2d_op13", "model.onnx")
    if os.path.exists(p):
        if "tiles of" in plan(p, 64):
            ST.fail("conv2d_op13: batch 64 runs as tiles (its arena is under 8 MiB)")
        else:
            print("PASS conv2d_op13: batch 64 stays whole")
    return 1 if ST.failures else 0


if __name__ == "__main__":
    sys.exit(main())
