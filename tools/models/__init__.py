"""Plain-torch re-statements of torchvision's ResNet, VGG and MobileNetV2 (same layer shapes)."""
