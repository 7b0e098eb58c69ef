"""A custom workload for the tests: a user's own small CNN, not a timm model.

`build()` is what a `models:` entry `tests/workloads/tiny_net.py:build` names; the other
functions get a workload wrong on purpose, each in one way.
"""

from torch import nn

INPUT_SIZE = (3, 24, 24)
NUM_CLASSES = 5


class TinyNet(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def build():
    return TinyNet(), {"input_size": INPUT_SIZE, "num_classes": NUM_CLASSES}


def returns_a_model_only():
    return TinyNet()


def returns_no_module():
    return "TinyNet", {"input_size": INPUT_SIZE, "num_classes": NUM_CLASSES}


def spec_without_classes():
    return TinyNet(), {"input_size": INPUT_SIZE}


NOT_A_FUNCTION = 3
