#!/usr/bin/env python3
"""The test suite's own real-architecture checks as benchmark workloads:
the DeepJet-style and ParticleNet-style models of tests/realmodels/cases.py
(exported from PyTorch there and compared with ONNX Runtime by the
realmodels suite), which issue 11 measures beside deepjet_like and
particlenet_like.

    BENCH_MODELS_DIR=DIR bench/test_models.py [deepjet_test] [particlenet_test]

writes DIR/NAME.onnx (default DIR: bench/models). Deterministic: torch is
seeded before each module is built."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "realmodels"))
MODEL_DIR = os.environ.get("BENCH_MODELS_DIR", os.path.join(HERE, "models"))


def deepjet_test():
    import cases
    return cases.deepjet_style(1)[0]


def particlenet_test():
    import edgeconv_model
    return edgeconv_model.export()[0]


MAKERS = {"deepjet_test": deepjet_test, "particlenet_test": particlenet_test}


def main(names):
    import onnx
    import torch
    os.makedirs(MODEL_DIR, exist_ok=True)
    for name in names or list(MAKERS):
        if name not in MAKERS:
            sys.exit(f"test_models.py: unknown workload {name!r} (known: {', '.join(MAKERS)})")
        torch.manual_seed(0)
        onnx.save(MAKERS[name](), os.path.join(MODEL_DIR, name + ".onnx"))
        print(f"test_models.py: wrote {name}.onnx", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
