#!/usr/bin/python3
"""The bits check over the conformance and optimizer suites (issue 30):
`kiln verify --reproducible` on ONNX backend cases with float inputs (the
case's test_data_set_0 inputs, under KILN_ISA=ref, avx2 and avx512 as the CPU
has them; the cases have static shapes, so one run each) and, in the full
run, on the optimizer suite's case folders (tests/opt/run.py and passes.py
with --keep; those with a batch axis also at every n = 1..70).

By default (CI) a representative subset: SUBSET below, one backend case of
each summing kernel family (GEMM, MatMul, convolutions, pooling, Softmax,
LayerNorm, normalizations, reductions, RNNs, the elementwise functions),
without aarch64, and an STFT whose frame step decides shapes. With
KILN_REPRO_ALL=1: every node and simple case with a floating-point runtime
input (the others numeric), and the optimizer suite's models;
the aarch64 check too when the cross toolchain and qemu are there (a libkiln
cross-built as tests/repro/aarch64.py builds it; KILN_REPRO_A64=0 leaves it
out).

Fails on any case whose bits differ that is not listed in KNOWN (each with
its reason, as docs/reproducibility.md lists them); a KNOWN case that now
holds is reported. Cases kiln cannot compile (ERROR lines: unsupported ops,
inputs that must be frozen) are counted and listed, not failed, in the full
run (the conformance suite judges those); in the subset every case must run.

usage: sweep.py KILN SOURCE_ROOT OUTDIR [TESTDATA]
"""
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys

import onnx
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
SUBSET = ["node/test_gemm_all_attributes", "node/test_matmul_3d", "node/test_conv_with_strides_padding",
          "node/test_convtranspose", "node/test_averagepool_2d_pads", "node/test_softmax_axis_1",
          "node/test_logsoftmax_axis_1", "node/test_layer_normalization_4d_axis1",
          "node/test_instancenorm_example", "node/test_reduce_mean_default_axes_keepdims_random",
          "node/test_lstm_defaults", "node/test_gru_defaults", "node/test_rnn_seq_length",
          "node/test_exp", "node/test_erf", "simple/test_single_relu_model",
          "node/test_stft_with_window"]  # (frame_step frozen to its data: value-dependent shapes)

# case -> why its bits differ today (docs/reproducibility.md, "What is not
# guaranteed yet").
KNOWN = {
}

CHUNK = 12


def float_case(folder):
    try:
        g = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False).graph
    except Exception:
        return False
    inits = {t.name for t in g.initializer}
    ins = [i for i in g.input if i.name not in inits]
    # A float input, and the others numeric tensors (integer ones decide
    # shapes or index; --reproducible freezes those the compiler asks for).
    tensors = all(i.type.HasField("tensor_type") and i.type.tensor_type.elem_type != TensorProto.STRING
                  for i in ins)
    return tensors and any(i.type.tensor_type.elem_type in FLOATS for i in ins) and \
        os.path.isdir(os.path.join(folder, "test_data_set_0"))


def run_chunk(job):
    kiln, cases, env = job
    r = subprocess.run([kiln, "verify", "--reproducible"] + cases, capture_output=True, text=True, env=env)
    return r.stdout + r.stderr


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    kiln, src, out = sys.argv[1:4]
    testdata = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/libonnx-testdata/data"
    full = os.environ.get("KILN_REPRO_ALL") == "1"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ)
    if full:
        cases = sorted(c for kind in ("node", "simple") for c in glob.glob(os.path.join(testdata, kind, "*"))
                       if float_case(c))
        for script, name in (("run.py", "opt"), ("passes.py", "passes")):
            keep = os.path.join(out, name)
            r = subprocess.run([sys.executable, os.path.join(src, "tests", "opt", script), kiln, "--keep", keep],
                               capture_output=True, text=True, env=dict(env, KILN_OPT_SKIP="rss"))
            found = sorted(os.path.dirname(m) for m in glob.glob(os.path.join(keep, "**", "model.onnx"),
                                                                 recursive=True)
                           if os.path.isdir(os.path.join(os.path.dirname(m), "test_data_set_0")))
            print("sweep: tests/opt/%s (exit %d): %d case folders" % (script, r.returncode, len(found)))
            cases += found
        a64 = os.environ.get("KILN_REPRO_A64", "1") != "0"
        if a64:
            import aarch64
            if not [t for t in (aarch64.XCC, aarch64.XAR, aarch64.QEMU) if not shutil.which(t)]:
                env["KILN_AARCH64_RUNTIME_LIB"] = aarch64.build_runtime(src, os.path.join(out, "rt"))
            else:
                print("sweep: no aarch64 cross toolchain or qemu: aarch64 left out")
                a64 = False
        if not a64:
            env["KILN_AARCH64_RUNTIME_LIB"] = os.path.join(out, "no-aarch64")
    else:
        cases = [os.path.join(testdata, c) for c in SUBSET if os.path.isdir(os.path.join(testdata, c))]
        if len(cases) < len(SUBSET):
            print("sweep: %d of the %d subset cases are missing from %s" % (len(SUBSET) - len(cases),
                                                                          len(SUBSET), testdata))
            return 77 if not cases else 1
        env["KILN_AARCH64_RUNTIME_LIB"] = os.path.join(out, "no-aarch64")
    print("sweep: %d cases%s" % (len(cases), " (KILN_REPRO_ALL=1)" if full else ""))
    jobs = [(kiln, cases[k:k + CHUNK], env) for k in range(0, len(cases), CHUNK)]
    text = ""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for part in pool.map(run_chunk, jobs):
            text += part
    with open(os.path.join(out, "sweep.log"), "w") as f:
        f.write(text)
    same = re.findall(r"^REPRODUCIBLE (.+?): \d+ checks", text, re.M)
    differ = re.findall(r"^NOT REPRODUCIBLE (.+?): \d+ of", text, re.M)
    errors = re.findall(r"^ERROR (.+?): (.*)$", text, re.M)
    a64_same = len(re.findall(r"^  aarch64=ref\s+same", text, re.M))
    a64_differ = len(re.findall(r"^  aarch64=ref\s+DIFFERS", text, re.M))
    failures, now = [], []
    # The lines of each differing case, for the log
    blocks = re.split(r"(?m)^(?=\S)", text)
    for case in differ:
        name = os.path.relpath(case, testdata) if case.startswith(testdata) else os.path.relpath(case, out)
        detail = "".join(b for b in blocks if b.startswith(case + ":") and "DIFFERS" in b)
        print("differs: %s\n%s" % (name, detail.rstrip()))
        if name not in KNOWN:
            failures.append("%s differs" % name)
    for case in same:
        name = os.path.relpath(case, testdata) if case.startswith(testdata) else os.path.relpath(case, out)
        if name in KNOWN:
            now.append(name)
    for case, why in errors:
        print("error: %s: %s" % (case, why))
        if not full:
            failures.append("%s: %s" % (case, why))
    for name, why in sorted(KNOWN.items()):
        print("known: %s: %s" % (name, why))
    for n in now:
        print("now holds: %s (remove it from KNOWN)" % n)
    for f in failures:
        print("FAIL:", f)
    print("sweep: %d cases: %d the same bits, %d differ, %d not compiled; aarch64 %d same, %d differ"
          % (len(cases), len(same), len(differ), len(errors), a64_same, a64_differ))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
