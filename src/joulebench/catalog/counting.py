"""FLOPs, MACs and activations per image, counted with torch's own dispatcher.

Convention (the one timm's published benchmark tables use, via fvcore):
- FLOPs come from `torch.utils.flop_counter.FlopCounterMode`: matrix products
  (mm, addmm, bmm, baddbmm), convolutions and attention; one multiply-add = 2 FLOPs,
  so MACs = FLOPs / 2. Norms, pooling, activations and other elementwise ops are
  NOT counted (they are a few percent of a CNN's arithmetic, more in some ViTs).
- Activations are the output elements of convolutions and matrix products
  (fvcore's ActivationCountAnalysis: conv, linear, matmul, einsum), attention's two
  products (q @ k^T and attn @ v) included.
- Attention is counted through the math kernel (`SDPBackend.MATH`), which spells it
  as two batched matrix products, so fused kernels are never silently skipped.
- Counts are for one image at the model's input size, on the `meta` device (no memory,
  no arithmetic); a model that cannot run on `meta` is counted on a real CPU tensor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

aten = torch.ops.aten

# Ops whose output elements count as activations (fvcore's default set, at dispatch level).
ACTIVATION_OPS = {
    aten.convolution,
    aten._convolution,
    aten.mm,
    aten.addmm,
    aten.bmm,
    aten.baddbmm,
}


class ActivationCounter(TorchDispatchMode):
    """Sums the output elements of convolutions and matrix products."""

    def __init__(self):
        super().__init__()
        self.activations = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in ACTIVATION_OPS:
            self.activations += out.numel()
        return out


@dataclass
class Counts:
    flops: int
    activations: int

    @property
    def macs(self) -> float:
        return self.flops / 2


def count(model: torch.nn.Module, input_shape: tuple[int, ...], device="meta") -> Counts:
    """Count one forward pass of a batch of one image of `input_shape` (C, H, W)."""
    x = torch.zeros((1, *input_shape), device=device)
    # Nothing requires grad, so no graph is built. (Not torch.no_grad(): under it, the flop
    # counter's module tracker fails on models that pass a parameter straight to a submodule.)
    model.requires_grad_(False)
    flops = FlopCounterMode(display=False)
    acts = ActivationCounter()
    with sdpa_kernel([SDPBackend.MATH]), flops, acts:
        model(x)
    return Counts(flops=int(flops.get_total_flops()), activations=int(acts.activations))
