"""Training energy: one step is a forward pass, cross-entropy backward and an optimizer step.

Steps run under the same protocol and meters as inference (joulebench.core.protocol), so
`energy_per_image_j` of a `phase = "train"` row is energy per training sample. Each
configuration trains on one synthetic batch with synthetic labels, made once on the device:
the arithmetic of a step does not depend on the values, and no data loading enters the window.

The model stays in train mode, so BatchNorm normalises with batch statistics and updates its
running statistics every step, as in real training (and a batch of 1 fails in layers that
need more than one value per channel: that configuration becomes an error row).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from joulebench.config_schema import default

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

OPTIMIZERS = ("sgd", "adamw")
DEFAULT_LR = {"sgd": 0.01, "adamw": 1e-3}


@dataclass(frozen=True)
class TrainSpec:
    """How a training step is run; the config's `train:` mapping."""

    optimizer: str = default("train.optimizer")  # sgd (with momentum) or adamw
    lr: float | None = None  # None: 0.01 for sgd, 1e-3 for adamw
    momentum: float = default("train.momentum")  # sgd only
    weight_decay: float | None = None  # None: torch's default for the optimizer
    batch_sizes: tuple[int, ...] | None = None  # None: the inference batch sizes
    seed: int = default("train.seed")  # synthetic labels (and inputs) are drawn from this seed

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"train: optimizer must be one of {OPTIMIZERS}, got {self.optimizer}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"train: lr must be > 0, got {self.lr}")
        if self.batch_sizes is not None:
            sizes = tuple(int(b) for b in self.batch_sizes)
            if not sizes or min(sizes) < 1:
                raise ValueError(f"train: batch_sizes must be >= 1, got {self.batch_sizes}")
            object.__setattr__(self, "batch_sizes", sizes)

    @classmethod
    def from_dict(cls, config: dict | None) -> TrainSpec:
        """Build from the config; unknown keys are an error, not silently ignored."""
        config = {k: v for k, v in dict(config or {}).items() if v is not None}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"train: unknown key(s) {unknown}; known: {sorted(known)}")
        return cls(**config)

    @property
    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else DEFAULT_LR[self.optimizer]


def make_optimizer(params, spec: TrainSpec):
    """The torch optimizer the spec names (torch picks its default foreach/fused kernels)."""
    import torch

    extra = {} if spec.weight_decay is None else {"weight_decay": spec.weight_decay}
    if spec.optimizer == "sgd":
        return torch.optim.SGD(params, lr=spec.learning_rate, momentum=spec.momentum, **extra)
    return torch.optim.AdamW(params, lr=spec.learning_rate, **extra)


def synthetic_labels(batch_size: int, num_classes: int, device: str, seed: int = 0):
    """Class labels for one synthetic batch, reproducible from `seed`."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return torch.randint(num_classes, (batch_size,), generator=generator).to(device)


class TrainStep:
    """One training step, callable as the protocol's `step()`.

    It never waits for the device (no `.item()`): on a GPU the steps queue up like inference
    steps do. The loss of the first and latest step are kept as tensors and read after the
    measurement, to show that the optimizer really trained.
    """

    def __init__(self, model, x, labels, optimizer, context, scaler=None):
        import torch.nn.functional as F

        self.model, self.x, self.labels = model, x, labels
        self.optimizer, self.context, self.scaler = optimizer, context, scaler
        self.loss_fn = F.cross_entropy
        self.first_loss = self.last_loss = None

    def __call__(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        with self.context:  # autocast for mixed precision; cross-entropy itself runs in fp32
            loss = self.loss_fn(self.model(self.x), self.labels)
        if self.scaler is not None:  # fp16 on CUDA: scale the loss, skip steps with inf grads
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        loss = loss.detach()
        if self.first_loss is None:
            self.first_loss = loss
        self.last_loss = loss

    def losses(self) -> dict:
        """Loss of the first and latest step, as floats (this waits for the device)."""
        return {
            "train_loss_first": _as_float(self.first_loss),
            "train_loss_last": _as_float(self.last_loss),
        }


def _as_float(loss) -> float:
    return float(loss) if loss is not None else float("nan")


def make_train_step(model, x, num_classes: int, method, spec: TrainSpec, device: BoundDevice):
    """A TrainStep for a prepared model (train mode) and batch, per the method and spec, on
    `device` (where torch runs it)."""
    import torch

    model.train()
    labels = synthetic_labels(x.shape[0], num_classes, device.tensor_device, spec.seed)
    optimizer = make_optimizer(model.parameters(), spec)
    scaler = None
    scaled = device.grad_scaler_device()  # None on a CPU
    if method.precision == "fp16" and method.autocast and scaled:
        scaler = torch.amp.GradScaler(scaled)
    return TrainStep(model, x, labels, optimizer, method.context(device.torch_type), scaler)
