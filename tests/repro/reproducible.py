#!/usr/bin/python3
"""`kiln verify --reproducible` (issue 30): one compiled model under every
ISA this CPU has, at every n = 1..70 and compiled batch size, and under
qemu-aarch64, compared byte for byte.

  1. mlp.onnx (Gemm, Tanh, Softmax, a batch axis; random inputs made by kiln):
     reproducible, exit 0: `isa ref=X same` for each ISA the CPU has beyond
     ref, `rows X same` for each, the hashes printed equal across ISAs, and
     with the aarch64 cross toolchain and qemu `aarch64=ref same` (a libkiln
     cross-built from the portable sources, as tests/repro/aarch64.py
     builds it); without them a `skipped:` note.
  2. a case folder (model.onnx and test_data_set_0, a static LayerNorm and
     MatMul model): its data is used; one run, `isa` lines only; exit 0.
  3. a 3x3 convolution of 16 channels on 14 x 14 (49 2x2 tiles an image:
     Winograd F(2x2, 3x3) by default, chosen by the shape): reproducible,
     exit 0, `isa ref=X same` and `rows X same` for every ISA. The same
     convolution on 6 x 14 (21 tiles an image: the direct path by default)
     compiled with --winograd, documented to differ (Winograd at batch 16,
     whose 336 tiles --winograd counts, the direct path at batch 1): exit 1,
     `rows X DIFFERS` naming output 0 and a row, for every ISA, while
     `isa ref=X same` (both paths give one result on every ISA).
  5. a model of large outputs (128 KB a sample): n = 2, 3, 5, 7, 57, 70 and
     the compiled sizes instead of every n (exit 0).
  4. bad use: --reproducible with compile, more than 16 sizes, a size over
     256, an int64 input of a .onnx file, a missing file: one clear line.

usage: reproducible.py KILN SOURCE_ROOT OUTDIR
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import aarch64  # noqa: E402
import bits  # noqa: E402

KILN, SRC, OUT = sys.argv[1:4]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def verify(*args, env=None):
    r = subprocess.run([KILN, "verify", "--reproducible"] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    print(r.stdout + r.stderr)
    return r


def mlp(path):
    r = np.random.default_rng(1)
    D = 40
    inits = [numpy_helper.from_array(r.standard_normal((D, D)).astype(np.float32) / 6, "W"),
             numpy_helper.from_array(r.standard_normal(D).astype(np.float32) / 10, "b"),
             numpy_helper.from_array(r.standard_normal((D, 10)).astype(np.float32) / 6, "W2")]
    n = [helper.make_node("Gemm", ["x", "W", "b"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
         helper.make_node("MatMul", ["t", "W2"], ["z"]), helper.make_node("Softmax", ["z"], ["y"])]
    g = helper.make_graph(n, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def static_case(folder):
    r = np.random.default_rng(2)
    inits = [numpy_helper.from_array(r.standard_normal(24).astype(np.float32), "g"),
             numpy_helper.from_array(r.standard_normal(24).astype(np.float32), "be"),
             numpy_helper.from_array(r.standard_normal((24, 12)).astype(np.float32), "W")]
    n = [helper.make_node("LayerNormalization", ["x", "g", "be"], ["l"], axis=-1),
         helper.make_node("MatMul", ["l", "W"], ["y"])]
    g = helper.make_graph(n, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5, 12])], inits)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(folder, "model.onnx"))
    x = r.standard_normal((3, 5, 24)).astype(np.float32)
    with open(os.path.join(folder, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())


def winograd(path, H=14):
    r = np.random.default_rng(3)
    C = 16
    inits = [numpy_helper.from_array(r.standard_normal((C, C, 3, 3)).astype(np.float32) / 12, "w")]
    n = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(n, "wino", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, H, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", C, H, 14])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def int_input(path):
    n = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(n, "ints", [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def hashes(out, check):
    return re.findall(r"^  %s\s+(?:same|DIFFERS)\s+([0-9a-f]{16})" % re.escape(check), out, re.M)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    isas = bits.machine_isas()
    print("ISAs on this machine: %s" % ", ".join(isas))
    env = {}
    if not [t for t in (aarch64.XCC, aarch64.XAR, aarch64.QEMU) if not shutil.which(t)]:
        env["KILN_AARCH64_RUNTIME_LIB"] = aarch64.build_runtime(SRC, os.path.join(OUT, "rt"))
        a64 = True
    else:
        print("no aarch64 cross toolchain or qemu: the aarch64 check is expected to be skipped")
        env["KILN_AARCH64_RUNTIME_LIB"] = os.path.join(OUT, "none")
        a64 = False

    # 1. reproducible, with a batch axis
    p = os.path.join(OUT, "mlp.onnx")
    mlp(p)
    r = verify(p, "--batch", "1,16,64", env=env)
    check(r.returncode == 0, "mlp: exit 0 (got %d)" % r.returncode)
    check("REPRODUCIBLE %s" % p in r.stdout, "mlp: the verdict line")
    check("70 samples" in r.stdout, "mlp: 70 samples, n = 1..70")
    for i in isas[1:]:
        check(re.search(r"^  isa ref=%s\s+same\s+[0-9a-f]{16}" % i, r.stdout, re.M) is not None,
              "mlp: isa ref=%s same" % i)
    for i in isas:
        check(re.search(r"^  rows %s\s+same" % i, r.stdout, re.M) is not None, "mlp: rows %s same" % i)
    hs = set(hashes(r.stdout, "isa ref=avx2") + hashes(r.stdout, "isa ref=avx512"))
    check(len(hs) <= 1, "mlp: one hash over the ISAs")
    if a64:
        check(re.search(r"^  aarch64=ref\s+same", r.stdout, re.M) is not None, "mlp: aarch64=ref same")
    else:
        check(re.search(r"^  aarch64\s+skipped: ", r.stdout, re.M) is not None, "mlp: aarch64 skipped, said so")
    if len(isas) < 3:
        check("skipped: this CPU runs" in r.stdout, "mlp: the ISA the CPU lacks is named as skipped")

    # 2. a case folder with its data, no batch axis (aarch64 left out: time)
    case = os.path.join(OUT, "ln_case")
    static_case(case)
    r = verify(case, env={"KILN_AARCH64_RUNTIME_LIB": os.path.join(OUT, "none")})
    check(r.returncode == 0, "case folder: exit 0 (got %d)" % r.returncode)
    check("no batch axis: one run" in r.stdout, "case folder: one run of its data")
    check(re.search(r"^  aarch64\s+skipped: KILN_AARCH64_RUNTIME_LIB", r.stdout, re.M) is not None,
          "case folder: aarch64 skipped, naming KILN_AARCH64_RUNTIME_LIB")

    # 3. Winograd by default: the same bits everywhere; with --winograd on a
    # small map, chosen by the batch's tiles: rows differ, ISAs agree
    p = os.path.join(OUT, "wino.onnx")
    winograd(p)
    r = verify(p, "--batch", "1,16", env={"KILN_AARCH64_RUNTIME_LIB": os.path.join(OUT, "none")})
    check(r.returncode == 0, "winograd 14 x 14: exit 0 (got %d)" % r.returncode)
    check("REPRODUCIBLE %s" % p in r.stdout, "winograd 14 x 14: the verdict")
    for i in isas[1:]:
        check(re.search(r"^  isa ref=%s\s+same" % i, r.stdout, re.M) is not None,
              "winograd 14 x 14: isa ref=%s same" % i)
    for i in isas:
        check(re.search(r"^  rows %s\s+same" % i, r.stdout, re.M) is not None,
              "winograd 14 x 14: rows %s same" % i)
    p = os.path.join(OUT, "wino_flat.onnx")
    winograd(p, H=6)
    r = verify(p, "--winograd", "--batch", "1,16", env={"KILN_AARCH64_RUNTIME_LIB": os.path.join(OUT, "none")})
    check(r.returncode == 1, "winograd --winograd 6 x 14: exit 1 (got %d)" % r.returncode)
    for i in isas[1:]:
        check(re.search(r"^  isa ref=%s\s+same" % i, r.stdout, re.M) is not None,
              "winograd --winograd 6 x 14: isa ref=%s same" % i)
    for i in isas:
        check(re.search(r"^  rows %s\s+DIFFERS\n    output 0 \"y\", row \d+ of the batch of n = \d+" % i,
                        r.stdout, re.M) is not None, "winograd --winograd 6 x 14: rows %s DIFFERS" % i)
    check("NOT REPRODUCIBLE %s" % p in r.stdout, "winograd --winograd 6 x 14: the verdict")

    # 5. large outputs (128 KB a sample): the compiled sizes and a few stitched n
    p = os.path.join(OUT, "wide.onnx")
    r0 = np.random.default_rng(4)
    W = numpy_helper.from_array((r0.standard_normal((16, 32000)) / 4).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "wide",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32000])], [W])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    r = verify(p, env={"KILN_AARCH64_RUNTIME_LIB": os.path.join(OUT, "none")})
    check(r.returncode == 0 and "n = 2, 3, 5, 7, 57, 70 (large outputs)" in r.stdout and
          re.search(r"^  rows ref\s+same\s+row r of every batch of n \(8 runs, n = 2\.\.70\)", r.stdout, re.M)
          is not None, "large outputs: the compiled sizes and n = 2, 3, 5, 7, 57, 70; exit 0")

    # 4. bad use
    bad = [([KILN, "compile", p, "--batch", "1", "--reproducible"], "--reproducible goes with 'verify'"),
           ([KILN, "verify", "--reproducible", p, "--batch", ",".join(str(k) for k in range(1, 18))],
            "at most 16 batch sizes"),
           ([KILN, "verify", "--reproducible", p, "--batch", "1,300"], "batch sizes up to 256")]
    for cmd, want in bad:
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 2 and want in r.stderr and r.stderr.startswith("kiln: error: "),
              "usage error: %s (%d: %s)" % (want, r.returncode, r.stderr.strip()))
    p = os.path.join(OUT, "ints.onnx")
    int_input(p)
    r = verify(p)
    check(r.returncode == 2 and re.search(r"^ERROR .*ints.onnx: .*input \"x\" is int64: verify "
                                         r"--reproducible makes up float32", r.stdout, re.M) is not None,
          "an int64 input of a .onnx file: one ERROR line, exit 2")
    r = verify(os.path.join(OUT, "missing.onnx"))
    check(r.returncode == 2 and "ERROR " in r.stdout, "a missing file: ERROR, exit 2")

    print("reproducible: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
