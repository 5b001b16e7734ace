"""Helpers the PyTorch model files here share (part_model, resnet1d_model,
interaction_model, cases.py)."""
import io
import warnings


def random_bn_stats(module, mean=0.5, var=(0.5, 2.0)):
    """Running statistics and affine parameters of every BatchNorm in module
    drawn at random (fresh ones are the identity, which would hide a wrong
    fold), then eval mode."""
    from torch import nn
    import torch
    with torch.no_grad():
        for mod in module.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.uniform_(-mean, mean)
                mod.running_var.uniform_(*var)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return module.eval()


def export_x(module, x, opset):
    """module(x) -> y exported with a dynamic batch axis N: (ModelProto, {"x": x})."""
    import onnx
    import torch
    f = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.from_numpy(x),), f, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                          opset_version=opset)
    return onnx.load_from_string(f.getvalue()), {"x": x}
