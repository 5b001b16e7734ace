#!/usr/bin/python3
"""Shared node functions (compiler/emit_c.c): a graph of 1200 nodes (600
MatMul+Tanh pairs, a broadcast Add every 50 and a second output taken from
the middle) compiled at batch 1 and 5 through `kiln verify` against numpy
(rtol 1e-3, atol 1e-5), and `kiln compile --batch 1,8,32` must emit a steps
table and only a handful of shared functions instead of one per node.

usage: shared.py KILN OUTDIR
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

PAIRS, D = 600, 16


def main():
    kiln, out = sys.argv[1:3]
    shutil.rmtree(out, ignore_errors=True)
    case = os.path.join(out, "chain")
    os.makedirs(case)
    rng = np.random.default_rng(7)
    nodes, inits, prev = [], [], "x"
    ws = []
    for i in range(PAIRS):
        w = (rng.standard_normal((D, D)) * 1.2 / np.sqrt(D)).astype(np.float32)
        ws.append(w)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["m%d" % i], name="mm%d" % i))
        nodes.append(helper.make_node("Tanh", ["m%d" % i], ["t%d" % i], name="th%d" % i))
        prev = "t%d" % i
        if i % 50 == 49:
            inits.append(numpy_helper.from_array(np.full(D, 0.01 * i, np.float32), "b%d" % i))
            nodes.append(helper.make_node("Add", [prev, "b%d" % i], ["a%d" % i], name="add%d" % i))
            prev = "a%d" % i
    outs = [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", D]),
            helper.make_tensor_value_info("t299", TensorProto.FLOAT, ["N", D])]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          ["N", D])],
                          outs, initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(case, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for s, n in enumerate((1, 5)):
        x = rng.standard_normal((n, D)).astype(np.float32)
        y, mid = x.astype(np.float64), None
        for i in range(PAIRS):
            y = np.tanh(y @ ws[i].astype(np.float64))
            if i == 299:
                mid = y
            if i % 50 == 49:
                y = y + np.float32(0.01 * i)
        d = os.path.join(case, "test_data_set_%d" % s)
        os.makedirs(d)
        for name, t in (("input_0", numpy_helper.from_array(x, "x")),
                        ("output_0", numpy_helper.from_array(y.astype(np.float32), prev)),
                        ("output_1", numpy_helper.from_array(mid.astype(np.float32), "t299"))):
            with open(os.path.join(d, name + ".pb"), "wb") as f:
                f.write(t.SerializeToString())
    failed = []
    r = subprocess.run([kiln, "verify", case], capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode:
        failed.append("kiln verify: %s" % r.stderr.strip())
    o = os.path.join(out, "compiled")
    os.makedirs(o)
    r = subprocess.run([kiln, "compile", os.path.join(case, "model.onnx"), "--batch", "1,8,32",
                        "--name", "chain", "-o", o], capture_output=True, text=True)
    if r.returncode:
        failed.append("kiln compile: %s" % r.stderr.strip())
    else:
        with open(os.path.join(o, "chain.c")) as f:
            code = f.read()
        shared = re.findall(r"^static int (s\d+_\w+)\(", code, re.M)
        own = re.findall(r"^static int (b\d+_n\d+_\w+)\(", code, re.M)
        steps = re.findall(r"^\t\{s\d+_\w+, \d+, \d+\}, /\* node \d+ ", code, re.M)
        print("%d nodes at 3 batch sizes: %d shared functions, %d steps, %d own functions, "
              "%d lines of C" % (len(nodes), len(shared), len(steps), len(own),
                                 code.count("\n")))
        want = 3 * (PAIRS + PAIRS // 50)   # each Tanh is fused into its MatMul's GEMM
        if len(steps) != want or own or len(shared) > 12:
            failed.append("expected %d steps through a few shared functions" % want)
    for f in failed:
        print("FAIL:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
