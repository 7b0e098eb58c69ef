"""The cost of a study before it runs (`joulebench plan`, the workflow's first line)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import timm
import yaml
from conftest import REPO

from joulebench import plan as planning
from joulebench.core.backends import NativePrecisions
from joulebench.core.backends.cuda import cuda_native
from joulebench.jobs import config_time
from joulebench.jobs.board_reference import reference_s
from joulebench.jobs.config_time import (
    Eta,
    config_cost,
    config_estimate_s,
    config_min_s,
    format_duration,
)
from joulebench.jobs.first_check import SIMULATED_CHECK_S, check_s
from joulebench.plan import format_plan, one_line, plan_study, slurm_settings
from joulebench.prerun import load_study

# the fixed protocol (the `strict` preset: 4 windows of >= 5 s, warm-up >= 2 s, 0.2-1 s
# pauses): the plan counts its windows exactly
DEFAULT_PROTOCOL = {"preset": "strict"}


def study(**overrides) -> dict:
    config = {
        "methods": {"fp32": {"precision": "fp32"}, "bf16": {"precision": "bf16"}},
        "batch_sizes": [1, 8],
        "phases": ["inference"],
        "protocol": dict(DEFAULT_PROTOCOL),
        "profile": {"idle_pre_s": 2.0},
        "idle": {"duration_s": 10.0},
        "catalog": {"models_per_job": 100},
    }
    config.update(overrides)
    return config


MODELS = [f"m{i}" for i in range(5)]


def method_s(refresh_s=None, protocol=DEFAULT_PROTOCOL, sizes=2) -> float:
    """A method's batch sizes back to back: the first warms up fully, the rest briefly."""
    full = config_cost(protocol, refresh_s=refresh_s).total_s
    return full + (sizes - 1) * config_cost(protocol, refresh_s=refresh_s, warmup="short").total_s


NO_BF16 = NativePrecisions(("fp32",), {"bf16": "this CPU has no avx512_bf16", "fp16": "no"})
ALL_NATIVE = NativePrecisions(("fp32", "fp16", "bf16"))


def test_configurations_and_minimum_measuring_time():
    plan = plan_study(study(), MODELS, {"cpu": "cpu"}, None)
    assert plan.configurations == 1 * 5 * 2 * 2 * 1  # devices x models x methods x bs x phases
    assert plan.config_min_s == 4 * 5.0  # repeats x min_repeat_s
    assert plan.measuring_min_s == 20 * 20.0
    # The estimate adds build, warm-up, pauses, job start-up, idle, catalog and analysis.
    assert plan.total_s > plan.measuring_min_s
    (device,) = plan.devices
    expected = planning.JOB_START_S + 10.0 + 5 * plan.model_job_s
    assert device.estimate_s == pytest.approx(expected)
    assert plan.model_job_s == pytest.approx(planning.JOB_START_S + 2.0 + 2 * method_s())


def test_each_device_is_planned_and_devices_add_up():
    plan = plan_study(study(), MODELS, {"h200-0": "cuda:0", "h200-1": "cuda:1"}, None)
    assert [d.label for d in plan.devices] == ["h200-0", "h200-1"]
    assert plan.configurations == 2 * 20
    assert plan.measuring_min_s == 2 * 20 * 20.0
    assert "40 configurations = 2 devices x 5 models x 2 methods" in format_plan(plan)


def test_gpus_measure_at_once_and_a_cpu_device_adds_its_time():
    gpus = {"h200-0": "cuda:0", "h200-1": "cuda:1"}
    plan = plan_study(study(), MODELS, gpus, None)
    one_gpu = plan.devices[0].estimate_s
    assert plan.measuring_wall_s == pytest.approx(one_gpu)  # at once: the longest
    assert plan.one_at_a_time_s == pytest.approx(plan.total_s + one_gpu)
    assert "the 2 GPU devices measure at once" in format_plan(plan)
    with_cpu = plan_study(study(), MODELS, {**gpus, "cpu": "cpu"}, None)
    cpu = with_cpu.devices[2].estimate_s
    assert with_cpu.measuring_wall_s == pytest.approx(one_gpu + cpu)  # the CPU alone


def test_a_study_on_a_node_with_n_gpus():
    """As `auto` would pick them: one pool of N under the first GPU's label."""
    assert planning.with_gpus({"h200": "cuda"}, 3) == {"h200": ["cuda:0", "cuda:1", "cuda:2"]}
    assert planning.with_gpus({"cpu": "cpu", "g": "sim:h100"}, 2) == {
        "cpu": ["cpu"],
        "g": ["sim:h100:0", "sim:h100:1"],
    }
    with pytest.raises(ValueError, match="needs a study with a GPU device"):
        planning.with_gpus({"cpu": "cpu"}, 8)


def test_a_pool_divides_the_models_among_its_gpus():
    """Each model measured once, by whichever GPU of the pool is free: the models' jobs
    divide by the pool's size (whole jobs), the configurations do not multiply."""
    whole = study(profile={"idle_pre_s": 2.0, "split": "model"})
    one = plan_study(whole, MODELS, {"h200": "cuda:0"}, None)
    pool = plan_study(whole, MODELS, {"h200": ["cuda:0", "cuda:1"]}, None)
    assert pool.configurations == one.configurations
    (d,) = pool.devices
    assert d.gpus == 2
    idle_s = one.devices[0].estimate_s - len(MODELS) * d.model_job_s
    assert d.estimate_s == pytest.approx(idle_s + math.ceil(len(MODELS) / 2) * d.model_job_s)
    text = format_plan(pool)
    assert "h200         2 GPUs" in text
    assert f"(pool h200: its 2 GPUs share the {len(MODELS)} models" in text


def test_a_pool_with_few_models_shares_their_methods():
    """5 models on 2 GPUs (fewer than 4 a GPU): auto splits each model's job by method, so
    the pool's GPUs share 10 jobs of one method each, not 5 whole models (3 in a row)."""
    one = plan_study(study(), MODELS, {"h200": "cuda:0"}, None)
    pool = plan_study(study(), MODELS, {"h200": ["cuda:0", "cuda:1"]}, None)
    (single,), (d,) = one.devices, pool.devices
    assert (single.jobs_per_model, d.jobs_per_model) == (1, 2)  # one GPU: whole models
    idle_s = single.estimate_s - len(MODELS) * single.model_job_s
    part_s = d.job_s  # fp32 and bf16 cost the same here: 10 equal jobs, 5 on each GPU
    assert d.estimate_s == pytest.approx(idle_s + 5 * part_s)
    # each part restarts the job: not 0.5 (each GPU's first check aside: once, in parallel)
    assert d.estimate_s - d.check_s < (single.estimate_s - single.check_s) * 0.6
    assert d.model_job_s == pytest.approx(2 * part_s)
    text = format_plan(pool)
    assert "share the 5 models' 10 jobs (one per model and method: profile split)" in text
    forced = study(profile={"idle_pre_s": 2.0, "split": "method"})
    assert plan_study(forced, MODELS, {"h200": "cuda:0"}, None).devices[0].jobs_per_model == 2
    many = [f"m{i}" for i in range(8)]  # 4 models a GPU: whole models
    pair = {"h200": ["cuda:0", "cuda:1"]}
    assert plan_study(study(), many, pair, None).devices[0].jobs_per_model == 1


def test_a_resumed_pool_counts_the_methods_done(tmp_path):
    """A split model's methods are jobs of their own: each rows file (model+method) is done
    on its own, and the plan estimates only the methods left."""
    rows_dir = tmp_path / "results" / "profile" / "h200" / "rows"
    rows_dir.mkdir(parents=True)
    rows = pd.DataFrame(
        {
            "model": ["m0", "m0"],
            "start_time_utc": ["2026-12-05T10:00:00Z", "2026-12-05T10:01:00Z"],
            "end_time_utc": ["2026-12-05T10:00:30Z", "2026-12-05T10:01:30Z"],
        }
    )
    rows.to_parquet(rows_dir / "m0+fp32.parquet")
    done = planning.measured_rows(tmp_path, ["h200"])
    assert done == {("h200", "m0+fp32"): (2, 60.0)}
    pool = {"h200": ["cuda:0", "cuda:1"]}
    fresh = plan_study(study(), MODELS, pool, None).devices[0]
    resumed = plan_study(study(), MODELS, pool, None, done=done).devices[0]
    assert resumed.done == 2 and resumed.done_s == 60.0
    guess_s = fresh.job_s - planning.JOB_START_S - 2.0  # one method's configurations
    assert resumed.learned_ratio == pytest.approx(60.0 / guess_s)
    job_s = planning.JOB_START_S + 2.0 + 60.0  # each of the 9 jobs left, scaled by it
    assert resumed.one_gpu_s == pytest.approx(9 * job_s)  # no idle job: its label has rows


def test_train_batch_sizes_and_exported_runtimes():
    config = study(
        phases=["inference", "train"],
        train={"batch_sizes": [4, 16, 32]},
        methods={"fp32": {"precision": "fp32"}, "ort": {"runtime": "onnxruntime"}},
    )
    plan = plan_study(config, MODELS, {"cpu": "cpu"}, None)
    # inference: 2 methods x 2 batch sizes; train: PyTorch methods only, x 3 batch sizes.
    assert plan.configurations == 5 * (2 * 2 + 1 * 3)
    assert plan.batch_sizes == {"inference": 2, "train": 3}
    assert "(2 inference + 3 train batch sizes)" in format_plan(plan)
    assert any("ONNX export" in note for note in plan.notes)


def test_ci_target_counts_the_fewest_windows_and_compile_costs_more():
    protocol = {**DEFAULT_PROTOCOL, "ci_target": 0.02, "max_repeats": 12}
    assert config_min_s(protocol) == 4 * 5.0  # the fewest windows: `repeats`, never below 3
    assert config_min_s({**protocol, "repeats": 1}) == 3 * 5.0
    plan = plan_study(study(protocol=protocol), MODELS, {"cpu": "cpu"}, None)
    assert any("up to 12" in note for note in plan.notes)
    eager = config_estimate_s(DEFAULT_PROTOCOL)
    assert config_estimate_s(DEFAULT_PROTOCOL, compile_=True) == eager + config_time.COMPILE_S


def test_slurm_allocations_from_the_profile(tmp_path):
    size, runtime_s = slurm_settings(REPO / "profiles" / "slurm")
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert size == profile["group-components"]["measure"]
    assert runtime_s == 60 * 60  # 60 * attempt minutes, first attempt
    models = [f"m{i}" for i in range(250)]
    plan = plan_study(study(), models, {"a": "cuda:0", "b": "cuda:1"}, REPO / "profiles/slurm")
    s = plan.slurm
    assert s.profile_allocations == 2 * math.ceil(250 / size)
    assert (s.idle_allocations, s.catalog_allocations) == (2, 3)
    assert s.allocations == s.profile_allocations + 2 + 3
    assert s.group_runtime_limit_s == size * 3600
    assert f"{s.allocations:,} allocations" in format_plan(plan)

    # The command line's form of group-components, and a group longer than its limit.
    (tmp_path / "config.yaml").write_text(
        "groups: {profile: measure}\ngroup-components: ['measure=2']\n"
        "set-resources: {profile: {runtime: 1}}\n"
    )
    plan = plan_study(study(), models, {"a": "cuda"}, tmp_path)
    assert plan.slurm.group_size == 2 and plan.slurm.profile_allocations == 125
    assert "WARNING: longer than its runtime limit" in format_plan(plan)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (42.4, "42 s"),
        (95, "1 min 35 s"),
        (1400, "23 min"),
        (7500, "2 h 05 min"),
        (7.3e5, "8 d 10 h"),
    ],
)
def test_durations_read_at_the_precision_a_plan_has(seconds, text):
    assert format_duration(seconds) == text


def test_eta_uses_the_plan_until_configurations_finish():
    now = [100.0]
    eta = Eta([30.0] * 4, clock=lambda: now[0])
    assert eta.line(0) == "elapsed 0 s, ETA 2 min 00 s"
    now[0] += 50  # two configurations took 25 s each
    assert eta.line(2) == "elapsed 50 s, ETA 50 s"


def test_eta_sums_each_configurations_estimate_scaled_by_what_finished():
    """issue 24: the ETA said 45 s for a configuration that took 6 min. Each configuration
    has its own estimate (a skipped one 0 s), and a machine slower than them shows at once."""
    now = [0.0]
    eta = Eta([10.0, 0.0, 10.0, 20.0], clock=lambda: now[0])
    assert eta.left_s(0) == 40.0
    now[0] = 40.0  # the first took 4 times its estimate: so will the rest
    assert eta.left_s(1) == pytest.approx(30.0 * 4)
    assert eta.left_s(2) == pytest.approx(30.0 * 4)  # the skipped one taught nothing


def test_default_study_plan_and_one_line():
    """fp32, channels-last and bf16: on a CPU that only emulates bf16, two real methods."""
    config = load_study()
    plan = plan_study(config, ["a"] * 5, {"cpu": "cpu"}, None, {"cpu": NO_BF16})
    line = one_line(plan)
    assert line.startswith(
        "30 configurations = 1 device x 5 models x 3 methods x 2 batch sizes x 1 phase "
        "(10 skipped: emulated here)"
    )
    # the default preset on this CPU's meter (the estimate, or RAPL: protocol.METER_SIZED):
    # at least 3 windows of 1 s per configuration
    assert "measuring >= 1 min 00 s" in line
    native = plan_study(config, ["a"] * 5, {"cpu": "cpu"}, None, {"cpu": ALL_NATIVE})
    assert "measuring >= 1 min 30 s," in one_line(native) and "skipped" not in one_line(native)


def test_skipped_configurations_cost_about_nothing():
    """issue 24: bf16 emulated on a CPU once took 43 min per configuration; now ~0 s."""
    config = study()  # fp32 and bf16, batch 1 and 8
    devices = {"cpu": "cpu", "v100": "cuda:0"}
    native = {"cpu": NO_BF16, "v100": cuda_native(7, 0)}
    plan = plan_study(config, MODELS, devices, None, native)
    every = plan_study(config, MODELS, devices, None)  # not known: every method measured
    for skipped, measured in zip(plan.devices, every.devices, strict=True):
        assert skipped.configurations == measured.configurations == 20  # still rows
        assert skipped.skipped == 10 and skipped.measuring_min_s == measured.measuring_min_s / 2
        refresh_s = None if skipped.label == "cpu" else planning.DEFAULT_REFRESH_S
        job_s = planning.JOB_START_S + 2.0 + method_s(refresh_s)
        assert skipped.model_job_s == pytest.approx(job_s + 2 * planning.SKIPPED_CONFIG_S)
        first_check_s = skipped.check_s  # a GPU's check and reference readings (0 on a CPU)
        assert first_check_s == (0.0 if skipped.label == "cpu" else check_s() + reference_s())
        assert skipped.estimate_s == pytest.approx(
            planning.JOB_START_S + 10.0 + first_check_s + 5 * job_s
        )
    text = format_plan(plan)
    assert "cpu: 10 configurations skipped (~0 s each): bf16 is only emulated here (this " in text
    assert "v100: 10 configurations skipped" in text and "compute capability 7.0" in text
    assert "allow_emulated: true on a method measures it anyway" in text
    forced = study(methods={"bf16": {"precision": "bf16", "allow_emulated": True}})
    assert plan_study(forced, MODELS, {"cpu": "cpu"}, None, native).devices[0].skipped == 0


def test_each_gpu_is_checked_once_before_its_first_job_where_wanted():
    """issue 33: a GPU's first job runs `joulebench check` (its heat and tail) once, and
    (issue 41) reads its reference levels once; the plan counts them once per device (a
    pool's GPUs at once), never on a CPU, on a simulated GPU only with `on` (seconds of
    simulated time), never with off."""
    devices = {"h200": ["cuda:0", "cuda:1"], "cpu": "cpu", "sim": "sim:h100"}
    auto = {d.label: d.check_s for d in plan_study(study(), MODELS, devices, None).devices}
    assert auto == {"h200": pytest.approx(check_s() + reference_s()), "cpu": 0.0, "sim": 0.0}
    assert 5 * 60 < check_s() < 9 * 60  # the default check: about 7 min
    assert 30 < reference_s() < 90  # the reference readings: about a minute
    profile = {"idle_pre_s": 2.0, "board_reference": "off"}
    on = study(profile={**profile, "check_first": "on"})
    sim = {d.label: d.check_s for d in plan_study(on, MODELS, devices, None).devices}
    assert sim["sim"] == SIMULATED_CHECK_S and sim["cpu"] == 0.0
    off = study(profile={**profile, "check_first": "off"})
    assert all(d.check_s == 0.0 for d in plan_study(off, MODELS, devices, None).devices)
    text = format_plan(plan_study(study(), MODELS, devices, None))
    assert "each GPU is checked once before its first job" in text
    assert "reads its reference levels once" in text


def _plan_command(monkeypatch, capsys, *args: str):
    """`joulebench plan ARGS` from the repository's root, in this process (the command line
    itself is test_cli's): its exit code and what it printed."""
    from joulebench.cli import main

    monkeypatch.chdir(REPO)
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_plan_command_for_the_full_study(monkeypatch, capsys):
    args = ["--configfile", "studies/hidden-joules.yaml"]
    code, out, err = _plan_command(monkeypatch, capsys, *args)
    assert code == 0, err
    n = len(timm.list_pretrained())
    assert f"{n * 5 * 4:,} configurations = 1 device x {n:,} models x 5 methods" in out
    assert f"{1 + math.ceil(n / 100) + math.ceil(n / 8):,} allocations" in out


@pytest.mark.slow
def test_plan_command_for_the_full_study_on_a_node_of_8_gpus(monkeypatch, capsys):
    """--gpus 8: one pool of 8 (as auto picks them), each weight measured once."""
    args = ["--configfile", "studies/hidden-joules.yaml", "--gpus", "8"]
    code, out, err = _plan_command(monkeypatch, capsys, *args)
    assert code == 0, err
    n = len(timm.list_pretrained())
    assert f"{n * 5 * 4:,} configurations = 1 device x {n:,} models" in out
    assert f"(pool h200: its 8 GPUs share the {n:,} models, each measured once" in out


def test_a_slow_step_makes_min_repeat_batches_the_windows_bound():
    """issue 24: bf16 emulated on a CPU, 2.5 s a batch: 32 batches a window, not 5 s."""
    fast = config_cost(DEFAULT_PROTOCOL, step_s=0.01)
    assert fast.windows_s == pytest.approx(4 * 5.0 * config_time.WINDOW_MARGIN, rel=0.01)
    slow = config_cost(DEFAULT_PROTOCOL, step_s=2.5)
    assert slow.windows_s == pytest.approx(4 * 32 * 2.5)  # min_repeat_batches: 32
    fewer = config_cost({**DEFAULT_PROTOCOL, "min_repeat_batches": 2}, step_s=2.5)
    assert fewer.windows_s == pytest.approx(4 * 3 * 2.5)  # ceil(5 x 1.05 / 2.5) batches
    # a GPU's meter: 50 refreshes a window, 32 phase shifts, a refresh of lead-in each
    gpu = config_cost(DEFAULT_PROTOCOL, step_s=0.01, refresh_s=0.2)
    assert gpu.windows_s > 4 * 50 * 0.2 and gpu.lead_in_s == pytest.approx(4 * 0.2)


def test_a_ci_target_counts_the_repeats_the_expected_spread_needs():
    assert config_time.TYPICAL_CV == 0.022  # RAPL's and the estimate's, as measured
    settings = config_time.ProtocolSettings(ci_target=0.06, max_repeats=20)
    assert config_time.repeats_needed(settings, None, 5.0) == 3  # t(2) x 2.2 % / 1.73 < 6 %
    settings = config_time.ProtocolSettings(ci_target=0.05, max_repeats=20)
    assert config_time.repeats_needed(settings, None, 5.0) == 4  # t(3) x 2.2 % / 2 < 5 %
    tight = config_time.ProtocolSettings(ci_target=0.004, max_repeats=20)
    assert config_time.repeats_needed(tight, None, 5.0) == 20  # the cap
    fixed = config_time.ProtocolSettings(repeats=6, ci_target=None)
    assert config_time.repeats_needed(fixed, None, 5.0) == 6


def test_calibrated_step_times_follow_the_window_rules_per_model():
    from joulebench.jobs.calibrate import StepTime

    config = study(methods={"fp32": {"precision": "fp32"}})
    steps = {
        ("cpu", "m0"): {("inference", "fp32", 1): StepTime(0.01, 1.0),
                        ("inference", "fp32", 8): StepTime(2.0, 1.0)},
    }  # fmt: skip
    plan = plan_study(config, MODELS[:2], {"cpu": "cpu"}, None, steps=steps)
    (d,) = plan.devices
    assert d.calibrated == 1
    slow_m0 = (
        planning.JOB_START_S
        + 2.0
        + sum(
            config_cost(DEFAULT_PROTOCOL, step_s=step, build_s=1.0, warmup=kind).total_s
            for step, kind in ((0.01, "full"), (2.0, "short"))
        )
    )
    m1 = planning.JOB_START_S + 2.0 + method_s()
    assert d.estimate_s == pytest.approx(planning.JOB_START_S + 10.0 + slow_m0 + m1)
    assert slow_m0 > m1 + 3 * 60  # batch 8's windows: 4 x 32 x 2 s
    assert "--calibrate: 1 model job" in format_plan(plan)


def test_measured_rows_are_done_and_only_what_is_left_is_estimated(tmp_path):
    import pandas as pd

    folder = tmp_path / "results" / "profile" / "cpu" / "rows"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "model": ["m0", "m0"],
            "start_time_utc": ["2026-12-04T10:00:00", "2026-12-04T10:01:00"],
            "end_time_utc": ["2026-12-04T10:00:30", "2026-12-04T10:02:00"],
        }
    ).to_parquet(folder / "m0.parquet")
    (folder / "broken.parquet").write_text("not parquet")  # a file being written: ignored
    pd.DataFrame(  # a job of `timeout` and `crashed` rows: no start, as the supervisor writes
        {
            "model": ["m1", "m1"],
            "start_time_utc": pd.array([None, None], dtype="string"),
            "end_time_utc": ["2026-12-04T10:00:30.1Z", "2026-12-04T10:02:00.2Z"],
        }
    ).to_parquet(folder / "m1.parquet")
    assert planning.measured_rows(tmp_path, ["cpu"])[("cpu", "m1")] == (2, 0.0)  # not a crash
    (folder / "m1.parquet").unlink()
    done = planning.measured_rows(tmp_path, ["cpu", "gpu"])
    assert done == {("cpu", "m0"): (2, 90.0)}
    config = study(methods={"fp32": {"precision": "fp32"}})
    fresh = plan_study(config, MODELS, {"cpu": "cpu"}, None).devices[0]
    resumed = plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done).devices[0]
    assert (resumed.done, resumed.done_s) == (2, 90.0)
    assert resumed.configurations == fresh.configurations  # still the study's
    # one model's job less, no idle job (it ran before the models), and the models left
    # scaled by how m0 compared with its estimate (90 s measured)
    configs_s = fresh.model_job_s - planning.JOB_START_S - 2.0
    assert resumed.learned_ratio == pytest.approx(90.0 / configs_s)
    left_job_s = planning.JOB_START_S + 2.0 + 90.0
    assert resumed.estimate_s == pytest.approx((len(MODELS) - 1) * left_job_s)
    text = format_plan(plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done))
    assert "cpu: 2 configurations already measured (results/profile), in 1 min 30 s" in text
    assert f"{90.0 / configs_s:.2f}x their estimate, so what is left is scaled by it" in text


def test_a_finished_run_still_says_what_a_model_job_takes():
    """Every model measured: nothing is left, but "per model job" (and a SLURM group's time)
    is what one would take here now, scaled by what the measured ones took, never 0 s."""
    config = study(methods={"fp32": {"precision": "fp32"}})
    fresh = plan_study(config, MODELS, {"cpu": "cpu"}, None)
    configs_s = fresh.devices[0].model_job_s - planning.JOB_START_S - 2.0
    done = {("cpu", m): (2, configs_s / 2) for m in MODELS}  # each took half its estimate
    finished = plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done)
    assert finished.devices[0].estimate_s == 0.0
    assert finished.model_job_s == pytest.approx(planning.JOB_START_S + 2.0 + configs_s / 2)
    assert "per model job: ~0 s" not in format_plan(finished)


def test_a_finished_runs_plan_says_done_on_every_line_and_its_lines_add_up(tmp_path):
    """After a finished run every line of the table says `done` (never a device at 0 s
    beside a total of the catalog's and the analysis's seconds), and the workflow's first
    line says all is measured; a run half done counts what is left, in every column."""
    config = study(methods={"fp32": {"precision": "fp32"}})
    done = {("cpu", m): (2, 30.0) for m in MODELS}
    assert planning.made_here(tmp_path, MODELS) == frozenset()
    (tmp_path / "results" / "webapp").mkdir(parents=True)
    (tmp_path / "results" / "webapp" / "index.html").write_text("<html>")
    pd.DataFrame({"model": MODELS}).to_parquet(tmp_path / "results" / "catalog.parquet")
    made = planning.made_here(tmp_path, MODELS)
    assert made == {"catalog", "page"}
    plan = planning.less_made(plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done), made)
    assert plan.total_s == 0.0 and plan.measuring_min_s == 0.0
    table = format_plan(plan).splitlines()
    for stage in ("cpu ", "catalog ", "analysis ", "total "):
        line = next(t for t in table if t.startswith(stage))
        assert line.endswith(" done") and " 0 s" not in line, line
    assert "(cpu: done: 10 configurations already measured (results/profile), in 2 min 30 s" in (
        "\n".join(table)
    )
    assert one_line(plan).endswith("; all measured already (`joulebench plan` explains)")
    # half done, and a catalog without m4: what is left, the catalog and the analysis too
    half = {key: value for key, value in done.items() if key[1] in MODELS[:2]}
    fresh = plan_study(config, MODELS, {"cpu": "cpu"}, None)
    resumed = planning.less_made(
        plan_study(config, MODELS, {"cpu": "cpu"}, None, done=half),
        planning.made_here(tmp_path, [*MODELS, "m5"]),
    )
    assert resumed.devices[0].measuring_min_s == pytest.approx(fresh.measuring_min_s * 3 / 5)
    assert (resumed.catalog_s, resumed.analysis_s) == (fresh.catalog_s, fresh.analysis_s)
    assert resumed.total_s == pytest.approx(
        resumed.devices[0].estimate_s + resumed.catalog_s + resumed.analysis_s
    )


def test_a_count_of_one_is_singular_and_a_moment_is_not_0_s():
    config = study(methods={"fp32": {"precision": "fp32"}}, batch_sizes=[1])
    plan = plan_study(config, ["m0"], {"cpu": "cpu"}, None)
    assert format_plan(plan).startswith(
        "1 configuration = 1 device x 1 model x 1 method x 1 batch size x 1 phase"
    )
    assert [format_duration(s) for s in (0.2, 0.04, 0.0, 0.96, 4e-5)] == [
        "0.2 s",
        "0 s",
        "0 s",
        "1 s",
        "0 s",
    ]


def test_the_ci_target_note_says_what_the_cap_would_cost():
    """A noisy host runs every configuration to max_repeats: the plan says that total too."""
    config = {**study(methods={"fp32": {"precision": "fp32"}}), "protocol": {"preset": "default"}}
    plan = plan_study(config, MODELS, {"cpu": "cpu"}, None)
    cap = plan.devices[0].settings.max_repeats  # the default preset's, on this CPU's meter
    capped = {"ci_target": None, "repeats": cap}
    at_cap = plan_study({**config, "protocol": capped}, MODELS, {"cpu": "cpu"}, None)
    assert plan.at_cap_s == pytest.approx(at_cap.total_s) and plan.at_cap_s > plan.total_s
    assert f"as on a noisy host: ~{format_duration(plan.at_cap_s)} in all" in format_plan(plan)
    fixed = plan_study({**config, "protocol": {"preset": "strict"}}, MODELS, {"cpu": "cpu"}, None)
    assert fixed.at_cap_s is None and "noisy host" not in format_plan(fixed)


def test_a_resumed_plan_learns_from_the_models_measured_within_bounds():
    config = study(methods={"fp32": {"precision": "fp32"}})
    fresh = plan_study(config, MODELS, {"cpu": "cpu"}, None).devices[0]
    configs_s = fresh.model_job_s - planning.JOB_START_S - 2.0
    for measured_s, ratio in ((configs_s / 2, 0.5), (configs_s * 100, 4.0), (1e-3, 0.25)):
        done = {("cpu", "m0"): (2, measured_s)}
        d = plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done).devices[0]
        assert d.learned_ratio == pytest.approx(ratio)
        job_s = planning.JOB_START_S + 2.0 + ratio * configs_s
        assert d.estimate_s == pytest.approx((len(MODELS) - 1) * job_s)
    # a model timed by --calibrate keeps its own estimate: its steps are known
    steps = {("cpu", "m1"): {}}
    done = {("cpu", "m0"): (2, configs_s / 2)}
    d = plan_study(config, MODELS, {"cpu": "cpu"}, None, steps=steps, done=done).devices[0]
    unscaled = planning.JOB_START_S + 2.0 + configs_s
    scaled = planning.JOB_START_S + 2.0 + configs_s / 2
    assert d.estimate_s == pytest.approx(unscaled + (len(MODELS) - 2) * scaled)
    assert plan_study(config, MODELS, {"cpu": "cpu"}, None).devices[0].learned_ratio is None


def test_a_pool_of_uneven_jobs_is_scheduled_as_its_gpus_come_free():
    assert planning._makespan_s([10.0] * 5, 2) == 30.0  # ceil(5 / 2) in a row
    assert planning._makespan_s([30.0, 10.0, 10.0, 10.0], 2) == 30.0
    assert planning._makespan_s([], 3) == 0.0


def test_the_first_line_of_a_resumed_run_says_what_is_left():
    config = study(methods={"fp32": {"precision": "fp32"}})
    done = {("cpu", "m0"): (2, 90.0)}
    line = one_line(plan_study(config, MODELS, {"cpu": "cpu"}, None, done=done))
    assert "left (2 configurations measured already)" in line
    assert " in all " in one_line(plan_study(config, MODELS, {"cpu": "cpu"}, None))


def test_plan_calibrate_runs_each_model_for_a_moment(tmp_path, monkeypatch, capsys):
    """The command end to end on this CPU: a line per model, then a calibrated plan."""
    import helpers.tiny_models  # noqa: F401  (registers jbtest_tiny with timm)

    from joulebench.cli import main as cli_main

    study_file = tmp_path / "study.yaml"
    study_file.write_text(
        yaml.safe_dump(
            {
                "models": ["jbtest_tiny"],
                "devices": {"cpu": "cpu"},
                "methods": {"fp32": {"precision": "fp32"}},
                "batch_sizes": [1, 2],
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    assert cli_main(["plan", "--configfile", str(study_file), "--calibrate"]) == 0
    out = capsys.readouterr()
    assert "calibrate 1/1 jbtest_tiny on cpu: fp32 bs1 " in out.err
    assert "calibration: " in out.out and "(--calibrate: 1 model job)" in out.out


def test_a_gpu_plan_without_step_times_says_it_counts_every_batch_as_short():
    """Unknown step times size every GPU window for short batches: the plan says so (its
    optimistic end), and says nothing once --calibrate has timed the GPU's models."""
    from joulebench.jobs.calibrate import StepTime

    config = study(protocol={"preset": "default"})
    gpus = {"g": "sim:h100"}
    text = format_plan(plan_study(config, MODELS[:1], gpus, None))
    assert "step times: unknown, so every GPU batch is counted as short (5 windows)" in text
    timed = {
        ("g", "m0"): {
            ("inference", m, b): StepTime(0.2, 1.0) for m in ("fp32", "bf16") for b in (1, 8)
        }
    }
    calibrated = plan_study(config, MODELS[:1], gpus, None, steps=timed)
    assert "step times: unknown" not in format_plan(calibrated)
    assert calibrated.total_s > plan_study(config, MODELS[:1], gpus, None).total_s
    on_cpu = format_plan(plan_study(config, MODELS[:1], {"cpu": "cpu"}, None))
    assert "step times: unknown" not in on_cpu


def test_a_busy_host_plans_the_wait_the_cap_and_slow_warm_ups():
    """issue 34: beside one busy neighbour the default study's jobs waited for it, ran their
    windows to the cap and warmed up for ~BUSY_WARMUP_S; builds and the analysis did not
    slow (docs/benchmarks.md "The first hour of a new user")."""
    config = load_study(REPO / "config.yaml")
    idle = plan_study(config, MODELS, {"cpu": "cpu"}, None, load=planning.HostLoad(0.02))
    busy = plan_study(config, MODELS, {"cpu": "cpu"}, None, load=planning.HostLoad(0.5))
    quiet_gpu = plan_study(config, MODELS, {"h200": "cuda:0"}, None)
    loud_gpu = plan_study(config, MODELS, {"h200": "cuda:0"}, None, load=planning.HostLoad(0.5))
    assert loud_gpu.total_s == quiet_gpu.total_s  # a GPU's windows need no host
    assert (busy.analysis_s, busy.catalog_s) == (idle.analysis_s, idle.catalog_s)
    (cpu_idle,), (cpu_busy,) = idle.devices, busy.devices
    per_config = cpu_busy.settings.max_repeats * cpu_busy.settings.min_repeat_s
    assert cpu_busy.settings.repeats == cpu_busy.settings.max_repeats
    assert cpu_busy.model_job_s > cpu_idle.model_job_s + 6 * (planning.BUSY_WARMUP_S - 3)
    assert cpu_busy.model_job_s > 6 * (per_config + planning.BUSY_WARMUP_S) + 10.0  # the wait
    text = format_plan(busy)
    assert "other processes used 50% of the CPUs" in text and "warm-ups of ~8.6 s" in text
    assert "other processes" not in format_plan(idle)
