#!/usr/bin/python3
"""Runs `kiln info --json` on every model of Debian's libonnx-testdata and
checks that each succeeds and reports the graph's real interface: the input
names (graph inputs that are not initializers), the output names, their
element types, and the node count, all read independently with python3-onnx.

usage: info_all.py KILN TESTDATA_DIR [--every N]

--every N checks every Nth model of the sorted list only: the sanitizer
build passes 3 (tests/meson.build), as its conformance suite compiles and
runs every case under ASan anyway; the default build checks them all.
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys

import onnx

from sample import every
from onnx import TensorProto

DTYPES = {
    TensorProto.FLOAT: "float32", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
    TensorProto.UINT16: "uint16", TensorProto.INT16: "int16", TensorProto.INT32: "int32",
    TensorProto.INT64: "int64", TensorProto.STRING: "string", TensorProto.BOOL: "bool",
    TensorProto.FLOAT16: "float16", TensorProto.DOUBLE: "float64",
    TensorProto.UINT32: "uint32", TensorProto.UINT64: "uint64",
    TensorProto.COMPLEX64: "complex64", TensorProto.COMPLEX128: "complex128",
    TensorProto.BFLOAT16: "bfloat16",
}


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                n += count_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                n += sum(count_nodes(g) for g in a.graphs)
    return n


def tensor_dtype(vi):
    t = vi.type
    if t.HasField("tensor_type") and t.tensor_type.elem_type:
        return DTYPES.get(t.tensor_type.elem_type)
    return None


def check(kiln, path):
    """Returns None if all is well, else a one-line reason."""
    p = subprocess.run([kiln, "info", "--json", path], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, p.stderr.strip())
    try:
        info = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        return "invalid JSON: %s" % e
    for key in ("inputs", "outputs", "ops", "initializers", "weight_bytes",
                "unique_weight_bytes"):
        if key not in info:
            return "JSON lacks key %r" % key
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    inits = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    want_in = [vi for vi in g.input if vi.name not in inits]
    got_in = info["inputs"]
    if [v.name for v in want_in] != [v["name"] for v in got_in]:
        return "inputs %s, expected %s" % ([v["name"] for v in got_in],
                                           [v.name for v in want_in])
    if [v.name for v in g.output] != [v["name"] for v in info["outputs"]]:
        return "outputs %s, expected %s" % ([v["name"] for v in info["outputs"]],
                                            [v.name for v in g.output])
    for want, got in zip(list(want_in) + list(g.output), got_in + info["outputs"]):
        dt = tensor_dtype(want)
        if dt and got["dtype"] != dt:
            return "value %s has dtype %s, expected %s" % (want.name, got["dtype"], dt)
    if info["nodes"] != count_nodes(g):
        return "%d nodes, expected %d" % (info["nodes"], count_nodes(g))
    if info["initializers"] < len(inits):
        return "%d initializers, expected at least %d" % (info["initializers"], len(inits))
    if not 0 <= info["unique_weight_bytes"] <= info["weight_bytes"]:
        return "unique_weight_bytes %d > weight_bytes %d" % (info["unique_weight_bytes"],
                                                            info["weight_bytes"])
    return None


def main():
    kiln, root = sys.argv[1], sys.argv[2]
    models = sorted(p for p in glob.glob(os.path.join(root, "*", "*", "model.onnx"))
                    if os.sep + "real" + os.sep not in p)
    if not models:
        print("no models found under %s" % root)
        return 1
    models = models[::every(sys.argv[3:])]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for path, why in zip(models, ex.map(lambda p: check(kiln, p), models)):
            if why:
                failed += 1
                print("FAIL %s: %s" % (os.path.relpath(path, root), why))
    print("libonnx-testdata: kiln info on %d models" % len(models))
    print("%d passed, %d failed" % (len(models) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
