#!/usr/bin/python3
"""A model with more than 2 GiB of weights compiles, links and runs.

Three Gather tables of 704 MiB each (2.06 GiB, float32 [65536, 2816]) in a
sparse external-data file: a few sampled rows hold values, the rest is
zeros. `kiln compile --batch 1,4` must put the weights in .lrodata sections
marked SHF_X86_64_LARGE (x86-64) and build the code with -mcmodel=medium;
the program linked from it must return the sampled rows (and zeros
elsewhere), and the peak RSS of `kiln compile` (with its cc and ld) must
stay <= 1.5 W + 64 MiB. Prints the measured figures.

usage: large_weights.py KILN SOURCE_ROOT LIBKILN_A   (env CC)
"""
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

MiB = 1 << 20
TABLES, ROWS, DIM = 3, 1 << 16, 2816
SAMPLED = (0, 1, 999, 1234, 40000, ROWS - 1)


def row_values(t, r):
    import numpy as np
    return (t * 1000 + (r % 1000) + np.arange(DIM, dtype=np.float32) / 4096).astype(np.float32)


def make_model(folder):
    from onnx import TensorProto, helper
    table_bytes = ROWS * DIM * 4
    inits, nodes, outs = [], [], []
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.truncate(TABLES * table_bytes)   # holes read as zeros
        for t in range(TABLES):
            for r in SAMPLED:
                f.seek(t * table_bytes + r * DIM * 4)
                f.write(row_values(t, r).tobytes())
            w = TensorProto(name="table%d" % t, data_type=TensorProto.FLOAT, dims=[ROWS, DIM])
            w.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "weights.bin"), ("offset", str(t * table_bytes)),
                         ("length", str(table_bytes))):
                e = w.external_data.add()
                e.key, e.value = k, v
            inits.append(w)
            nodes.append(helper.make_node("Gather", ["table%d" % t, "idx"], ["y%d" % t],
                                          name="g%d" % t))
            outs.append(helper.make_tensor_value_info("y%d" % t, TensorProto.FLOAT, ["N", DIM]))
    g = helper.make_graph(nodes, "large",
                          [helper.make_tensor_value_info("idx", TensorProto.INT64, ["N"])],
                          outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    return TABLES * table_bytes


MAIN = r"""
#include <stdio.h>
#include "large.h"
static float y[3][4 * %(dim)d];
int main(void)
{
	const int64_t idx[4] = {%(idx)s};
	int st = large_run_b4(NULL, idx, y[0], y[1], y[2]);
	if (st) {
		printf("status %%d\n", st);
		return 1;
	}
	fwrite(y, sizeof y, 1, stdout);
	return 0;
}
"""


def main():
    kiln, src, libkiln = sys.argv[1:4]
    if platform.machine() != "x86_64":
        print("SKIP: the large-data test is for x86-64 hosts")
        return 77
    import numpy as np
    folder = tempfile.mkdtemp(prefix="kiln-large-")
    try:
        w = make_model(folder)
        out = os.path.join(folder, "out")
        os.mkdir(out)
        # Measured in a child of this small process (wait4: the largest RSS
        # of kiln and of the cc and ld it runs).
        p = subprocess.Popen([kiln, "compile", os.path.join(folder, "model.onnx"), "--batch",
                              "1,4", "--name", "large", "-o", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode()
        rss = ru.ru_maxrss * 1024
        limit = 1.5 * w + 64 * MiB
        print("kiln compile W = %.2f GiB: peak RSS %.0f MiB = %.3f W (limit 1.5 W + 64 MiB = "
              "%.0f MiB)" % (w / (1 << 30), rss / MiB, rss / w, limit / MiB))
        failed = []
        if os.waitstatus_to_exitcode(status) != 0:
            print(err)
            return 1
        if rss > limit:
            failed.append("peak RSS over the limit")
        sections = subprocess.run(["readelf", "-S", "-W", os.path.join(out, "large.o")],
                                  capture_output=True, text=True).stdout
        # [Nr] Name Type Address Off Size ES Flg ...: the flags hold l (large)
        big = re.findall(r"\.lrodata\s+PROGBITS\s+\S+\s+\S+\s+\S+\s+\S+\s+(\S+)", sections)
        if not big or not all("l" in flags for flags in big):
            failed.append("no .lrodata section flagged large (readelf: %r)" % big)
        idx = [SAMPLED[1], SAMPLED[4], 7, SAMPLED[5]]   # row 7 is a hole: zeros
        with open(os.path.join(out, "main.c"), "w") as f:
            f.write(MAIN % dict(dim=DIM, idx=", ".join(map(str, idx))))
        exe = os.path.join(out, "large")
        r = subprocess.run(os.environ.get("CC", "cc").split() +
                           ["-std=c11", "-O1", "-I", out, "-I", os.path.join(src, "include"),
                            os.path.join(out, "main.c"), os.path.join(out, "large.o"), libkiln,
                            "-lm", "-o", exe], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr[-2000:])
            failed.append("the program does not link")
        else:
            r = subprocess.run([exe], capture_output=True)
            y = np.frombuffer(r.stdout, np.float32)
            if r.returncode or y.size != TABLES * 4 * DIM:
                failed.append("the program failed (exit %d)" % r.returncode)
            else:
                y = y.reshape(TABLES, 4, DIM)
                for t in range(TABLES):
                    for k, row in enumerate(idx):
                        want = row_values(t, row) if row in SAMPLED else np.zeros(DIM, np.float32)
                        if not np.array_equal(y[t, k], want):
                            failed.append("table %d row %d is wrong" % (t, row))
        for f in failed:
            print("FAIL:", f)
        if not failed:
            print("linked and ran: %d tables, rows checked, weights in large sections" % TABLES)
        return 1 if failed else 0
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    sys.exit(main())
