#!/usr/bin/env python3
"""Export torchvision-equivalent CNNs to ONNX with random weights (no torchvision needed).

    python3 tools/export_models.py --model resnet18|resnet50|vgg16|mobilenetv2|resnet18_bn|all -o DIR

The definitions in ``tools/models/`` are plain-torch re-statements of torchvision's
ResNet-18/50, VGG-16 and MobileNetV2 (same layers, shapes, strides and pads).
Weights are random (seeded); BatchNorm running statistics and affine parameters are
randomized too so that BN folding is really exercised. The batch axis is dynamic
(``N``), the input is 3x224x224 by default.

``resnet18_bn`` is ResNet-18 exported with its BatchNormalization nodes kept
(eval-mode BN, exported with ``training=PRESERVE`` and no constant folding, which
skips the exporter's Conv+BN fusion).

Needs torch (CPU build): ``pip install torch==2.13.0``.
"""
import argparse
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

MODELS = ("resnet18", "resnet50", "vgg16", "mobilenetv2", "resnet18_bn")


def build(name, seed=0):
    """Return an eval-mode torch module with seeded random weights and BN statistics."""
    import torch

    from models import mobilenetv2, resnet, vgg

    torch.manual_seed(seed)
    factories = {
        "resnet18": resnet.resnet18,
        "resnet18_bn": resnet.resnet18,
        "resnet50": resnet.resnet50,
        "vgg16": vgg.vgg16,
        "mobilenetv2": mobilenetv2.mobilenet_v2,
    }
    if name not in factories:
        raise SystemExit("unknown model {!r}; choose from {}".format(name, ", ".join(MODELS)))
    model = factories[name]()
    randomize_batchnorm(model)
    return model.eval()


def randomize_batchnorm(model):
    """Give every BatchNorm2d non-trivial gamma/beta/mean/var (torch.nn.init leaves them identity)."""
    import torch

    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                n = mod.num_features
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                assert mod.running_var.numel() == n


def export(name, out_dir, image_size=224, opset=17, seed=0):
    """Export model ``name`` to ``out_dir/<name>.onnx``; returns the path."""
    import torch

    model = build(name, seed)
    dummy = torch.randn(1, 3, image_size, image_size)
    path = os.path.join(out_dir, name + ".onnx")
    keep_bn = name.endswith("_bn")
    kwargs = dict(
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        opset_version=opset,
        dynamo=False,
    )
    if keep_bn:
        kwargs.update(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    tmp = path + ".tmp"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the TorchScript exporter is deprecated, still works
        torch.onnx.export(model, (dummy,), tmp, **kwargs)
    os.replace(tmp, path)
    return path


def main(argv=None):
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=MODELS + ("all",))
    parser.add_argument("-o", "--out-dir", required=True, help="output directory (created if missing)")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        import torch

        del torch  # only checking that it is installed
    except ImportError:
        print("export_models: error: torch is not installed (pip install torch==2.13.0)", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    names = MODELS if args.model == "all" else (args.model,)
    for name in names:
        path = export(name, args.out_dir, args.image_size, args.opset, args.seed)
        print("wrote {}".format(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
