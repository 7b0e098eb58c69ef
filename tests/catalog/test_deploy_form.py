"""The deploy form: timm's re-parameterisation, counted in the catalog, measured in the
profile, evaluated for accuracy, and carried into the summary; off per method."""

from __future__ import annotations

import pandas as pd
import pytest
import timm
import torch
from helpers.profile_job import job
from helpers.timm_models import register
from timm.utils.model import reparameterize_model
from torch import nn

from joulebench.analysis.summary import build_summary
from joulebench.catalog.build import build_catalog, catalog_row
from joulebench.catalog.counting import count
from joulebench.catalog.deploy_form import to_deploy_form
from joulebench.core.methods import Method, parse_methods
from joulebench.jobs.profile import build, run_profile
from joulebench.table_io import conform
from joulebench.tables import CATALOG_COLUMNS, PROFILE_COLUMNS

REPVGG = "repvgg_a0.rvgg_in1k"
MOBILEONE = "mobileone_s0.apple_in1k"


def randomise_norm_statistics(model: torch.nn.Module, seed: int = 0) -> None:
    """Non-trivial BatchNorm statistics, so fusing them into convolutions is really tested."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


class _Branchy(nn.Module):
    """A 3x3 and a 1x1 branch that `reparameterize()` folds into one 3x3 convolution."""

    def __init__(self, fail: str = ""):
        super().__init__()
        self.fail = fail
        self.k3, self.k1 = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(3, 4, 1)
        self.fused = None

    def reparameterize(self):
        if self.fail == "always" or (self.fail == "on-meta" and self.k3.weight.is_meta):
            raise RuntimeError(f"cannot fuse ({self.fail})")
        weight = self.k3.weight.detach().clone()
        weight[:, :, 1:2, 1:2] += self.k1.weight.detach()
        self.fused = nn.Conv2d(3, 4, 3, padding=1)
        self.fused.weight.data, self.fused.bias.data = weight, self.k3.bias + self.k1.bias
        del self.k3, self.k1

    def forward(self, x):
        return self.fused(x) if self.fused is not None else self.k3(x) + self.k1(x)


class _BranchyNet(nn.Module):
    def __init__(self, fail="", num_classes=10, **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.block = _Branchy(fail)
        self.head = nn.Linear(4, num_classes)

    def forward(self, x):
        return self.head(self.block(x).mean((2, 3)))


register("jbtest_branchy", _BranchyNet)
register("jbtest_branchy_fails", _BranchyNet, fail="always")
register("jbtest_branchy_fails_on_meta", _BranchyNet, fail="on-meta")


def test_fusing_that_fails_is_said_and_never_hidden():
    good = catalog_row("jbtest_branchy")
    assert good["reparameterized"] is True and good["count_device"] == "meta"
    pixels = 224 * 224
    assert good["macs_per_image"] == pixels * 4 * 27 + 40  # one 3x3 convolution, the head
    assert good["macs_per_image_unfused"] == pixels * 4 * (27 + 3) + 40

    # Fusing needs real tensors: counted on the CPU, still in the deploy form.
    on_cpu = catalog_row("jbtest_branchy_fails_on_meta")
    assert on_cpu["count_device"] == "cpu" and on_cpu["reparameterized"] is True
    assert "cannot fuse (on-meta)" in on_cpu["reason"]
    assert on_cpu["macs_per_image"] == good["macs_per_image"]

    # Fusing fails everywhere: the row counts the model as built and says why.
    row = catalog_row("jbtest_branchy_fails")
    assert row["status"] == "ok" and row["reparameterized"] is False
    assert row["macs_per_image"] == row["macs_per_image_unfused"] == good["macs_per_image_unfused"]
    assert "reparameterize failed: RuntimeError: cannot fuse (always)" in row["reason"]

    # A profile never measures a half-fused model: a build error that names the way out.
    with pytest.raises(RuntimeError, match="set reparameterize: false on method fp32"):
        build("jbtest_branchy_fails", Method("fp32"), 1, "cpu")
    assert not build(
        "jbtest_branchy_fails", Method("raw", reparameterize=False), 1, "cpu"
    ).reparameterized


def test_repvgg_catalog_row_is_the_deploy_form():
    row = catalog_row(REPVGG)
    assert row["status"] == "ok" and row["reparameterized"] is True and row["reason"] == ""
    # The RepVGG paper's deploy-form RepVGG-A0: 8.30 M parameters, 1.36 G multiply-adds.
    assert row["params"] == 8_309_384 and row["macs_per_image"] / 1e9 == pytest.approx(
        1.3615, abs=1e-4
    )
    # The model as built is timm's 9.11 M (its results table's param_count).
    assert row["params_unfused"] == 9_108_968
    assert row["macs_per_image_unfused"] / 1e9 == pytest.approx(1.5126, abs=1e-4)
    # The 1x1 branch's outputs go: half the activations of the model as built.
    ratio = row["activations_per_image"] / row["activations_per_image_unfused"]
    assert ratio == pytest.approx(0.5, abs=0.001)
    assert row["flops_per_image"] == 2 * row["macs_per_image"]

    # The same numbers from timm's own function on a real CPU model (the row counts on meta).
    model = timm.create_model(REPVGG).eval()
    as_built = count(model, (3, 224, 224), device="cpu")
    fused = count(reparameterize_model(model), (3, 224, 224), device="cpu")
    assert (row["flops_per_image_unfused"], row["activations_per_image_unfused"]) == (
        as_built.flops,
        as_built.activations,
    )
    assert (row["flops_per_image"], row["activations_per_image"]) == (
        fused.flops,
        fused.activations,
    )


def test_mobileone_catalog_row_is_the_deploy_form():
    row = catalog_row(MOBILEONE)
    assert row["reparameterized"] is True
    # The MobileOne paper's S0 at inference: 2.1 M parameters, 275 M multiply-adds.
    assert row["params"] / 1e6 == pytest.approx(2.08, abs=0.01)
    assert row["macs_per_image"] / 1e6 == pytest.approx(275.1, abs=0.1)
    assert row["params_unfused"] / 1e6 == pytest.approx(5.29, abs=0.01)
    assert row["macs_per_image_unfused"] / 1e9 == pytest.approx(1.052, abs=0.001)
    assert row["activations_per_image"] < 0.3 * row["activations_per_image_unfused"]


def test_a_model_without_fusable_modules_is_unchanged():
    model = timm.create_model("resnet18").eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    same, changed = to_deploy_form(model)
    assert same is model and changed is False
    after = same.state_dict()
    assert before.keys() == after.keys() and all(before[k].equal(after[k]) for k in before)

    df = build_catalog(
        ["resnet18.a1_in1k", "jb=tests/workloads/tiny_net.py:build"], log=lambda s: None
    )
    df = conform(df, CATALOG_COLUMNS).set_index("model")
    assert not df["reparameterized"].any()
    for column in ("params", "flops_per_image", "macs_per_image", "activations_per_image"):
        assert (df[column] == df[f"{column}_unfused"]).all(), column


def test_the_deploy_form_computes_the_same_function():
    for name in ("repvgg_a0", "mobileone_s0"):
        torch.manual_seed(0)
        model = timm.create_model(name).eval()
        randomise_norm_statistics(model)
        x = torch.randn(2, 3, 64, 64)
        with torch.inference_mode():
            want = model(x)
            fused, changed = to_deploy_form(model)
            got = fused(x)
        assert changed
        assert (got - want).abs().max() <= 1e-4 * want.abs().max(), name


def test_methods_reparameterize_by_default_and_can_turn_it_off():
    methods = parse_methods({"fp32": {}, "raw": {"reparameterize": False}})
    assert methods["fp32"].reparameterize is True and methods["raw"].reparameterize is False
    with pytest.raises(ValueError, match="reparameterize must be true or false"):
        parse_methods({"x": {"reparameterize": "no"}})


def _params(built) -> int:
    return sum(p.numel() for p in built.model.parameters())


def test_profile_builds_the_deploy_form_for_inference_only():
    row = catalog_row(REPVGG)
    fused = build(REPVGG, Method("fp32"), 1, "cpu")
    assert fused.reparameterized and _params(fused) == row["params"]
    as_built = build(REPVGG, Method("raw", reparameterize=False), 1, "cpu")
    assert not as_built.reparameterized and _params(as_built) == row["params_unfused"]
    training = build(REPVGG, Method("fp32"), 1, "cpu", train=True)  # branches are trained
    assert not training.reparameterized and _params(training) == row["params_unfused"]
    plain = build("resnet18", Method("fp32"), 1, "cpu")
    assert not plain.reparameterized


@pytest.mark.slow
def test_profile_rows_say_which_form_was_measured():
    specs = {"fp32": {"precision": "fp32"}, "fp32-as-built": {"reparameterize": False}}
    fast = job("mobileone_s0", list(specs), (1,), specs, phases=["inference", "train"])
    rows = conform(run_profile(fast, log=lambda s: None).rows, PROFILE_COLUMNS)
    assert (rows.status == "ok").all(), rows.reason.tolist()
    got = dict(zip(zip(rows.phase, rows.method, strict=True), rows.reparameterized, strict=True))
    assert got == {
        ("inference", "fp32"): True,
        ("inference", "fp32-as-built"): False,
        ("train", "fp32"): False,
        ("train", "fp32-as-built"): False,
    }


def test_summary_counts_are_of_the_form_each_row_measured():
    catalog = pd.DataFrame([catalog_row(REPVGG)]).reindex(columns=list(CATALOG_COLUMNS))
    cat = catalog.iloc[0]
    rows = []
    for phase, method, fused in (
        ("inference", "fp32", True),
        ("inference", "raw", False),
        ("train", "fp32", False),
        ("inference", "failed", None),  # nothing measured: the catalog's (deploy form)
    ):
        rows.append(
            {
                "phase": phase,
                "device_label": "cpu",
                "model": REPVGG,
                "method": method,
                "batch_size_requested": 1,
                "batch_size": 1,
                "status": "ok" if fused is not None else "build-error",
                "meter": "estimate:tdp-linear",
                "is_estimate": True,
                "energy_per_image_j": 0.01,
                "reparameterized": fused,
            }
        )
    profile = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    summary = build_summary(profile, catalog).set_index(["phase", "method"])
    for key, form in (
        (("inference", "fp32"), ""),
        (("inference", "raw"), "_unfused"),
        (("train", "fp32"), "_unfused"),
        (("inference", "failed"), ""),
    ):
        for column in ("params", "flops_per_image", "macs_per_image", "activations_per_image"):
            assert summary.loc[key, column] == cat[f"{column}{form}"], (key, column)
    assert summary.loc[("inference", "fp32"), "reparameterized"] == True  # noqa: E712
    assert summary.loc[("train", "fp32"), "reparameterized"] == False  # noqa: E712
    assert pd.isna(summary.loc[("inference", "failed"), "reparameterized"])


def test_measured_accuracy_is_of_the_deploy_form(tmp_path):
    """Local weights of a RepVGG: evaluated fused, with the same answers as the model as built."""
    from helpers.image_folder import make_image_folder
    from safetensors.torch import save_file

    from joulebench.accuracy import measured as accuracy
    from joulebench.accuracy import shards

    make_image_folder(tmp_path / "val")
    torch.manual_seed(0)
    model = timm.create_model(REPVGG).eval()
    randomise_norm_statistics(model)
    (tmp_path / "ckpt").mkdir()
    save_file(model.state_dict(), str(tmp_path / "ckpt" / f"{REPVGG}.safetensors"))
    data_cfg = timm.data.resolve_model_data_config(model)
    src = {"kind": "imagenet-val", "path": str(tmp_path / "val")}
    shard = shards.prepare(src, data_cfg, tmp_path / "prepared", progress=False)

    row = accuracy.measure_models([REPVGG], shard, checkpoints=tmp_path / "ckpt").iloc[0]
    assert row.accuracy_source == "measured", row.accuracy_note
    assert "evaluated in deploy form (reparameterized)" in row.accuracy_note
    as_built = accuracy.evaluate(model, shard, data_cfg["mean"], data_cfg["std"])
    assert (row.top1, row.top5, row.accuracy_images) == as_built
