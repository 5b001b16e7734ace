#!/usr/bin/python3
"""Peak resident memory of `kiln info` and `kiln check` on a generated model
with W = 512 MiB of weights, stored inside the .onnx (raw_data) and as
external data. The target (issue 2) is peak RSS <= 1.3 * W + 64 MiB: the
loader must never hold the weights twice. Prints the measured figures that
docs/memory.md quotes.

usage: peak_rss.py KILN [MIB]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


MiB = 1 << 20


def make_model(folder, mib, external):
    import numpy as np
    from onnx import TensorProto, helper

    """8 float32 initializers of mib/8 MiB each; the last repeats the first so
    that unique_weight_bytes is 7/8 of weight_bytes."""
    per = mib * MiB // 8 // 4
    rng = np.random.default_rng(0)
    first = rng.standard_normal(per, dtype=np.float32)
    inits, nodes, prev = [], [], "x"
    for i in range(8):
        data = first if i in (0, 7) else rng.standard_normal(per, dtype=np.float32)
        t = TensorProto(name="w%d" % i, data_type=TensorProto.FLOAT, dims=[per])
        if external:
            t.data_location = TensorProto.EXTERNAL
            offset = i * per * 4
            with open(os.path.join(folder, "weights.bin"), "ab") as f:
                f.write(data.tobytes())
            for k, v in (("location", "weights.bin"), ("offset", str(offset)),
                         ("length", str(per * 4))):
                e = t.external_data.add()
                e.key, e.value = k, v
        else:
            t.raw_data = data.tobytes()
        inits.append(t)
        nodes.append(helper.make_node("Add", [prev, "w%d" % i], ["y%d" % i], name="add%d" % i))
        prev = "y%d" % i
    g = helper.make_graph(nodes, "big",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [per])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [per])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path, 8 * per * 4


def make_huge_model(folder):
    """One float32 tensor of 2.25 GiB plus a small one past the 4 GiB mark, in
    a sparse external data file (no disk used): sizes and offsets over 2^31
    and 2^32. Returns (path, weight bytes)."""
    from onnx import TensorProto, helper
    big = (9 << 28) // 4                # 2.25 GiB of float32
    small_off = 5 << 30                 # 5 GiB
    with open(os.path.join(folder, "huge.bin"), "wb") as f:
        f.truncate(small_off + 16)
        f.seek(small_off)
        f.write(bytes(range(16)))
    inits = []
    for name, n, off in (("big", big, 0), ("small", 4, small_off)):
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[n])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "huge.bin"), ("offset", str(off)), ("length", str(4 * n))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "small"], ["y"], name="add")], "huge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("big", TensorProto.FLOAT, [big])],
        initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path, 4 * big + 16


def peak_rss(cmd):
    """Runs cmd; returns (exit status, stdout, peak RSS in bytes) via wait4."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return p.returncode, out.read().decode(), ru.ru_maxrss * 1024


def main():
    if sys.argv[1] == "--make":
        # Run in a child so this process stays small: Linux counts the
        # parent's RSS at fork() in the measured child's ru_maxrss.
        path, w = make_model(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
        print(w)
        return 0
    if sys.argv[1] == "--make-huge":
        print(make_huge_model(sys.argv[2])[1])
        return 0
    kiln = sys.argv[1]
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    failed = passed = 0
    for external in (False, True):
        folder = tempfile.mkdtemp(prefix="kiln-rss-")
        try:
            w = int(subprocess.run([sys.executable, __file__, "--make", folder, str(mib),
                                    "1" if external else "0"],
                                   check=True, capture_output=True, text=True).stdout)
            path = os.path.join(folder, "model.onnx")
            limit = 1.3 * w + 64 * MiB
            for cmd in (["info", "--json"], ["check"]):
                rc, out, rss = peak_rss([kiln] + cmd + [path])
                what = "%-12s %-8s" % (" ".join(cmd), "external" if external else "inline")
                ok = rc == 0 and rss <= limit
                if cmd[0] == "info" and rc == 0:
                    info = json.loads(out)
                    ok = ok and info["weight_bytes"] == w and info["unique_weight_bytes"] == w * 7 // 8
                print("%s W = %d MiB: peak RSS %.1f MiB = %.3f W (limit 1.3 W + 64 MiB = %.0f MiB) %s"
                      % (what, w // MiB, rss / MiB, rss / w, limit / MiB, "ok" if ok else "FAIL"))
                if ok:
                    passed += 1
                else:
                    failed += 1
                    if rc:
                        print("  exit %d" % rc)
        finally:
            shutil.rmtree(folder)
    # Over 2 GiB through external data: check reads no weight; info hashes
    # every byte (the sparse file's holes read as zeros).
    folder = tempfile.mkdtemp(prefix="kiln-rss-")
    try:
        w = int(subprocess.run([sys.executable, __file__, "--make-huge", folder], check=True,
                               capture_output=True, text=True).stdout)
        path = os.path.join(folder, "model.onnx")
        limit = 1.3 * w + 64 * MiB
        for cmd in (["info", "--json"], ["check"]):
            rc, out, rss = peak_rss([kiln] + cmd + [path])
            ok = rc == 0 and rss <= limit
            if cmd[0] == "info" and rc == 0:
                ok = ok and json.loads(out)["weight_bytes"] == w
            print("%-12s %-8s W = %d MiB: peak RSS %.1f MiB = %.3f W (limit %.0f MiB) %s"
                  % (" ".join(cmd), "2.25 GiB", w // MiB, rss / MiB, rss / w, limit / MiB,
                     "ok" if ok else "FAIL"))
            passed, failed = passed + ok, failed + (not ok)
            if rc:
                print("  exit %d" % rc)
    finally:
        shutil.rmtree(folder)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
