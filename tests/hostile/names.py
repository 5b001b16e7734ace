#!/usr/bin/python3
"""C identifiers made from names are unique (issue 14, finding 3).

usage: names.py KILN SOURCE_ROOT LIBKILN_A OUTDIR

Inputs "a-b", "a.b", "a_b" and "a_b_2" all sanitize to in_a_b (the last
one also to the suffixed form of the first collision); two inputs share
their first 40 characters; the outputs collide the same way. Each output
is the difference of two of the inputs, so an input bound to the wrong
parameter changes the result. kiln compiles the model, the C builds with
-Werror, two compiles give identical files (the suffixes are
deterministic), the typed entries have the expected parameter names, and
the outputs of kiln_run match numpy exactly.
"""
import filecmp
import os
import sys

import numpy as np
from onnx import TensorProto, helper

from lib import driver_input, link_driver, run, run_driver

KILN, SRC, LIBKILN, OUT = sys.argv[1:5]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


L = "long_name_" + "x" * 40
inputs = ["a-b", "a.b", "a_b", "a_b_2", L + "1", L + "2"]
outputs = [("y-1", 0, 1), ("y.1", 2, 3), ("y_1", 4, 5), (L + "_out1", 1, 2), (L + "_out2", 3, 0)]
nodes = [helper.make_node("Sub", [inputs[i], inputs[j]], [name]) for name, i, j in outputs]
g = helper.make_graph(nodes, "names",
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", 3]) for x in inputs],
                      [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", 3]) for y, _, _ in outputs])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
os.makedirs(OUT, exist_ok=True)
path = os.path.join(OUT, "names.onnx")
with open(path, "wb") as f:
    f.write(m.SerializeToString())
for run_name in ("a", "b"):
    d = os.path.join(OUT, run_name)
    r = run([KILN, "compile", path, "--batch", "1,4", "--name", "net", "-o", d])
    check(r.returncode == 0, "kiln compile exits %d: %s" % (r.returncode, r.stderr.decode()))
d = os.path.join(OUT, "a")
for f in ("net.h", "net.c"):
    check(filecmp.cmp(os.path.join(d, f), os.path.join(OUT, "b", f), shallow=False),
          "%s differs between two compiles" % f)
for cc in ("gcc", "clang"):
    r = run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow",
             "-I" + os.path.join(SRC, "include"), "-I" + d, "-c", "-o", os.devnull,
             os.path.join(d, "net.c")])
    check(r.returncode == 0, "%s: %s" % (cc, r.stderr.decode()[:2000]))
with open(os.path.join(d, "net.h")) as f:
    header = f.read()
for ident in ("in_a_b", "in_a_b_2", "in_a_b_3", "in_a_b_2_2", "out_y_1", "out_y_1_2", "out_y_1_3"):
    check(ident + "," in header or ident + ")" in header, "net.h has no parameter %s" % ident)
ok, err = link_driver(SRC, d, LIBKILN)
check(ok, "link: " + err[:2000])
if ok:
    n = 5
    st, err, names, values = run_driver(d, n)
    check(st == 0, "driver exits %d: %s" % (st, err))
    check(names["input"] == [x.encode().hex() for x in inputs], "input names %s" % names["input"])
    x = [driver_input(j, 3 * n) for j in range(len(inputs))]
    check(len(values) == len(outputs), "%d outputs" % len(values))
    for k, (name, i, j) in enumerate(outputs[:len(values)]):
        check(np.array_equal(values[k], x[i] - x[j]), "output %s: %s, numpy %s" % (name, values[k], x[i] - x[j]))
print("hostile names: %d failures" % len(failures))
sys.exit(1 if failures else 0)
