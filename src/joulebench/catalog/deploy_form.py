"""The deploy form of a model: timm's inference-time re-parameterisation.

RepVGG, MobileOne, FastViT, RepViT, RepGhost, LeViT and others train with parallel branches
(3x3, 1x1 and identity convolutions, each with its BatchNorm) or separate conv + norm pairs
that `timm.utils.model.reparameterize_model` folds into single convolutions for inference:
the same function with fewer operations and activations. Anyone deploying such a model runs
the fused form, so joulebench counts and measures that form unless a method turns it off.
"""

from __future__ import annotations


def _signature(model) -> frozenset:
    """(name, shape) of every parameter and buffer: it changes when branches are fused."""
    return frozenset((k, tuple(v.shape)) for k, v in model.state_dict().items())


def to_deploy_form(model):
    """(model, reparameterized): the model with timm's fused inference form applied in place.

    `reparameterized` is True only when fusing changed the model; a model without
    re-parameterisable modules comes back unchanged with False. Put the model in eval mode
    first (fusing folds BatchNorm running statistics). New tensors are made on the model's
    own device (`meta` included: fused shapes without arithmetic). An exception leaves the
    model partly fused: build it again rather than use it.
    """
    import torch
    from timm.utils.model import reparameterize_model

    first = next(iter(model.parameters()), None)
    device = first.device if first is not None else torch.device("cpu")
    before = _signature(model)
    with torch.device(device):
        model = reparameterize_model(model, inplace=True)
    return model, _signature(model) != before
