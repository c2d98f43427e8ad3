"""VGG-16 (configuration D, no BatchNorm) with torchvision's layer structure."""
import torch
from torch import nn

CFG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class VGG(nn.Module):
    """Conv3x3/ReLU stacks with max-pools, 7x7 adaptive avg-pool, three fully connected layers."""

    def __init__(self, cfg=CFG_D, num_classes=1000):
        super().__init__()
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def vgg16(num_classes=1000):
    """VGG-16 (13 convs, all 3x3 stride 1 pad 1 with bias, each followed by ReLU)."""
    return VGG(CFG_D, num_classes)
