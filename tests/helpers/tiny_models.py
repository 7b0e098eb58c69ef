"""Tiny models registered with timm under jbtest_* names (importing this registers them): one
that runs, one out of memory above batch 2, one whose forward fails, ones whose forward
returns NaN, inf or one row for the whole batch, one that cannot be built. Tests subclass
`Tiny` for their own cases."""

import torch
from torch import nn

from helpers.timm_models import register


class Tiny(nn.Module):
    def __init__(self, num_classes=10, max_batch=None, fail_forward=False, bad=None, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.max_batch, self.fail_forward, self.bad = max_batch, fail_forward, bad
        self.conv = nn.Conv2d(3, 8, 3, stride=4)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        if self.max_batch and x.shape[0] > self.max_batch:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated for this test)")
        if self.fail_forward:
            raise ValueError("unsupported op in forward")
        out = self.fc(self.conv(x).mean((2, 3)))
        if self.bad == "one-row":
            return out[:1]
        return out * float(self.bad) if self.bad in ("nan", "inf") else out


class Unbuildable(nn.Module):
    def __init__(self, **kwargs):
        raise RuntimeError("cannot build this one")


register("jbtest_tiny", Tiny)
register("jbtest_tiny_oom_above_2", Tiny, max_batch=2)
register("jbtest_tiny_fails_forward", Tiny, fail_forward=True)
register("jbtest_tiny_returns_nan", Tiny, bad="nan")
register("jbtest_tiny_returns_inf", Tiny, bad="inf")
register("jbtest_tiny_returns_one_row", Tiny, bad="one-row")
register("jbtest_unbuildable", Unbuildable)
