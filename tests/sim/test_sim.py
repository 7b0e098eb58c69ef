"""The sensor simulator, the protocol proven against it, and `joulebench check` on it.

Everything runs on simulated time (joulebench.sim): a 30 s protocol run takes milliseconds
and every number is reproducible. The simulated sensor refreshes and averages as the SC24
paper measured per GPU generation, so a protocol that reads it wrong fails here
(test_simulated_protocol_without_phase_shifts_misses_the_target shows that it can).
`pytest -k simulat -s` prints the error table.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from joulebench.check.environment import environment_rows
from joulebench.check.gpu import check_gpu, square_wave
from joulebench.check.report import FAIL, PASS, WARN, validate_report
from joulebench.check.rows import CheckSettings
from joulebench.check.sensor_fit import fit_sensor
from joulebench.core.backends import bound_device
from joulebench.core.meters.nvidia_sensors import GENERATIONS, expected_sensor
from joulebench.core.protocol import ProtocolSettings, measure
from joulebench.sim import experiment
from joulebench.sim.rig import SimCheckTarget, simulated_gpu
from joulebench.sim.thermal import THERMAL, Thermal
from joulebench.sim.workload import PowerSignal, Workload

SIM = bound_device("sim:hopper")  # a simulated GPU: its state is read as NVML's

# ---------------------------------------------------------------- the true power signal


def test_simulated_power_signal_integrates_exactly():
    signal = PowerSignal(0.0, 50.0, tau_s=0.01)
    signal.hold(0.2, 250.0)
    signal.hold(0.3, 50.0)
    # numerical integral of the analytic first-order response
    t = np.linspace(0.0, 0.5, 500_001)
    p = np.array([signal.power_w(x) for x in t[::100]])
    numeric = np.trapezoid(p, t[::100])
    assert signal.energy_j(0.0, 0.5) == pytest.approx(numeric, rel=1e-4)
    assert signal.power_w(0.2) == pytest.approx(250.0 - 200.0 * math.exp(-20.0))
    # first-order smoothing keeps the mean: a long run holds the schedule's energy
    long = PowerSignal(0.0, 50.0, tau_s=0.003)
    for _ in range(200):
        long.hold(0.07, 300.0)
        long.hold(0.03, 50.0)
    assert long.energy_j(10.0, 20.0) == pytest.approx(10 * 10 * (0.07 * 300 + 0.03 * 50), rel=1e-6)


def test_simulated_throttling_caps_power_and_stretches_kernels():
    rig = simulated_gpu("a100", board={"power_limit_mw": 200_000})
    workload = Workload(period_s=0.1, duty=1.0, busy_w=300.0)
    start = rig.clock()
    rig.gpu.batch(workload)
    kernel_s = rig.clock() - start
    assert kernel_s > 0.1  # lower clocks, longer kernels
    assert rig.gpu.signal.power_w(rig.clock()) == pytest.approx(200.0, rel=0.01)
    assert rig.gpu.sm_clock_mhz < rig.gpu.max_sm_clock_mhz


# ---------------------------------------------------------------- heat and irregular work


def test_simulated_die_follows_power_with_its_time_constant():
    thermal = Thermal(tau_s=40.0, c_per_w=0.1, ambient_c=30.0, leakage_per_c=0.0)
    rig = simulated_gpu("hopper", thermal=thermal)
    assert rig.gpu.temperature_c() == pytest.approx(36.0)  # idle steady state: 30 + 0.1 x 60
    rig.gpu.busy(40.0, 300.0)  # one time constant at 300 W: 63 % of the way to 60 C
    assert rig.gpu.temperature_c() == pytest.approx(60.0 - 24.0 * math.exp(-1.0), abs=0.01)
    rig.gpu.idle(400.0)
    assert rig.gpu.temperature_c() == pytest.approx(36.0, abs=0.01)


def test_simulated_leakage_grows_power_with_temperature():
    thermal = Thermal(tau_s=20.0, c_per_w=0.1, ambient_c=30.0, leakage_per_c=0.008)
    rig = simulated_gpu("hopper", thermal=thermal)
    rig.gpu.idle(1.0)
    assert rig.gpu.signal.power_w(rig.clock()) == pytest.approx(60.0)  # at ref_c: idle power
    rig.gpu.busy(300.0, 300.0)  # hot steady state: T = 30 + 0.1 P, P = 300 (1 + 0.008 (T - 36))
    hot_w = 300.0 * (1 - 0.008 * 6) / (1 - 0.008 * 0.1 * 300)
    assert rig.gpu.signal.power_w(rig.clock()) == pytest.approx(hot_w, rel=1e-3)
    assert rig.gpu.temperature_c() == pytest.approx(30.0 + 0.1 * hot_w, abs=0.05)
    # the truth at a temperature and the sustained truth follow the same law
    work = Workload(period_s=0.1, duty=1.0)
    assert rig.gpu.true_energy_per_batch_j(work) == pytest.approx(hot_w * 0.1, rel=1e-3)
    assert rig.gpu.true_energy_per_batch_j(work, 36.0) == pytest.approx(30.0)


def test_simulated_clocks_drop_above_the_temperature_limit():
    thermal = Thermal(tau_s=20.0, c_per_w=0.3, ambient_c=30.0, limit_c=80.0)
    rig = simulated_gpu("hopper", thermal=thermal)
    work = Workload(period_s=0.01, duty=1.0)
    rig.gpu.batch(work)
    assert rig.gpu.sm_clock_mhz == rig.gpu.max_sm_clock_mhz
    for _ in range(20_000):  # 200 s at 300 W would settle at 120 C without the limit
        rig.gpu.batch(work)
    assert rig.gpu.sm_clock_mhz < rig.gpu.max_sm_clock_mhz
    assert 80.0 < rig.gpu.temperature_c() < 100.0
    sustained = rig.gpu.sustained_temperature_c(work)
    assert rig.gpu.temperature_c() == pytest.approx(sustained, abs=0.5)


@pytest.mark.parametrize("jittered", [False, True])
def test_simulated_host_pauses_and_period_jitter_keep_their_mean(jittered):
    work = Workload(
        period_s=0.01, pause_s=0.02, pause_every=8, pause_jitter=jittered, period_jitter=0.02
    )
    rig = simulated_gpu("hopper", thermal=THERMAL["hopper"], seed=3)
    starts = []
    for _ in range(4000):
        starts.append(rig.clock())
        rig.gpu.batch(work)
    gaps = np.diff(starts)
    paused = np.flatnonzero(gaps > 0.015)
    intervals = np.diff(paused)
    if jittered:
        assert intervals.min() == 4 and intervals.max() == 12
    else:
        assert set(intervals) == {8}
    assert np.median(gaps[gaps < 0.015]) == pytest.approx(0.01, rel=0.01)
    assert 0.01 < np.std(gaps[gaps < 0.015]) / 0.01 < 0.03  # the period's jitter
    # the simulated energy per batch is the truth at the die's temperature
    a, e_a = rig.clock(), rig.gpu.signal.cumulative_j(rig.clock())
    for _ in range(4000):
        rig.gpu.batch(work)
    per_batch = (rig.gpu.signal.cumulative_j(rig.clock()) - e_a) / 4000
    truth = rig.gpu.true_energy_per_batch_j(work, rig.gpu.temperature_c())
    assert per_batch == pytest.approx(truth, rel=0.01)
    assert rig.clock() - a == pytest.approx(4000 * (0.01 + 0.02 / 8), rel=0.02)


def test_simulated_regular_boards_have_no_heat():
    """Without `thermal` a board's power does not depend on its past: today's cases hold."""
    rig = simulated_gpu("hopper")
    rig.gpu.busy(600.0, 300.0)
    assert rig.gpu.signal.power_w(rig.clock()) == pytest.approx(300.0)
    assert rig.gpu.thermal is None


# ---------------------------------------------------------------- the sensor


@pytest.mark.parametrize("generation", sorted(GENERATIONS))
def test_simulated_sensor_refreshes_and_averages_like_the_published_one(generation):
    spec = GENERATIONS[generation]
    rig = simulated_gpu(generation, noise_w=0.0, phase_s=0.0)
    gpu, sensor, clock = rig.gpu, rig.sensor, rig.clock
    readings, times = [], []
    pattern = random.Random(0)
    for _ in range(2000):  # an irregular load in 1 ms pieces, read after every piece
        if pattern.random() < 0.5:
            gpu.busy(0.001, 300.0)
        else:
            gpu.idle(0.001)
        readings.append(sensor.instant_mw())
        times.append(clock())
    readings, times = np.array(readings), np.array(times)
    changes = times[1:][readings[1:] != readings[:-1]]
    since_refresh = (changes - sensor.phase_s) % spec.refresh_s
    # piecewise constant: it changes only at refresh instants (seen within the 1 ms read step)
    assert len(changes) > 0.9 * 2.0 / spec.refresh_s
    assert ((since_refresh < 0.0011) | (since_refresh > spec.refresh_s - 1e-6)).all()
    # and each reading is the exact mean of the true power over the window before it
    k = math.floor((clock() - sensor.phase_s) / spec.refresh_s)
    t_k = sensor.phase_s + k * spec.refresh_s
    mean_w = gpu.signal.energy_j(t_k - spec.window_s, t_k) / spec.window_s
    assert sensor.instant_mw() == round(mean_w * 1000)


def test_simulated_counter_accumulates_what_the_sensor_reports():
    rig = simulated_gpu("hopper", noise_w=0.0)
    spec, sensor, signal = rig.spec, rig.sensor, rig.gpu.signal
    rig.gpu.idle(0.5)
    t_a, e_a = rig.clock(), sensor.energy_mj()
    for _ in range(60):  # a load with a 50 ms period, locked to the 100 ms refresh, for 3 s
        rig.gpu.busy(0.025, 300.0)
        rig.gpu.idle(0.025)
    t_b, e_b = rig.clock(), sensor.energy_mj()
    # every refresh in (t_a, t_b] added (its window's mean power) x (refresh period)
    k = np.arange(math.floor((t_a - sensor.phase_s) / spec.refresh_s) + 1, 10**6)
    t_k = sensor.phase_s + k * spec.refresh_s
    t_k = t_k[t_k <= t_b]
    means = [round(signal.energy_j(t - spec.window_s, t) / spec.window_s, 3) for t in t_k]
    assert (e_b - e_a) / 1000 == pytest.approx(sum(means) * spec.refresh_s, abs=0.002)
    # 75 % of the time unseen, at one phase: far from the true energy of the same refreshes
    true_j = signal.energy_j(t_k[0] - spec.refresh_s, t_k[-1])
    assert abs((e_b - e_a) / 1000 / true_j - 1) > 0.05
    # counter="exact" is the integral up to the last refresh
    exact = simulated_gpu("hopper", counter="exact", noise_w=0.0)
    exact.gpu.idle(0.5)
    exact.gpu.busy(1.0, 300.0)
    exact.gpu.idle(0.1)
    counted = (exact.sensor.energy_mj() - exact.sensor.energy_offset_mj) / 1000
    assert counted == pytest.approx(exact.gpu.signal.energy_j(1000.0, 1001.6), abs=0.002)


def test_simulated_average_field_is_the_last_second():
    rig = simulated_gpu("hopper", noise_w=0.0)
    rig.gpu.busy(3.0, 300.0)
    rig.gpu.idle(0.5)  # the instant reading is idle now, the 1 s average half way
    assert rig.sensor.instant_mw() == pytest.approx(60_000, abs=5)
    assert rig.sensor.average_mw() == pytest.approx(180_000, rel=0.06)
    # nvmlDeviceGetPowerUsage is that average on Hopper, the instant reading on GA100
    assert rig.sensor.power_usage_mw() == rig.sensor.average_mw()
    a100 = simulated_gpu("a100", noise_w=0.0)
    a100.gpu.busy(1.0, 300.0)
    assert a100.sensor.power_usage_mw() == a100.sensor.instant_mw()


def test_simulated_nvml_serves_the_real_meter():
    rig = simulated_gpu("a100")
    with rig.meter() as meter:
        info = meter.describe()
        assert info["sensor_generation"] == "a100" and info["sensor_refresh_s"] == 0.1
        assert info["sensor_refresh_source"] == "published"
        assert meter.name == "nvml" and "power_avg_w" not in meter.power_fields  # GA100
        meter.begin()
        rig.gpu.busy(2.0, 300.0)
        reading = meter.end()
    # the sampler ran on simulated time: a row every 15 ms, plus the two ends
    assert len(reading.trace) == pytest.approx(2.0 / 0.015 + 2, abs=2)
    assert reading.energy_j == pytest.approx(600.0, rel=0.1)
    with simulated_gpu("pascal").meter() as meter:
        assert meter.name == "nvml:power-integration"  # no counter before Volta
    assert expected_sensor("NVIDIA GH200 480GB").generation == "gh200"
    assert expected_sensor("NVIDIA H100 80GB HBM3").generation == "hopper"
    assert expected_sensor("Some future GPU") is None


# ---------------------------------------------------------------- the protocol, proven


def test_simulated_protocol_within_5_percent_and_never_silently_wrong():
    protocol, naive = experiment.run_all(random_seeds=2)
    table = experiment.protocol_table(protocol, naive)
    print("\n" + experiment.format_table(table))
    errors = protocol["protocol_error"].abs()
    share = float((errors <= experiment.TARGET_ERROR).mean())
    print(f"protocol within 5 %: {share:.1%} of {len(protocol)} cases; worst {errors.max():.1%}")
    assert len(protocol) == len(GENERATIONS) * len(experiment.PERIODS_S) * 3
    assert share >= experiment.TARGET_SHARE
    assert protocol["shown"].all(), protocol.loc[~protocol["shown"]]
    # the naive single short window is badly off where the period locks to the refresh
    locked = naive[naive["generation"].isin(["a100", "hopper"]) & (naive["period_s"] == 0.1)]
    assert locked["naive_error"].abs().max() > 0.3


def test_simulated_protocol_without_phase_shifts_misses_the_target():
    """The simulator can fail a protocol: windows without phase shifts are seen at one phase."""
    cases = experiment.cases(3, ["a100", "hopper"], periods=(0.05, 0.1, 0.2))
    old = ProtocolSettings(phase_shifts=0)
    errors = pd.Series([experiment.run_protocol(c, old)["protocol_error"] for c in cases])
    assert (errors.abs() <= experiment.TARGET_ERROR).mean() < experiment.TARGET_SHARE
    new = pd.Series([experiment.run_protocol(c)["protocol_error"] for c in cases])
    assert (new.abs() <= experiment.TARGET_ERROR).all()


def test_simulated_protocol_keeps_a_lowered_power_limit_and_zeros_honest():
    """Throttled clocks and zero inputs change the truth; the protocol follows it."""
    for board, kind in (({"power_limit_mw": 200_000}, "random"), (None, "zeros")):
        rig = simulated_gpu("hopper", phase_s=0.03, board=board)
        workload = Workload(period_s=0.05, input_kind=kind)
        truth = rig.gpu.true_energy_per_batch_j(workload) / workload.images_per_batch
        with rig.meter() as meter:
            result = measure(
                lambda w=workload, r=rig: r.gpu.batch(w),
                rig.gpu.sync,
                meter,
                images_per_step=workload.images_per_batch,
                rng=random.Random(1),
                clock=rig.clock,
                sleep=rig.gpu.sleep,
            )
        assert result.summary["energy_per_image_j"] == pytest.approx(truth, rel=0.05)


# ---------------------------------------------------------------- joulebench check, simulated


@pytest.mark.parametrize("generation", sorted(GENERATIONS))
def test_simulated_check_recovers_refresh_and_window(generation):
    spec = GENERATIONS[generation]
    rig = simulated_gpu(generation, phase_s=0.3 * spec.refresh_s, seed=3)
    target = SimCheckTarget(rig)
    with target.meter() as meter:
        times, watts, busy = square_wave(target, CheckSettings(), meter.read_power_w)
    fit = fit_sensor(times, watts, busy)
    assert fit.refresh_s == pytest.approx(spec.refresh_s, rel=0.10)
    assert fit.window_s == pytest.approx(spec.window_s, rel=0.10)


def test_simulated_check_reports_the_h100_sensor_and_validates():
    rig = simulated_gpu("hopper", phase_s=0.0123, seed=2)
    report = check_gpu(SimCheckTarget(rig), state=SIM.state).as_dict()
    validate_report(report)
    rows = {r["name"]: r for r in report["results"]}
    assert rows["refresh period"]["value"] == pytest.approx(100.0, rel=0.10)  # ms
    assert rows["averaging window"]["value"] == pytest.approx(25.0, rel=0.10)
    assert rows["refresh period"]["status"] == PASS
    assert rows["counter vs trace"]["value"] <= 0.03
    assert rows["zeros vs random"]["value"] < 1.0  # zeros draw less (the simulator's model)
    assert rows["Zeus"]["status"] == "skip"
    assert report["verdict"] in (PASS, WARN) and report["device"] == "cuda:0"
    assert report["protocol"]["sensor_refresh_s"] == pytest.approx(0.1, rel=0.01)
    assert report["sensor"]["expected"]["generation"] == "hopper"


def test_simulated_check_flags_other_process_mig_and_a_lowered_power_limit():
    board = {
        "other_pids": [4242],
        "mig_mode": 1,
        "power_limit_mw": 250_000,
        "default_power_limit_mw": 400_000,
    }
    rig = simulated_gpu("a100", board=board)
    with rig.meter() as meter:
        rows = {r.name: r for r in environment_rows(meter, SIM.state(meter))}
    assert rows["other processes"].status == FAIL and rows["other processes"].value == 1
    assert rows["MIG"].status == FAIL
    assert rows["power limit"].status == WARN and rows["power limit"].value == 250.0
    with simulated_gpu("a100").meter() as meter:
        clean = {r.name: r.status for r in environment_rows(meter, SIM.state(meter))}
    assert clean["other processes"] == clean["MIG"] == clean["power limit"] == PASS


# ---------------------------------------------------------------- heat and irregular work, proven


def test_heat_cases_are_reproducible_and_draw_their_ranges():
    from joulebench.sim import heat_experiment as he

    case = he.HeatCase("hopper", 0.1, "jittered-pauses", True, 3)
    assert case.workload() == he.HeatCase("hopper", 0.1, "jittered-pauses", True, 3).workload()
    work = case.workload()
    assert 0.001 <= work.pause_s <= 0.05 and 4 <= work.pause_every <= 40 and work.pause_jitter
    assert 0.005 <= work.period_jitter <= 0.02
    thermal = case.thermal()
    assert 20.0 <= thermal.tau_s <= 120.0 and 0.003 <= thermal.leakage_per_c <= 0.01
    assert len(he.cases(2)) == len(GENERATIONS) * len(he.PERIODS_S) * len(he.PATTERNS) * 2
    a = he.run_case(he.HeatCase("a100", 0.05, "pauses", True, 1))
    b = he.run_case(he.HeatCase("a100", 0.05, "pauses", True, 1))
    assert a == b  # seeded: the same case gives the same numbers
    # the sustained truth is the as-run truth at the sustained temperature
    assert (a["mean_c"] < a["sustained_c"]) == (a["truth_as_run_j"] < a["truth_j"])


def test_heat_cases_can_tell_the_protocol_a_wrong_refresh_period():
    """The bench sweeps the refresh period the protocol is told (a check or a published value
    off the sensor's own): windows span min_window_refreshes of the period told."""
    from joulebench.sim import heat_experiment as he

    case = he.HeatCase("hopper", 0.01, "regular", True, 2)
    told = he.run_case(case, heat_error=0.05, refresh_error=0.2)
    right = he.run_case(case, heat_error=0.05)

    def window_s(refresh_s):  # default: 20 refreshes (x 1.05 margin) + a two-period sweep
        return 20 * refresh_s * 1.05 + 2 * refresh_s * 32 / 33

    assert right["measured_s"] / right["repeats"] == pytest.approx(window_s(0.1), rel=0.03)
    assert told["measured_s"] / told["repeats"] == pytest.approx(window_s(0.12), rel=0.03)
    assert abs(told["error"]) < 0.05


def test_heat_order_bias_is_seen_in_the_simulator():
    """A light configuration after a hot one runs hotter: the simulator makes the state the
    protocol must control."""
    from joulebench.sim import heat_experiment as he

    bias = he.order_bias(he.HeatCase("hopper", 0.01, "regular", True, 0))
    assert bias["second_c"] > bias["first_c"] + 2.0  # ~1.5 % more leakage at 0.6 %/C


@pytest.mark.parametrize("tau_s, leakage", [(25.0, 0.004), (60.0, 0.006), (110.0, 0.009)])
def test_simulated_check_measures_the_boards_heat(tau_s, leakage):
    from dataclasses import replace

    from joulebench.check.gpu import heat_from, heat_rows

    thermal = replace(THERMAL["hopper"], tau_s=tau_s, leakage_per_c=leakage)
    rig = simulated_gpu("hopper", phase_s=0.0123, seed=2, thermal=thermal)
    settings = CheckSettings(heat_idle_s=30.0, heat_s=max(300.0, 4 * tau_s))
    with SimCheckTarget(rig).meter() as meter:
        rows = heat_rows(SimCheckTarget(rig), meter, settings, 60.0)
    heat = heat_from(rows)
    assert heat["tau_s"] == pytest.approx(tau_s, rel=0.10)
    assert heat["c_per_w"] == pytest.approx(thermal.c_per_w, rel=0.10)
    assert heat["leakage_per_c"] == pytest.approx(leakage, rel=0.10)


def test_simulated_check_command_reports_the_boards_heat(tmp_path):
    """`joulebench check --device sim:h100`: the heat rows and the report's protocol.heat
    hold the simulated board's time constant, degrees per watt and leakage within 10 %."""
    from joulebench.check.command import run_check

    report, _ = run_check("sim:h100", output=tmp_path / "check.json")
    validate_report(report)
    heat = report["protocol"]["heat"]
    thermal = THERMAL["hopper"]
    assert heat["tau_s"] == pytest.approx(thermal.tau_s, rel=0.10)
    assert heat["c_per_w"] == pytest.approx(thermal.c_per_w, rel=0.10)
    assert heat["leakage_per_c"] == pytest.approx(thermal.leakage_per_c, rel=0.10)
    rows = {r["name"]: r for r in report["results"]}
    assert rows["thermal time constant"]["status"] == PASS


def test_heat_protocol_states_the_sustained_energy_and_removes_the_order_bias():
    """With the board's heat (as a check measures it, within 5 %) the protocol is near the
    sustained truth where the as-run protocol is not, and a configuration reads the same
    first or after a hot one: the simulator can fail the protocol here."""
    from joulebench.sim import heat_experiment as he

    cases = he.cases(1, ["hopper", "a100"], periods=(0.01, 0.05), patterns=("regular", "jitter"))
    cases = [he.HeatCase(**{**c.__dict__, "seed": 2}) for c in cases]
    stated = pd.DataFrame([he.run_case(c, heat_error=0.05) for c in cases])
    as_run = pd.DataFrame([he.run_case(c) for c in cases])
    assert stated["error"].abs().max() < 0.03
    assert stated["truth_in_ci95"].mean() >= 0.75
    # the thermal state moves the number, by far more than what is left of the sensor's
    assert as_run["error"].abs().max() > max(0.04, 1.5 * stated["error"].abs().max())
    assert (stated["thermal_error"].abs() < as_run["thermal_error"].abs()).all()
    light = he.HeatCase("hopper", 0.01, "regular", True, 0)
    fixed = he.order_bias(light, heat_error=0.05)
    before = he.order_bias(light)
    assert abs(fixed["thermal_part"]) < 0.01 < abs(before["thermal_part"])


# ---------------------------------------------------------------- a wider physics (issue 40)


def test_simulated_clocks_ramp_up_under_load_and_down_at_idle():
    """With clocks that ramp (sim.ramp) the work draws its dynamic power only as far as the
    clocks have risen, and after an idle stretch starts where they fell to."""
    from joulebench.sim.ramp import ClockRamp

    rig = simulated_gpu("hopper", ramp=ClockRamp(up_s=0.1, down_s=0.5))
    start = rig.clock()
    rig.gpu.busy(1.0, 300.0)
    power = rig.gpu.signal.power_w
    # a first-order rise of 100 ms behind the board's own 3 ms response (which lags it 3 %)
    assert power(start + 0.1) == pytest.approx(60.0 + 240.0 * (1 - math.exp(-1.0)), rel=0.02)
    assert power(start + 1.0) == pytest.approx(300.0, rel=1e-3)
    rig.gpu.idle(0.5)  # the clocks fall to e^-1 of the way
    restart = rig.clock()
    rig.gpu.busy(0.05, 300.0)
    assert power(restart + 0.02) == pytest.approx(
        60.0 + 240.0 * (1 - (1 - math.exp(-1.0)) * math.exp(-0.2)), rel=0.03
    )
    with pytest.raises(ValueError, match="ramp"):  # no closed-form truth: it is simulated
        rig.gpu.true_energy_per_batch_j(Workload(period_s=0.01))


def test_simulated_sensor_reports_late_by_its_delay():
    """A late sensor (sensor.delay_s) reports the window that ended that long before."""
    for delay_s in (0.0, 0.012):
        rig = simulated_gpu("hopper", noise_w=0.0, sensor={"delay_s": delay_s})
        rig.gpu.idle(1.0)
        edge = rig.clock()
        rig.gpu.busy(1.0, 300.0)
        sensor, refresh = rig.sensor, rig.sensor.refresh_s
        k = math.ceil((edge + 0.015 - sensor.phase_s) / refresh)  # a refresh just after it
        t = sensor.phase_s + k * refresh
        rig.clock.advance_to(max(rig.clock(), t))
        seen = t - delay_s
        want = rig.gpu.signal.energy_j(seen - sensor.window_s, seen) / sensor.window_s
        assert sensor.instant_mw() / 1000.0 == pytest.approx(want, abs=0.002)
        assert 60.0 < want < 300.0  # the window holds the edge: the delay moves the reading


def test_simulated_two_part_tail_is_exact_and_in_the_truth():
    """A tail with a fast and a slow part (sim.tail's fast_share) integrates exactly, and
    a long run's energy per batch is the analytic truth with it."""
    from joulebench.sim.tail import Tail

    tail = Tail(share=0.3, hold_s=0.0, tau_s=0.4, fast_share=0.5, fast_tau_s=0.02)
    assert tail.integral_s(0.0, 60.0) == pytest.approx(0.5 * 0.4 + 0.5 * 0.02)
    assert tail.shape(0.02) == pytest.approx(0.5 * math.exp(-0.05) + 0.5 * math.exp(-1.0))
    work = Workload(period_s=0.02, duty=0.5)
    rig = simulated_gpu("hopper", tail=tail, seed=3)
    for _ in range(500):
        rig.gpu.batch(work)
    start_j = rig.gpu.signal.cumulative_j(rig.clock())
    for _ in range(3000):
        rig.gpu.batch(work)
    per_batch = (rig.gpu.signal.cumulative_j(rig.clock()) - start_j) / 3000
    assert per_batch == pytest.approx(rig.gpu.true_energy_per_batch_j(work), rel=1e-6)


def test_wide_boards_draw_their_physics_and_simulate_their_truth():
    """The wide experiment's boards draw each assumption they are asked to (the rest as
    published), and its simulated truth is the closed form where one exists."""
    from joulebench.sim import wide_experiment as we

    boards = [we.WideBoard.drawn(s) for s in range(40)]
    assert {b.window_s for b in boards[:2]} != {0.025}
    assert min(b.delay_s for b in boards) < 0.003 and max(b.delay_s for b in boards) > 0.015
    assert min(b.ramp.up_s for b in boards) < 0.02 and max(b.ramp.up_s for b in boards) > 0.2
    tails = [b.tail for b in boards if b.tail]
    assert 30 <= len(tails) < 40 and any(t.hold_s == 0 for t in tails)
    assert max(t.fast_share for t in tails) > 0.5
    plain = we.WideBoard.drawn(3, physics=("tail",))
    assert plain.window_s == 0.025 and plain.delay_s == 0.0 and plain.ramp is None
    work = we.WideWork(0.05, "regular", 1).workload()
    simulated = we.steady_energy_per_batch_j(plain, work, seconds=2.0)
    assert simulated == pytest.approx(plain.rig().gpu.true_energy_per_batch_j(work), rel=1e-9)
