"""The train phase on this CPU: the loop really trains (loss falls on a fixed synthetic task,
for SGD and AdamW), and run_profile reports energy per training sample as phase "train"
rows beside the inference rows of the same job."""

import math
from dataclasses import replace

import pytest
import torch
from helpers.profile_job import job, job_of
from helpers.timm_models import register
from helpers.tiny_models import Tiny
from torch import nn

from joulebench.core.backends import bound_device
from joulebench.core.methods import Method
from joulebench.core.train import TrainSpec, make_train_step, synthetic_labels
from joulebench.jobs.profile import run_profile
from joulebench.table_io import conform
from joulebench.tables import PROFILE_COLUMNS


class _TinyBnHead(Tiny):
    """BatchNorm over the pooled features: training needs more than one sample per batch."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.fc(self.norm(self.conv(x).mean((2, 3))))


register("jbtrain_tiny", Tiny)
register("jbtrain_bn_head", _TinyBnHead)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 8, 3, stride=2), nn.BatchNorm2d(8)
        self.conv2, self.fc = nn.Conv2d(8, 16, 3, stride=2), nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.norm(self.conv(x)))
        return self.fc(torch.relu(self.conv2(x)).mean((2, 3)))


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_loss_falls_on_a_fixed_synthetic_task(optimizer):
    torch.manual_seed(0)
    model, x = _Net(), torch.randn(16, 3, 24, 24)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    step = make_train_step(
        model, x, 5, Method("fp32"), TrainSpec(optimizer=optimizer), bound_device("cpu")
    )
    for _ in range(150):
        step()
    losses = step.losses()
    assert losses["train_loss_last"] < 0.5 * losses["train_loss_first"], losses
    assert model.training  # BatchNorm in train mode: batch statistics, running stats updated
    assert not torch.equal(model.norm.running_mean, before["norm.running_mean"])
    assert not torch.equal(model.fc.weight, before["fc.weight"])
    assert step.scaler is None  # a GradScaler only for fp16 autocast on CUDA


def test_labels_are_reproducible_and_in_range():
    a, b = synthetic_labels(64, 7, "cpu", seed=3), synthetic_labels(64, 7, "cpu", seed=3)
    assert torch.equal(a, b) and a.min() >= 0 and a.max() < 7 and a.dtype == torch.int64


def train_job(
    model, optimizer, methods=("fp32",), phases=("inference", "train"), batch_sizes=(4,), **train
):
    return job(
        model,
        methods,
        batch_sizes,
        phases=list(phases),
        train=TrainSpec(optimizer=optimizer, **train),
    )


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_one_job_measures_inference_and_training(optimizer):
    out = run_profile(train_job("jbtrain_tiny", optimizer), log=lambda s: None)
    rows = conform(out.rows, PROFILE_COLUMNS)
    assert rows.phase.tolist() == ["inference", "train"]
    assert (rows.status == "ok").all(), rows.reason.tolist()
    assert (rows.energy_per_image_j > 0).all()  # per image; per training sample for "train"
    train, infer = rows.iloc[1], rows.iloc[0]
    assert train.optimizer == optimizer and train.optimizer_lr > 0
    assert infer.optimizer == "" and math.isnan(infer.optimizer_lr)
    # The measured steps trained the model: the last loss is below the first.
    assert train.train_loss_last < train.train_loss_first
    # Forward + backward + optimizer step costs more than a forward pass of the same batch.
    assert train.energy_per_image_j > infer.energy_per_image_j
    assert (rows.runtime == "pytorch").all() and (rows.workload == "timm").all()


def test_mixed_precision_training_and_train_batch_sizes():
    job = train_job("jbtrain_tiny", "sgd", methods=("bf16",), batch_sizes=[1])
    job = replace(job, spec=replace(job.spec, train=TrainSpec(batch_sizes=[2])))
    out = run_profile(job, log=lambda s: None)
    # Inference at the job's batch sizes, training at the train spec's own.
    assert list(zip(out.rows.phase, out.rows.batch_size, strict=True)) == [
        ("inference", 1),
        ("train", 2),
    ]
    assert (out.rows.status == "ok").all() and (out.rows.precision == "bf16").all()


@pytest.mark.slow
def test_batchnorm_needs_two_samples_per_batch_in_training():
    job = train_job("jbtrain_bn_head", "sgd", batch_sizes=[1, 2])
    out = run_profile(job, log=lambda s: None)
    by = out.rows.set_index(["phase", "batch_size"])
    assert by.loc[("inference", 1), "status"] == "ok"  # eval mode: running statistics
    assert by.loc[("train", 1), "status"] == "error"
    assert "more than 1 value per channel" in by.loc[("train", 1), "reason"]
    assert by.loc[("train", 2), "status"] == "ok"


def test_bad_train_settings_are_errors():
    with pytest.raises(ValueError, match="optimizer"):
        TrainSpec(optimizer="lbfgs")
    with pytest.raises(ValueError, match="unknown key"):
        TrainSpec.from_dict({"optimiser": "sgd"})
    with pytest.raises(ValueError, match="phases"):
        train_job("jbtrain_tiny", "sgd", phases=("inference", "training"))
    assert TrainSpec(optimizer="adamw").learning_rate == 1e-3


def test_spec_keys_become_job_fields():
    minimal = {"torch_device": "cpu", "methods": {"fp32": {}}, "batch_sizes": [1]}
    spec = {**minimal, "phases": ["inference", "train"]}
    job = job_of("m", "cpu", {**spec, "train": {"optimizer": "adamw", "lr": 0.002}})
    assert job.spec.phases == ("inference", "train")
    assert job.spec.train == TrainSpec(optimizer="adamw", lr=0.002)
    assert job_of("m", "cpu", minimal).spec.train == TrainSpec()
