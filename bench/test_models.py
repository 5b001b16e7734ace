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


def mlp_bn_test():
    """A PyTorch MLP whose BatchNorm1d runs on [N, C, 1]: Gemm, Unsqueeze,
    BatchNormalization, Squeeze per layer (issue 29)."""
    import io
    import onnx
    import torch
    import cases
    m = cases.mlp_bn_module("unsqueeze", c=64, dims=(256, 256, 128, 64)).eval()
    f = io.BytesIO()
    torch.onnx.export(m, (torch.randn(4, 64),), f, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=13)
    return onnx.load_from_string(f.getvalue())


def resnet1d_test():
    """DeepBoostedJet-style 1-D ResNet over 100 particles as Conv2d (3, 1) on
    [N, C, P, 1] (tests/realmodels/resnet1d_model.py)."""
    import resnet1d_model
    return resnet1d_model.export(particles=100)[0]


def interaction_test():
    """An interaction network over 30 particles (Rr, Rs as MatMuls, the edge
    and object MLPs between transposes: tests/realmodels/interaction_model.py)."""
    import interaction_model
    return interaction_model.export()[0]


PART = dict(npf=50, nsv=5, embed=128, heads=8, blocks=4, cls_blocks=2, pair_dims=(64, 64))


def part_test():
    """A Particle Transformer as weaver-core defines it (tests/realmodels/
    part_model.py: particle and pair embeddings, the pair features over the
    triangle of pairs, 4 particle and 2 class-attention blocks, d 128, 8
    heads), exported at opset 17 with dynamic batch and particle axes, the
    particle axes then fixed (50 pf, 5 sv) as --shape would."""
    import part_model
    m, _ = part_model.export(opset=17, **PART)
    sizes = {"n_pf": PART["npf"], "n_sv": PART["nsv"]}
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in sizes:
                d.dim_value = sizes[d.dim_param]
    return m


def part_test_inputs(batch, seed):
    """Plausible jets (physical 4-vectors: random ones give NaN pair
    features), in the model's input order."""
    import part_model
    jets = part_model.jets(batch, PART["npf"], PART["nsv"], seed=seed)
    return [jets[k] for k in part_model.NAMES]


MAKERS = {"deepjet_test": deepjet_test, "particlenet_test": particlenet_test,
          "mlp_bn_test": mlp_bn_test, "resnet1d_test": resnet1d_test,
          "interaction_test": interaction_test, "part_test": part_test}
# Workloads whose inputs are not normal noise: name -> fn(batch, seed) -> arrays
INPUTS = {"part_test": part_test_inputs}


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
