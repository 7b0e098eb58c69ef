"""Tests of the measurement protocol and its statistics, on a simulated clock and device.

Nothing here sleeps or computes for real: a fake clock advances only when the fake device
finishes work, so warm-up of 60 simulated seconds takes milliseconds and results are exact.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from joulebench.core.meters.base import TRACE_COLUMNS, Meter, Reading
from joulebench.core.protocol import (
    FLAG_CI_TARGET_NOT_MET,
    FLAG_WARMUP_NOT_STEADY,
    PRESETS,
    PROTOCOL_TRACE_COLUMNS,
    REPEAT_COLUMNS,
    BoardState,
    ProtocolSettings,
    SettingsError,
    measure,
    measure_idle,
    warm_up,
)
from joulebench.stats import spread, t_cdf, t_quantile


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Device:
    """A fake accelerator: step() queues work (as CUDA does) unless synchronous; sync() waits.

    `step_s(k, now)` gives the duration of the k-th step (0-based) started at time `now`.
    """

    def __init__(self, clock, step_s=lambda k, now: 0.01, synchronous=False, log=None):
        self.clock, self.step_s, self.synchronous = clock, step_s, synchronous
        self.log = log if log is not None else []
        self.steps = 0
        self.queued_s = 0.0

    def step(self):
        duration = self.step_s(self.steps, self.clock.now + self.queued_s)
        self.steps += 1
        self.log.append("step")
        if self.synchronous:
            self.clock.now += duration
        else:
            self.queued_s += duration

    def sync(self):
        self.log.append("sync")
        self.clock.now += self.queued_s
        self.queued_s = 0.0

    def sleep(self, seconds):
        self.log.append("sleep")
        self.clock.now += seconds


class FakeMeter(Meter):
    """Constant simulated power per window × simulated duration, with a sampled trace.

    `powers_w` gives the power of each successive window (the last one repeats); the trace
    integrates to the counter × (1 + trace_bias), so the disagreement is known.
    """

    name = "fake"

    def __init__(self, clock, powers_w=(100.0,), trace_bias=0.0, flags=None, log=None):
        self.clock, self.powers_w, self.trace_bias = clock, list(powers_w), trace_bias
        self.flags = flags or {}
        self.log = log if log is not None else []
        self.windows = 0
        self.t0 = None

    def begin(self):
        self.log.append("begin")
        self.t0 = self.clock()

    def end(self):
        self.log.append("end")
        duration = self.clock() - self.t0
        power = self.powers_w[min(self.windows, len(self.powers_w) - 1)]
        t = np.arange(0.0, duration, 0.02)
        trace = pd.DataFrame({c: np.full(len(t), math.nan) for c in TRACE_COLUMNS})
        trace["t_s"] = t
        trace["power_w"] = power * (1 + self.trace_bias)
        reading = Reading(
            energy_j=power * duration,
            duration_s=duration,
            energy_trace_j=power * duration * (1 + self.trace_bias),
            trace=trace,
            flags=list(self.flags.get(self.windows, [])),
            start_state={"temperature_c": 40.0 + self.windows, "sm_clock_mhz": 1980},
            end_state={"temperature_c": 42.0 + self.windows, "sm_clock_mhz": 1755},
        )
        self.windows += 1
        return reading


def rig(step_s=lambda k, now: 0.01, powers_w=(100.0,), synchronous=False, **meter_kw):
    clock, log = Clock(), []
    device = Device(clock, step_s, synchronous=synchronous, log=log)
    meter = FakeMeter(clock, powers_w, log=log, **meter_kw)
    return clock, device, meter, log


# fixed windows (no ci_target) unless a test asks for the CI target
FAST = {
    "warmup_min_iters": 10,
    "warmup_min_s": 1.0,
    "min_repeat_s": 2.0,
    "min_repeat_batches": 32,
    "ci_target": None,
    "min_window_refreshes": 50,
}


def run(device, meter, clock, images_per_step=8, idle_power_w=math.nan, **settings):
    return measure(
        device.step,
        device.sync,
        meter,
        images_per_step=images_per_step,
        settings=ProtocolSettings(**{**FAST, **settings}),
        board=BoardState(idle_power_w),
        rng=random.Random(0),
        clock=clock,
        sleep=device.sleep,
    )


# --- statistics -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p, df, expected",
    [
        (0.975, 1, 12.7062),
        (0.975, 2, 4.3027),
        (0.975, 3, 3.1824),
        (0.975, 4, 2.7764),
        (0.975, 10, 2.2281),
        (0.975, 30, 2.0423),
        (0.95, 5, 2.0150),
        (0.995, 7, 3.4995),
        (0.025, 3, -3.1824),
    ],
)
def test_t_quantile_matches_published_table(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_t_cdf_is_a_distribution():
    assert t_cdf(0.0, 5) == 0.5
    assert t_cdf(1.3, 6) + t_cdf(-1.3, 6) == pytest.approx(1.0)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(1)/pi
    with pytest.raises(ValueError):
        t_cdf(1.0, 2.5)


def test_spread_mean_std_cv_and_ci():
    s = spread([1.0, 2.0, 3.0, 4.0])
    std = math.sqrt(5 / 3)
    half = 3.182446 * std / 2
    assert (s.n, s.mean, s.std, s.cv) == (4, 2.5, pytest.approx(std), pytest.approx(std / 2.5))
    assert (s.ci95_low, s.ci95_high) == (pytest.approx(2.5 - half), pytest.approx(2.5 + half))
    assert s.ci95_rel == pytest.approx(half / 2.5)
    assert math.isnan(spread([3.0]).std) and spread([3.0]).mean == 3.0
    assert spread([1.0, math.nan, 3.0]).n == 2


# --- settings -----------------------------------------------------------------------------


def test_settings_from_dict_rejects_unknown_keys():
    settings = ProtocolSettings.from_dict({"repeats": 6, "pause_s": [0.1, 0.3]})
    assert settings.repeats == 6 and settings.pause_s == (0.1, 0.3)
    assert ProtocolSettings.from_dict(None) == ProtocolSettings()
    with pytest.raises(ValueError, match="repeets"):
        ProtocolSettings.from_dict({"repeets": 3})
    with pytest.raises(ValueError, match="pause_s"):
        ProtocolSettings(pause_s=(1.0, 0.5))
    with pytest.raises(ValueError, match="max_repeats"):
        ProtocolSettings(ci_target=0.01, max_repeats=2)


# --- presets ------------------------------------------------------------------------------


def test_presets_resolve_to_concrete_settings():
    strict = ProtocolSettings.from_dict({"preset": "strict"})
    assert (strict.repeats, strict.min_repeat_s, strict.min_repeat_batches) == (4, 5.0, 32)
    assert strict.ci_target is None and strict.min_window_refreshes == 50
    assert strict.min_batches_max_s is None  # as before issue 24, for published numbers
    default = ProtocolSettings.from_dict({"preset": "default"})
    assert default == ProtocolSettings() == ProtocolSettings.from_dict({})
    assert default.ci_target is not None and default.min_repeats >= 3  # adaptive
    fast = ProtocolSettings.from_dict({"preset": "fast"})
    assert fast.min_repeat_s < default.min_repeat_s < strict.min_repeat_s
    smoke = ProtocolSettings.from_dict({"preset": "smoke"})  # whether a study runs: seconds
    assert smoke.repeats == 2 and smoke.ci_target is None and smoke.min_repeat_s < 1
    assert sorted(PRESETS) == ["default", "fast", "smoke", "strict"]


def test_explicit_settings_override_the_presets_values():
    settings = ProtocolSettings.from_dict({"preset": "strict", "repeats": 6, "pause_s": [0, 0]})
    assert (settings.repeats, settings.pause_s) == (6, (0.0, 0.0))
    assert settings.min_repeat_s == 5.0 and settings.ci_target is None  # the rest: strict's
    assert ProtocolSettings.from_dict({"preset": "fast", "ci_target": 0.05}).ci_target == 0.05


def test_an_unknown_preset_is_an_error_listing_the_choices():
    with pytest.raises(ValueError, match=r"'quick'.*\['default', 'fast', 'smoke', 'strict'\]"):
        ProtocolSettings.from_dict({"preset": "quick"})


def test_the_batch_minimum_never_stretches_a_window_past_its_cap():
    # a CPU at 20 s a batch (0.4 img/s at batch 8): one batch is already past min_repeat_s;
    # the 32-batch minimum would make each window 640 s
    step_s = 20.0
    clock, device, meter, _ = rig(step_s=lambda k, now: step_s)
    result = run(device, meter, clock, repeats=3, warmup_min_s=0.0, min_batches_max_s=3.0)
    assert (result.repeats["batches"] == 1).all()
    clock, device, meter, _ = rig(step_s=lambda k, now: 0.05)  # 32 x 50 ms = 1.6 s: kept
    result = run(device, meter, clock, repeats=3, min_repeat_s=0.5, min_batches_max_s=3.0)
    assert (result.repeats["batches"] == 32).all()
    clock, device, meter, _ = slow_rig(step_s=lambda k, now: 0.5)  # NVML: 5 s of refreshes
    result = run(device, meter, clock, repeats=2, min_batches_max_s=3.0)
    assert (result.repeats["batches"] == math.ceil(5.0 * 1.05 / 0.5)).all()  # not 32
    clock, device, meter, _ = slow_rig(step_s=lambda k, now: 0.5)
    result = run(device, meter, clock, repeats=2, min_batches_max_s=None)  # strict's
    assert (result.repeats["batches"] == 32).all()


def test_the_default_preset_stops_at_its_ci_target_and_flags_its_cap():
    def run_default(powers_w):
        clock, device, meter, _ = rig(powers_w=powers_w)
        settings = ProtocolSettings(warmup_min_s=1.0, min_repeat_s=1.0)  # the default preset
        return measure(
            device.step,
            device.sync,
            meter,
            images_per_step=8,
            settings=settings,
            rng=random.Random(0),
            clock=clock,
            sleep=device.sleep,
        ).summary

    steady = run_default([100.0])
    assert steady["repeats"] == 3 and FLAG_CI_TARGET_NOT_MET not in steady["flags"]
    settled = run_default([100.0, 104.0, 97.0, 101.0] + [100.0] * 20)  # a spread, then steady
    assert 3 < settled["repeats"] < ProtocolSettings().max_repeats
    assert settled["energy_per_image_ci95_rel"] < ProtocolSettings().ci_target
    unsteady = run_default([60.0, 140.0] * 20)
    assert unsteady["repeats"] == ProtocolSettings().max_repeats
    assert FLAG_CI_TARGET_NOT_MET in unsteady["flags"].split(";")


def test_repeats_is_the_fewest_windows_with_a_ci_target_never_below_three():
    assert ProtocolSettings(ci_target=0.02, repeats=1).min_repeats == 3
    assert ProtocolSettings(ci_target=0.02, repeats=5).min_repeats == 5
    clock, device, meter, _ = rig(powers_w=(100.0,))
    assert run(device, meter, clock, ci_target=0.02, repeats=5).summary["repeats"] == 5


# --- warm-up ------------------------------------------------------------------------------


def test_warmup_stops_once_steady_but_not_before_min_time():
    clock, device, _, _ = rig()
    settings = ProtocolSettings(warmup_min_iters=10, warmup_min_s=2.0, warmup_chunk_s=0.5)
    w = warm_up(device.step, device.sync, settings, clock=clock)
    assert w.steady
    assert 2.0 <= w.duration_s <= 2.0 + 0.6  # stops within one chunk of the minimum
    assert w.iters == device.steps and w.iters >= 10
    assert w.step_s == pytest.approx(0.01)


def test_warmup_not_before_min_iters():
    clock, device, _, _ = rig(step_s=lambda k, now: 0.5)
    settings = ProtocolSettings(warmup_min_iters=25, warmup_min_s=0.0, warmup_chunk_s=0.5)
    w = warm_up(device.step, device.sync, settings, clock=clock)
    assert w.steady and w.iters == 25


def test_warmup_waits_out_a_slow_start():
    # compilation: the first step takes 20 s, then steps ramp from 30 ms down to 10 ms
    def step_s(k, now):
        return 20.0 if k == 0 else max(0.01, 0.03 - 0.004 * (now - 20.0))

    clock, device, _, _ = rig(step_s=step_s)
    w = warm_up(device.step, device.sync, ProtocolSettings(), clock=clock)
    assert w.steady and w.step_s == pytest.approx(0.01)
    assert w.duration_s > 25.0  # the ramp ends 5 s after compilation


def test_warmup_flags_a_throughput_that_never_settles():
    clock, device, meter, _ = rig(step_s=lambda k, now: 0.01 * math.exp(-0.1 * now))
    result = run(device, meter, clock, warmup_max_s=10.0, repeats=1)
    assert not result.warmup.steady
    assert 10.0 <= result.warmup.duration_s <= 11.0
    assert FLAG_WARMUP_NOT_STEADY in result.summary["flags"].split(";")
    assert result.summary["warmup_steady"] is False


def test_steady_warmup_sets_no_flag():
    clock, device, meter, _ = rig()
    result = run(device, meter, clock, repeats=2)
    assert result.summary["flags"] == ""
    assert result.summary["warmup_iters"] == result.warmup.iters > 0


# --- windows ------------------------------------------------------------------------------


@pytest.mark.parametrize("step_s", [0.001, 0.01, 0.2])
def test_windows_meet_min_seconds_and_min_batches(step_s):
    clock, device, meter, _ = rig(step_s=lambda k, now: step_s)
    settings = {"repeats": 3, "min_repeat_s": 2.0, "min_repeat_batches": 32}
    result = run(device, meter, clock, **settings, min_batches_max_s=None)
    rows = result.repeats
    assert len(rows) == 3
    assert (rows["duration_s"] >= 2.0).all()
    assert (rows["batches"] >= 32).all()
    assert (rows["images"] == rows["batches"] * 8).all()


def test_window_tops_up_when_steps_speed_up_after_warmup():
    # warm-up sees 10 ms steps; from 1.05 s on (inside the first window) they take 4 ms, so
    # the window sized from warm-up would end too early and must be topped up
    clock, device, meter, log = rig(step_s=lambda k, now: 0.01 if now < 1.05 else 0.004)
    result = run(device, meter, clock, warmup_min_s=1.0, min_repeat_s=2.0, repeats=1)
    assert result.warmup.duration_s < 1.05
    assert result.repeats["duration_s"].iloc[0] >= 2.0
    window = log[log.index("begin") : log.index("end")]
    assert 2 <= window.count("sync") <= 4  # topped up in a chunk or two, not synced per step


def test_meter_opens_and_closes_right_after_a_sync_and_nothing_runs_between_windows():
    clock, device, meter, log = rig()
    run(device, meter, clock, repeats=4)
    begins = [i for i, e in enumerate(log) if e == "begin"]
    ends = [i for i, e in enumerate(log) if e == "end"]
    assert len(begins) == len(ends) == 4
    for i in begins + ends:
        assert log[i - 1] == "sync"
    for end, next_begin in zip(ends, begins[1:], strict=False):
        between = log[end + 1 : next_begin]
        assert "step" not in between
        assert between.count("sleep") == 1  # exactly one randomised pause
    for begin, end in zip(begins, ends, strict=True):
        assert "sleep" not in log[begin:end]


def test_pauses_are_random_within_bounds():
    clock, device, meter, _ = rig()
    result = run(device, meter, clock, repeats=5, pause_s=(0.2, 1.0))
    pauses = result.repeats["pause_before_s"].tolist()
    assert pauses[0] == 0.0
    assert all(0.2 <= p <= 1.0 for p in pauses[1:])
    assert len(set(pauses[1:])) == 4


def test_progress_is_called_between_repeats_never_inside_a_window():
    clock, device, meter, log = rig()
    phases = []

    def progress(phase, info):
        log.append("progress")
        phases.append((phase, info))

    measure(
        device.step,
        device.sync,
        meter,
        images_per_step=4,
        settings=ProtocolSettings(**FAST, repeats=3),
        clock=clock,
        sleep=device.sleep,
        progress=progress,
    )
    assert [p for p, _ in phases] == ["warmup", "repeat", "repeat", "repeat"]
    assert [info["repeat"] for p, info in phases if p == "repeat"] == [0, 1, 2]
    inside = False
    for event in log:
        inside = {"begin": True, "end": False}.get(event, inside)
        assert not (inside and event == "progress")


# --- energy and statistics of a measurement ------------------------------------------------


def test_energy_per_image_and_dynamic_energy_with_known_power():
    clock, device, meter, _ = rig(powers_w=(100.0,), trace_bias=0.02)
    result = run(device, meter, clock, images_per_step=8, idle_power_w=40.0, repeats=4)
    rows = result.repeats
    assert list(rows.columns) == REPEAT_COLUMNS
    # 10 ms per batch of 8 at 100 W: 0.125 J per image, 0.075 J above 40 W idle
    assert rows["energy_per_image_j"].to_numpy() == pytest.approx([0.125] * 4)
    assert rows["dynamic_energy_per_image_j"].to_numpy() == pytest.approx([0.075] * 4)
    assert rows["throughput_img_s"].to_numpy() == pytest.approx([800.0] * 4)
    assert rows["latency_ms_mean"].to_numpy() == pytest.approx([10.0] * 4)
    assert rows["power_mean_w"].to_numpy() == pytest.approx([102.0] * 4)  # from the trace
    assert rows["trace_disagreement"].to_numpy() == pytest.approx([0.02] * 4)
    assert rows["latency_ms_p50"].isna().all()  # steps are asynchronous: mean only
    assert rows["start_temperature_c"].tolist() == [40.0, 41.0, 42.0, 43.0]
    assert rows["end_sm_clock_mhz"].tolist() == [1755.0] * 4
    s = result.summary
    assert s["energy_per_image_j"] == pytest.approx(0.125)
    assert s["dynamic_energy_per_image_j"] == pytest.approx(0.075)
    assert s["energy_per_image_cv"] == pytest.approx(0.0, abs=1e-9)
    assert s["trace_disagreement_max"] == pytest.approx(0.02)
    assert (s["meter"], s["is_estimate"], s["repeats"]) == ("fake", False, 4)


def test_dynamic_energy_is_nan_when_idle_power_is_unknown():
    clock, device, meter, _ = rig()
    result = run(device, meter, clock, repeats=2)
    assert result.repeats["dynamic_energy_per_image_j"].isna().all()
    assert math.isnan(result.summary["dynamic_energy_per_image_j"])
    assert result.summary["energy_per_image_j"] == pytest.approx(0.125)


def test_cv_and_ci_across_repeats_with_varying_power():
    powers = [100.0, 110.0, 90.0, 104.0]
    clock, device, meter, _ = rig(powers_w=powers)
    result = run(device, meter, clock, images_per_step=8, repeats=4)
    per_image = np.array(powers) * 0.01 / 8
    mean, std = per_image.mean(), per_image.std(ddof=1)
    half = 3.182446 * std / 2
    s = result.summary
    assert s["energy_per_image_j"] == pytest.approx(mean)
    assert s["energy_per_image_std_j"] == pytest.approx(std)
    assert s["energy_per_image_cv"] == pytest.approx(std / mean)
    assert s["energy_per_image_ci95_low_j"] == pytest.approx(mean - half)
    assert s["energy_per_image_ci95_high_j"] == pytest.approx(mean + half)
    assert s["energy_per_image_ci95_rel"] == pytest.approx(half / mean)


def test_ci_target_stops_early_but_never_before_three_repeats():
    clock, device, meter, _ = rig(powers_w=(100.0,))
    result = run(device, meter, clock, ci_target=0.01, max_repeats=10)
    assert result.summary["repeats"] == 3
    assert FLAG_CI_TARGET_NOT_MET not in result.summary["flags"]


def test_ci_target_keeps_going_until_met():
    # noisy first repeats, then stable: the CI narrows only once stable windows dominate
    powers = [80.0, 120.0, 100.0] + [100.0] * 20
    clock, device, meter, _ = rig(powers_w=powers)
    result = run(device, meter, clock, ci_target=0.05, max_repeats=20)
    n = result.summary["repeats"]
    assert 3 < n < 20
    assert result.summary["energy_per_image_ci95_rel"] < 0.05
    assert spread(result.repeats["energy_per_image_j"][: n - 1]).ci95_rel >= 0.05


def test_ci_target_not_met_is_flagged_at_max_repeats():
    clock, device, meter, _ = rig(powers_w=[60.0, 140.0] * 10)
    result = run(device, meter, clock, ci_target=0.01, max_repeats=5)
    assert result.summary["repeats"] == 5
    assert FLAG_CI_TARGET_NOT_MET in result.summary["flags"].split(";")


def test_per_step_latency_percentiles_on_synchronous_steps():
    clock, device, meter, _ = rig(
        step_s=lambda k, now: 0.05 if k % 10 == 9 else 0.01, synchronous=True
    )
    result = run(device, meter, clock, per_step_timing=True, repeats=2)
    rows = result.repeats
    assert rows["latency_ms_p50"].to_numpy() == pytest.approx([10.0, 10.0])
    assert rows["latency_ms_p95"].to_numpy() == pytest.approx([50.0, 50.0])
    assert result.summary["latency_ms_p50"] == pytest.approx(10.0)
    assert result.summary["latency_ms_mean"] == pytest.approx(14.0, rel=0.02)


def test_meter_flags_are_kept_per_repeat_and_in_the_summary():
    clock, device, meter, _ = rig(flags={1: ["other-process"]})
    result = run(device, meter, clock, repeats=3)
    assert result.repeats["flags"].tolist() == ["", "other-process", ""]
    assert result.summary["flags"] == "other-process"


def test_trace_is_stacked_with_a_repeat_column():
    clock, device, meter, _ = rig()
    result = run(device, meter, clock, repeats=3)
    trace = result.trace
    assert list(trace.columns) == PROTOCOL_TRACE_COLUMNS
    assert sorted(trace["repeat"].unique()) == [0, 1, 2]
    assert trace.groupby("repeat")["t_s"].min().tolist() == [0.0, 0.0, 0.0]
    assert result.summary["power_max_w"] == pytest.approx(100.0)


def test_no_trace_gives_an_empty_frame_and_power_from_the_counter():
    class CounterOnly(FakeMeter):
        def end(self):
            reading = super().end()
            reading.trace, reading.energy_trace_j = None, math.nan
            return reading

    clock, device, _, log = rig()
    meter = CounterOnly(clock, (50.0,), log=log)
    result = run(device, meter, clock, repeats=2)
    assert result.trace.empty and list(result.trace.columns) == PROTOCOL_TRACE_COLUMNS
    assert result.repeats["power_mean_w"].to_numpy() == pytest.approx([50.0, 50.0])
    assert result.repeats["power_max_w"].isna().all()
    assert math.isnan(result.summary["trace_disagreement_max"])


# --- idle ---------------------------------------------------------------------------------


def test_measure_idle_returns_the_meters_power():
    clock = Clock()
    device = Device(clock)
    meter = FakeMeter(clock, powers_w=(42.0,))
    idle = measure_idle(meter, 3.0, sleep=device.sleep)
    assert idle.power_w == pytest.approx(42.0)
    assert idle.duration_s == pytest.approx(3.0)
    assert idle.energy_j == pytest.approx(126.0)
    assert (idle.meter, idle.is_estimate) == ("fake", False)
    assert len(idle.trace) == 150


# --- a slowly refreshing power sensor (NVML): window length and phase shifts ---------------


def slow_rig(refresh_s=0.1, **kw):
    clock, device, meter, log = rig(**kw)
    meter.refresh_s = refresh_s  # as NvmlMeter says for its GPU
    return clock, device, meter, log


def test_slow_sensor_windows_are_shifted_in_phase_inside():
    clock, device, meter, log = slow_rig()
    result = run(device, meter, clock, repeats=3, phase_shifts=8)
    begins = [i for i, e in enumerate(log) if e == "begin"]
    ends = [i for i, e in enumerate(log) if e == "end"]
    for begin, end in zip(begins, ends, strict=True):
        window = log[begin:end]
        assert window.count("sleep") == 8  # the phase shifts, each right after a sync
        assert all(window[i - 1] == "sync" for i, e in enumerate(window) if e == "sleep")
    shifts = result.repeats["phase_shift_s"]
    # each of the 8 delays is 0.5-1.5 x 2 refreshes / 9 (sweep_periods 2): a window's total
    # is 0.5-1.5 x 16/9 refresh
    low, high = 0.5 * 16 * 0.1 / 9, 1.5 * 16 * 0.1 / 9
    assert shifts.between(low, high).all()
    assert len(set(shifts.round(9))) == 3  # redrawn for every window


def test_phase_shifts_are_left_out_of_throughput_and_energy_per_image():
    clock, device, meter, _ = slow_rig(powers_w=(100.0,))
    result = run(device, meter, clock, images_per_step=8, idle_power_w=40.0, repeats=2)
    for _, row in result.repeats.iterrows():
        work_s = row["duration_s"] - row["phase_shift_s"]
        assert row["phase_shift_s"] > 0
        assert row["throughput_img_s"] == pytest.approx(800.0)  # 10 ms per batch of 8
        assert row["latency_ms_mean"] == pytest.approx(10.0)
        # the fake meter reads 100 W during the delays too; their idle share is taken out
        expected = (100.0 * row["duration_s"] - 40.0 * row["phase_shift_s"]) / row["images"]
        assert row["energy_per_image_j"] == pytest.approx(expected)
        assert row["energy_j"] == pytest.approx(100.0 * row["duration_s"])  # the raw counter
        assert work_s >= 2.0  # min_repeat_s counts work, not delays


def test_window_spans_enough_sensor_refreshes():
    clock, device, meter, _ = slow_rig(refresh_s=0.5)
    result = run(device, meter, clock, repeats=2, min_repeat_s=2.0, min_window_refreshes=10)
    work = result.repeats["duration_s"] - result.repeats["phase_shift_s"]
    assert (work >= 5.0).all() and (work < 5.0 * 1.1).all()


def test_phase_shifts_can_be_turned_off():
    clock, device, meter, log = slow_rig()
    result = run(device, meter, clock, repeats=2, phase_shifts=0)
    assert (result.repeats["phase_shift_s"] == 0).all()
    for begin, end in zip(
        [i for i, e in enumerate(log) if e == "begin"],
        [i for i, e in enumerate(log) if e == "end"],
        strict=True,
    ):
        assert "sleep" not in log[begin:end]


def test_per_step_latency_leaves_the_phase_shifts_out():
    clock, device, meter, _ = slow_rig(step_s=lambda k, now: 0.01, synchronous=True)
    result = run(device, meter, clock, per_step_timing=True, repeats=2, phase_shifts=8)
    rows = result.repeats
    assert (rows["phase_shift_s"] > 0).all()
    assert rows["latency_ms_p95"].to_numpy() == pytest.approx([10.0, 10.0])
    assert rows["latency_ms_mean"].to_numpy() == pytest.approx([10.0, 10.0])


def test_settings_reject_negative_phase_shifts():
    with pytest.raises(ValueError, match="phase_shifts"):
        ProtocolSettings(phase_shifts=-1)


def test_slow_sensor_windows_open_after_a_refresh_period_of_work():
    for settings in ({}, {"count_edges": False}):
        clock, device, meter, log = slow_rig()
        run(device, meter, clock, repeats=2, **settings)
        second = log.index("begin", log.index("end"))
        pause = max(i for i in range(second) if log[i] == "sleep")  # the pause between repeats
        lead = log[pause + 1 : second]
        # 0.1 s of 10 ms steps, then the sync the window opens on: the sensor's last reading
        # before the window is of the same work, and the batches between two windows vary
        # their place in a host-side cycle (with the window's edges counted too: without it a
        # paused workload's windows all saw the same part of its cycle, 20 % off, silently)
        assert lead == ["step"] * 10 + ["sync"]
    clock, device, meter, log = slow_rig()
    run(device, meter, clock, repeats=2, lead_in=False)
    second = log.index("begin", log.index("end"))
    assert log[second - 2 : second] == ["sleep", "sync"]  # straight from the pause


# --- heat: the state a row is stated at ------------------------------------------------------


def test_rows_are_stated_at_the_sustained_temperature_when_the_boards_heat_is_known():
    from joulebench.core.heat import HeatCalibration, IdleState, window_heat

    clock, device, meter, _ = rig(powers_w=(200.0,))
    cal = HeatCalibration(c_per_w=0.1, leakage_per_c=0.01)
    result = measure(
        device.step,
        device.sync,
        meter,
        images_per_step=8,
        settings=ProtocolSettings(**FAST),
        rng=random.Random(0),
        clock=clock,
        sleep=device.sleep,
        board=BoardState(50.0, 35.0, heat=cal),
    )
    rows = result.repeats
    assert (rows["thermal_state"] == "sustained").all()
    for _, row in rows.iterrows():  # the fake meter: 200 W, from 40 + i to 42 + i C
        state = window_heat(
            cal, IdleState(50.0, 35.0), row["start_temperature_c"], row["end_temperature_c"], 200.0
        )
        assert row["thermal_correction"] == pytest.approx(state.factor - 1.0)
        assert row["sustained_temperature_c"] == pytest.approx(state.sustained_c)
        assert row["energy_per_image_j"] == pytest.approx(
            200.0 * row["duration_s"] * state.factor / row["images"]
        )
        assert row["idle_power_w"] == pytest.approx(state.idle_power_w)  # the window's idle
        expected = 200.0 * state.factor - state.idle_sustained_w
        assert row["dynamic_energy_per_image_j"] == pytest.approx(
            expected * row["duration_s"] / row["images"]
        )
    s = result.summary
    assert s["thermal_state"] == "sustained" and s["thermal_correction"] > 0.05
    assert s["sustained_temperature_c"] == pytest.approx(rows["sustained_temperature_c"].mean())


def test_rows_without_the_boards_heat_say_as_run_and_are_unchanged():
    clock, device, meter, _ = rig(powers_w=(200.0,))
    result = run(device, meter, clock, idle_power_w=50.0, repeats=2)
    rows = result.repeats
    assert (rows["thermal_state"] == "as-run").all() and (rows["thermal_correction"] == 0).all()
    assert rows["sustained_temperature_c"].isna().all()
    assert rows["energy_per_image_j"].to_numpy() == pytest.approx(
        (200.0 * rows["duration_s"] / rows["images"]).to_numpy()
    )
    assert result.summary["thermal_state"] == "as-run"


def test_a_window_whose_temperature_drifted_is_flagged():
    class Drifting(FakeMeter):
        def end(self):
            reading = super().end()
            reading.end_state = {"temperature_c": reading.start_state["temperature_c"] + 4.0}
            return reading

    clock, device, _, log = rig()
    result = run(device, Drifting(clock, log=log), clock, repeats=2)
    assert result.repeats["flags"].tolist() == ["thermal-drift", "thermal-drift"]
    assert result.summary["flags"] == "thermal-drift"


def test_a_spread_far_above_the_sensors_is_flagged():
    from joulebench.core.protocol import expected_cv, spread_flags

    # 5 s windows on a 100 ms sensor: 50 readings, sampling alone explains a CV of 0.1 / 7
    assert expected_cv(0.1, 5.0) == pytest.approx(0.1 / math.sqrt(50))
    assert spread_flags(0.01, 0.1, 5.0) == []
    assert spread_flags(0.05, 0.1, 5.0) == ["spread-above-sensor"]
    assert spread_flags(0.05, None, 5.0) == []  # no refreshing sensor: nothing to compare with
    # such a spread gets more windows (up to spread_repeats), a steady one does not
    clock, device, meter, _ = slow_rig(powers_w=(100.0, 150.0) * 10)
    wide = run(device, meter, clock, repeats=4).summary
    assert "spread-above-sensor" in wide["flags"] and wide["repeats"] == 8
    clock, device, meter, _ = slow_rig(powers_w=(100.0, 150.0) * 10)
    assert run(device, meter, clock, repeats=4, spread_repeats=0).summary["repeats"] == 4
    clock, device, meter, _ = slow_rig(powers_w=(100.0,))
    steady = run(device, meter, clock, repeats=4).summary
    assert "spread-above-sensor" not in steady["flags"] and steady["repeats"] == 4


def test_windows_that_disagree_sweep_more_refresh_periods():
    """Windows sweep two refresh periods (sweep_periods); once spread-above-sensor shows,
    later ones a random 2-4 (spread_sweep_periods), so a host pattern whose drift cancels a
    whole-period sweep cannot stay in step; steady windows keep two, strict's one."""
    period_s = 32 * 0.1 / 33  # one period: 32 delays of refresh / 33 on average

    def between(shifts, low, high):
        return shifts.between(0.5 * low * period_s, 1.5 * high * period_s).all()

    clock, device, meter, _ = slow_rig(powers_w=(100.0, 150.0) * 10)
    shifts = run(device, meter, clock, repeats=4).repeats["phase_shift_s"]
    assert between(shifts[:3], 2, 2)  # before the spread shows
    later = shifts[3:]
    assert between(later, 2, 4)
    assert later.mean() > 2.5 * period_s and later.round(6).nunique() == len(later)
    clock, device, meter, _ = slow_rig(powers_w=(100.0, 150.0) * 10)
    fixed = run(device, meter, clock, repeats=4, spread_sweep_periods=(2, 2)).repeats
    assert between(fixed["phase_shift_s"], 2, 2)
    clock, device, meter, _ = slow_rig(powers_w=(100.0,))
    steady = run(device, meter, clock, repeats=4).repeats["phase_shift_s"]
    assert between(steady, 2, 2)
    clock, device, meter, _ = slow_rig(powers_w=(100.0, 150.0) * 10)
    one = run(device, meter, clock, repeats=4, sweep_periods=1, spread_sweep_periods=(1, 1))
    assert between(one.repeats["phase_shift_s"], 1, 1)
    strict = ProtocolSettings.from_dict({"preset": "strict"})
    assert (strict.sweep_periods, strict.spread_sweep_periods) == (1.0, (1.0, 1.0))
    for bad in [(0, 2), (3, 1), (1, 11), (1,)]:
        with pytest.raises(SettingsError, match="spread_sweep_periods"):
            ProtocolSettings(spread_sweep_periods=bad)
    for bad in (0, -1, 11):
        with pytest.raises(SettingsError, match="sweep_periods"):
            ProtocolSettings(sweep_periods=bad)


def test_a_systematic_bound_widens_the_ci_in_quadrature():
    from joulebench.core.protocol import widen_ci

    summary = {
        "energy_per_image_j": 1.0,
        "energy_per_image_ci95_low_j": 0.97,
        "energy_per_image_ci95_high_j": 1.03,
        "dynamic_energy_per_image_j": 0.5,
        "dynamic_energy_per_image_ci95_low_j": 0.47,
        "dynamic_energy_per_image_ci95_high_j": 0.53,
    }
    wide = widen_ci(summary, 0.04)
    assert wide["energy_per_image_ci95_low_j"] == pytest.approx(0.95)
    assert wide["energy_per_image_ci95_high_j"] == pytest.approx(1.05)
    assert wide["energy_per_image_ci95_rel"] == pytest.approx(0.05)
    assert wide["dynamic_energy_per_image_ci95_rel"] == pytest.approx(0.1)


def test_a_counter_scaled_to_the_window_is_used_unless_the_protocol_says_not():
    class Edges(FakeMeter):
        def end(self):
            reading = super().end()
            reading.energy_counter_j = reading.energy_j
            reading.energy_edges_j = reading.energy_j * 1.02  # what counter_edges would say
            return reading

    for count_edges, factor in ((True, 1.02), (False, 1.0)):
        clock, device, _, log = slow_rig()
        meter = Edges(clock, (100.0,), log=log)
        meter.refresh_s = 0.1
        result = run(device, meter, clock, repeats=3, count_edges=count_edges)
        rows = result.repeats
        assert (rows["energy_j"] / rows["energy_counter_j"]).to_numpy() == pytest.approx(
            [factor] * 3
        )
    assert not ProtocolSettings.from_dict({"preset": "strict"}).count_edges


def test_windows_are_sized_to_the_meter_where_the_study_and_preset_leave_them():
    """issue 34: an estimate needs its steps timed, a millisecond counter no 2 s windows; a
    GPU's sensor keeps the defaults; what a study or a preset sets stays."""
    from joulebench.core.protocol import METER_SIZED

    sensor = ProtocolSettings.from_dict({}, "sensor")
    assert sensor == ProtocolSettings() == ProtocolSettings.from_dict({})
    counter = ProtocolSettings.from_dict({}, "counter")
    assert counter.min_repeat_s == 1.0 and counter.ci_target == sensor.ci_target
    estimate = ProtocolSettings.from_dict({}, "estimate")
    assert (estimate.min_repeat_s, estimate.ci_target, estimate.max_repeats) == (1.0, 0.05, 5)
    # a study's own values win, and a sized cap never refuses the repeats it asks for
    given = ProtocolSettings.from_dict({"min_repeat_s": 3.0, "repeats": 8}, "estimate")
    assert given.min_repeat_s == 3.0 and given.max_repeats == 8 and given.ci_target == 0.05
    # the strict preset (published numbers) sets every sized key itself: unchanged
    for kind in METER_SIZED:
        assert ProtocolSettings.from_dict({"preset": "strict"}, kind) == ProtocolSettings.from_dict(
            {"preset": "strict"}
        )
    with pytest.raises(ValueError, match="unknown meter kind"):
        ProtocolSettings.from_dict({}, "abacus")


def test_a_ci_says_what_it_covers():
    """An estimate's windows differ only in timing: its CI covers timing, not the model."""
    from joulebench.core.protocol import meter_kind

    clock, device, meter, _ = rig()
    assert meter_kind(meter) == "counter"
    assert run(device, meter, clock, repeats=3).summary["ci_covers"] == "measurement"
    clock, device, meter, _ = rig()
    meter.is_estimate = True
    assert meter_kind(meter) == "estimate"
    assert run(device, meter, clock, repeats=3).summary["ci_covers"] == "timing"
    meter.refresh_s = 0.1
    assert meter_kind(meter) == "sensor"
