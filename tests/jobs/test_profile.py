"""The profile stage on this CPU: real (estimated) measurements of tiny models, and the
rows of configurations that fail. Protocol settings are tiny so the tests run in seconds."""

import math

import helpers.tiny_models  # noqa: F401  (registers the jbtest_* models with timm)
import pandas as pd
import pytest
import torch
from conftest import REPO
from helpers.profile_job import job
from torch import nn

from joulebench.cli import main as cli_main
from joulebench.core.methods import Method, parse_methods
from joulebench.core.protocol import ProtocolSettings
from joulebench.jobs.profile import JobSession, run_profile
from joulebench.table_io import conform
from joulebench.tables import PROFILE_COLUMNS, REPEAT_TABLE_COLUMNS


@pytest.mark.slow
def test_every_method_and_batch_size_is_measured():
    out = run_profile(job("jbtest_tiny", methods=("fp32", "bf16")), log=lambda s: None)
    rows = conform(out.rows, PROFILE_COLUMNS)
    assert len(rows) == 4
    assert set(zip(rows.method, rows.batch_size, strict=True)) == {
        ("fp32", 1),
        ("fp32", 4),
        ("bf16", 1),
        ("bf16", 4),
    }
    assert (rows.status == "ok").all()
    # No RAPL here: the energy is the labelled estimate, and the row says why.
    assert rows.meter.str.startswith("estimate:").all() and rows.is_estimate.all()
    assert rows.meter_reasons.str.contains("rapl").all()
    assert (rows.energy_per_image_j > 0).all()
    assert (rows.energy_per_image_ci95_low_j <= rows.energy_per_image_j).all()
    assert (rows.energy_per_image_j <= rows.energy_per_image_ci95_high_j).all()
    # Dynamic energy is total minus the configured idle power over the window.
    assert (rows.dynamic_energy_per_image_j < rows.energy_per_image_j).all()
    assert (rows.repeats == 2).all() and (rows.images >= 2 * rows.batch_size * 2).all()
    assert len(out.repeats) == 8
    assert list(conform(out.repeats, REPEAT_TABLE_COLUMNS).columns) == list(REPEAT_TABLE_COLUMNS)
    for column in ("device_name", "host", "torch_version", "timm_version", "start_time_utc"):
        assert rows[column].str.len().gt(0).all(), column
    assert (rows.weights == "random").all()
    # measured in the job's seeded order, each row saying its place; listed in the configs'
    j = job("jbtest_tiny", methods=("fp32", "bf16"))
    order = j.measurement_order()
    assert sorted(rows.config_order) == [1, 2, 3, 4]
    assert list(rows.config_order) == [order.index(i) + 1 for i in range(4)]
    assert list(zip(rows.method, rows.batch_size, strict=True)) == [
        (m.name, b) for _, m, b in j.configs()
    ]


def test_configurations_are_measured_in_a_seeded_shuffled_order():
    """A fixed order would make the heat earlier configurations leave a bias of the later
    ones; shuffled per job (and the same on a rerun) it is noise."""
    methods, sizes = ("fp32", "bf16"), (1, 2, 4, 8, 16, 32)
    a = job("jbtest_tiny", methods=methods, batch_sizes=sizes).measurement_order()
    assert a == job("jbtest_tiny", methods=methods, batch_sizes=sizes).measurement_order()
    assert sorted(a) == list(range(12)) and a != list(range(12))
    b = job("jbtest_other", methods=methods, batch_sizes=sizes).measurement_order()
    assert b != a


def test_a_methods_batch_sizes_are_measured_back_to_back_in_a_seeded_order():
    """Grouped by method (so a following batch size warms up briefly), yet the order of
    the methods and of each method's batch sizes is still shuffled and seeded."""
    methods, sizes = ("fp32", "bf16"), (1, 2, 4, 8, 16, 32)
    orders = []
    for model in "abcdefgh":
        j = job(model, methods=methods, batch_sizes=sizes)
        configs, order = j.configs(), j.measurement_order()
        names = [configs[i][1].name for i in order]
        assert names == sorted(names, key=names.index)  # each method's run is contiguous
        orders.append([(configs[i][1].name, configs[i][2]) for i in order])
    assert len({o[0][0] for o in orders}) == 2  # either method may come first
    assert len({tuple(b for _, b in o[:6]) for o in orders}) == 8  # batch sizes shuffled
    assert all(o[:6] != sorted(o[:6]) for o in orders)


@pytest.mark.slow
def test_a_following_batch_size_gets_the_short_warm_up():
    """The first configuration of a method warms up for warmup_min_s at least; the next
    batch size of that method skips the floor, and its row says so."""
    from dataclasses import replace

    j = job("jbtest_tiny", methods=("fp32", "bf16"), batch_sizes=(1, 2))
    settings = replace(j.spec.settings, warmup_min_s=0.6, warmup_max_s=3.0)
    j = replace(j, spec=replace(j.spec, settings=settings))
    out = run_profile(j, log=lambda s: None)
    rows = out.rows.sort_values("config_order")
    assert rows.warmup_kind.tolist() == ["full", "short", "full", "short"]
    full, short = rows[rows.warmup_kind == "full"], rows[rows.warmup_kind == "short"]
    assert (full.warmup_s >= 0.6).all()
    assert (short.warmup_s < 0.6).all()
    assert (short.warmup_iters >= j.spec.settings.warmup_min_iters).all()
    assert kind_of_settings(j, True) == ("short", 0.0)
    assert kind_of_settings(j, False) == ("full", 0.6)


def kind_of_settings(j, follows: bool):
    kind, settings = JobSession(j, j.bind_device()).warmup_for(follows)
    return kind, settings.warmup_min_s


@pytest.mark.slow
def test_out_of_memory_retries_at_half_the_batch():
    out = run_profile(job("jbtest_tiny_oom_above_2", batch_sizes=(8,)), log=lambda s: None)
    row = out.rows.iloc[0]
    assert row.status == "ok"
    assert (row.batch_size_requested, row.batch_size) == (8, 2)


@pytest.mark.slow
def test_out_of_memory_without_retry_is_a_row():
    j = job("jbtest_tiny_oom_above_2", batch_sizes=(8, 1), oom_retry=False)
    out = run_profile(j, log=lambda s: None)
    assert out.rows.status.tolist() == ["oom", "ok"]
    assert "out of memory" in out.rows.reason.iloc[0]
    assert math.isnan(out.rows.energy_per_image_j.iloc[0])


@pytest.mark.slow
def test_build_and_run_errors_are_rows():
    out = run_profile(job("jbtest_unbuildable", batch_sizes=(1,)), log=lambda s: None)
    assert out.rows.status.tolist() == ["build-error"]
    assert "cannot build this one" in out.rows.reason.iloc[0]
    out = run_profile(job("jbtest_tiny_fails_forward", batch_sizes=(1,)), log=lambda s: None)
    assert out.rows.status.tolist() == ["error"]
    assert "unsupported op" in out.rows.reason.iloc[0]
    assert len(out.repeats) == 0  # no half-measured repeats left behind


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ("jbtest_tiny_returns_nan", "values are NaN"),
        ("jbtest_tiny_returns_inf", "values are inf"),
        ("jbtest_tiny_returns_one_row", "not one row per image of the batch of 4"),
    ],
)
@pytest.mark.slow
def test_a_forward_returning_nan_inf_or_the_wrong_shape_is_a_row_with_a_reason(model, problem):
    out = run_profile(job(model, batch_sizes=(4,)), log=lambda s: None)
    assert out.rows.status.tolist() == ["error"]
    reason = out.rows.reason.iloc[0]
    assert reason.startswith("the model's output is no answer: ") and problem in reason
    assert math.isnan(out.rows.energy_per_image_j.iloc[0]) and len(out.repeats) == 0


def test_method_prepare_channels_last_and_cast():
    model, x = nn.Conv2d(3, 4, 1), torch.randn(2, 3, 8, 8)
    m, y = Method("cl", channels_last=True).prepare(model, x)
    assert y.is_contiguous(memory_format=torch.channels_last)
    m, y = Method("half", precision="bf16", autocast=False).prepare(nn.Conv2d(3, 4, 1), x)
    assert y.dtype == torch.bfloat16 and m.weight.dtype == torch.bfloat16
    with Method("amp", precision="bf16").context("cpu"):
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16 and torch.is_autocast_enabled(
            "cpu"
        )


def test_bad_method_spec_is_an_error():
    with pytest.raises(ValueError, match="precision"):
        parse_methods({"x": {"precision": "fp8"}})
    with pytest.raises(ValueError, match="method y"):
        parse_methods({"y": {"precison": "fp32"}})


@pytest.mark.slow
def test_cli_profile_prints_a_table(capsys, tmp_path):
    """Measured by a worker process (jobs.job_runner): a workload file, which it can load
    (a model registered in this test process only, it could not)."""
    out = tmp_path / "rows.parquet"
    workload = str(REPO / "tests" / "workloads" / "tiny_net.py") + ":build"
    code = cli_main(
        ["profile", workload, "--batch-size", "2", "--preset", "smoke", "--repeats", "3"]
        + ["--threads", "1", "--quiet-wait-s", "0", "--output", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "tiny_net" in printed and "mJ/image" in printed and "ESTIMATED" in printed
    rows = pd.read_parquet(out)
    assert rows.status.tolist() == ["ok"]
    assert rows.protocol_preset.tolist() == ["smoke"] and rows.repeats.tolist() == [3]


def test_a_model_measured_now_takes_its_presets_windows_unless_told():
    from joulebench.jobs.adhoc import adhoc_protocol

    assert adhoc_protocol() == {  # the default preset's 3 windows of 2 s, exactly
        "preset": "default", "repeats": 3, "min_repeat_s": 2.0, "ci_target": None,
        "max_repeats": 12,
    }  # fmt: skip
    smoke = adhoc_protocol("smoke", repeats=20)
    assert (smoke["repeats"], smoke["min_repeat_s"], smoke["max_repeats"]) == (20, 0.1, 20)
    assert ProtocolSettings.from_dict(smoke).repeats == 20  # max_repeats follows it
    with pytest.raises(ValueError, match=r"unknown protocol preset 'quick'.*'smoke'"):
        adhoc_protocol("quick")


@pytest.mark.slow
def test_cpu_shared_with_a_busy_process_is_flagged_and_the_table_warns():
    import subprocess
    import sys

    from joulebench.jobs.adhoc import format_rows

    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = run_profile(job("jbtest_tiny", batch_sizes=(1,)), log=lambda s: None)
    finally:
        hog.kill()
        hog.wait()
    assert "other-load" in out.rows["flags"].iloc[0]
    warning = [line for line in format_rows(out.rows).splitlines() if "WARNING" in line]
    assert len(warning) == 1 and warning[0].startswith("WARNING: 1 row flagged other-load (")
    assert "not to be trusted; measure again when no other process is busy" in warning[0]


def _table_rows(*rows: dict) -> pd.DataFrame:
    """Profile rows as `joulebench profile` gets them, each energy in J with its CI's top."""
    base = {"model": "m.a", "phase": "inference", "method": "fp32", "batch_size": 8}
    base |= {"status": "ok", "meter": "rapl", "is_estimate": False, "flags": ""}
    base |= {"energy_per_image_cv": 0.02, "throughput_img_s": 1346.0, "power_mean_w": 55.0}
    frame = pd.DataFrame([{**base, **r} for r in rows]).reindex(columns=list(PROFILE_COLUMNS))
    return conform(frame, PROFILE_COLUMNS)


def test_the_profile_table_gives_each_energy_its_ci_in_mj_its_flags_and_a_warning():
    """A CI wider than the value (2 windows on a busy host: 596 ± 750 mJ) is said, never a
    bare half-width without its unit; a flagged row names its flag beside it and under the
    table, once, with what to do."""
    from joulebench.jobs.adhoc import WIDE_CI, format_rows

    text = format_rows(
        _table_rows(
            {"energy_per_image_j": 0.144, "energy_per_image_ci95_high_j": 0.1471},
            {
                "method": "bf16",
                "energy_per_image_j": 0.596,
                "energy_per_image_ci95_high_j": 1.346,
                "flags": "other-load;ci-target-not-met",
            },
            {
                "method": "fp16",
                "status": "skipped",
                "energy_per_image_j": float("nan"),
                "energy_per_image_cv": float("nan"),
                "throughput_img_s": float("nan"),
                "power_mean_w": float("nan"),
            },
        )
    )
    header, fp32, bf16, fp16, *notes = text.splitlines()
    assert "mJ/image ± 95% CI" in header and "flags" in header and "CI95 mJ" not in header
    assert "144 ± 3.1 " in fp32 and fp32.rstrip().endswith(" -") and WIDE_CI not in fp32
    assert f"596 ± 750 {WIDE_CI}" in bf16 and "other-load;ci-target-not-met" in bf16
    assert "1,346" in fp32 and "e+" not in text  # throughput in plain figures
    assert " skipped " in fp16 and "NaN" not in text  # a row without numbers: dashes
    assert notes[0].startswith(f"{WIDE_CI} the 95% CI is wider than the value (1 row)")
    assert notes[1].startswith("WARNING: 1 row flagged other-load (")  # ci-target-not-met: no
    assert len(notes) == 2  # measured by RAPL: no estimate line


def test_an_energy_outside_its_own_ci_shows_the_ci_never_a_negative_width():
    """Issue 40 item 10: it printed '±-190'."""
    from joulebench.jobs.adhoc import WIDE_CI, format_rows

    text = format_rows(
        _table_rows(
            {
                "energy_per_image_j": 0.25,
                "energy_per_image_ci95_low_j": 0.03,
                "energy_per_image_ci95_high_j": 0.06,
            },
        )  # fmt: skip
    )
    assert f"250 (CI 30-60) {WIDE_CI}" in text and "±-" not in text and "± -" not in text


def test_the_eta_starts_from_the_plans_estimate_of_each_configuration():
    """What the job's ETA lines sum: the plan's own estimates in measuring order (a full
    warm-up for a method's first batch size, short after it), 0 s for a skipped one."""
    from joulebench.core.emulation import method_verdict
    from joulebench.jobs.config_time import config_cost
    from joulebench.jobs.profile import job_estimates_s

    specs = {"fp32": {"precision": "fp32"}, "fp16": {"precision": "fp16"}}
    j = job("jbtest_tiny", methods=("fp32", "fp16"), batch_sizes=(1, 4), specs=specs)
    configs = [j.configs()[i] for i in j.measurement_order()]
    full = config_cost(j.spec.settings).total_s
    short = config_cost(j.spec.settings, warmup="short").total_s
    assert full > short
    expected = []
    for k, (_, method, _) in enumerate(configs):
        follows = k > 0 and configs[k - 1][1].name == method.name
        emulated = method_verdict(j.bind_device(), method).skip_reason
        expected.append(0.0 if emulated else short if follows else full)
    assert job_estimates_s(j, j.bind_device(), j.spec.settings, None) == pytest.approx(expected)


def test_a_spec_key_no_job_reads_is_an_error():
    """The profile spec is checked as a rule's --settings are: a typo is said, not dropped."""
    from joulebench.jobs.job_spec import JobSpec, job_spec

    study = {"methods": {"fp32": {}}, "batch_sizes": [1]}
    spec = job_spec("cpu", study)
    assert spec.batch_sizes == (1,) and JobSpec.from_json(spec.to_json()) == spec
    text = spec.to_json()[:-1] + ', "batch_size": 8}'
    with pytest.raises(ValueError, match=r"^job spec: unknown key\(s\) \['batch_size'\]$"):
        JobSpec.from_json(text)
    with pytest.raises(ValueError, match=r"profile: unknown key\(s\) \['idle_s'\]"):
        job_spec("cpu", {**study, "profile": {"idle_s": 1}})
