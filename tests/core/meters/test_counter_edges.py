"""A counter that moves once a sensor refresh: a window's energy counted to its own edges
(meters.counter_edges), through the real NVML meter on the simulated board and the
protocol's choice of when to use it."""

import math
import random

import pytest

from joulebench.core.meters.base import Reading
from joulebench.core.meters.counter_edges import counter_ticks, edge_corrected
from joulebench.core.protocol import (
    ProtocolSettings,
    _counted_to_window,
    edges_counted,
    expected_cv,
)
from joulebench.sim.rig import simulated_gpu


def _samples(power_w, t0, t1, refresh_s=0.1, phase_s=0.0, every_s=0.015):
    """(t, counter J) sampled every `every_s` from t0 to t1 of a counter that adds
    power x refresh at each refresh instant phase + k x refresh."""

    def counter(t):
        return power_w * refresh_s * math.floor((t - phase_s) / refresh_s)

    times = [t0, *[t0 + every_s * i for i in range(1, int((t1 - t0) / every_s) + 1)], t1]
    times = sorted({t for t in times if t0 <= t <= t1})
    return [(t - t0, counter(t)) for t in times]


def test_ticks_are_the_instants_the_counter_moves():
    ticks = counter_ticks([(0.0, 5), (0.01, 5), (0.03, 7), (0.05, 7), (0.07, 9)])
    assert ticks == [(pytest.approx(0.02), 2), (pytest.approx(0.06), 2)]


@pytest.mark.parametrize("phase_s", [0.005, 0.03, 0.061, 0.099])
def test_edges_are_counted_to_the_window_where_the_raw_difference_is_a_refresh_off(phase_s):
    samples = _samples(300.0, 0.0, 2.83, phase_s=phase_s)
    raw_j = samples[-1][1] - samples[0][1]
    truth_j = 300.0 * 2.83
    assert edge_corrected(samples, 0.1) == pytest.approx(truth_j, rel=0.004)
    # the raw difference covers a whole number of refreshes, not the window's 2.83 s
    assert raw_j / 300.0 == pytest.approx(round(raw_j / 300.0, 1))


def test_a_counter_that_does_not_move_once_a_refresh_is_left_as_read():
    continuous = [(i * 0.015, 300.0 * i * 0.015) for i in range(190)]
    assert edge_corrected(continuous, 0.1) is None  # moves at every sample: 15 ms, not 100
    assert edge_corrected(_samples(300.0, 0.0, 0.25), 0.1) is None  # too few refreshes
    assert edge_corrected(_samples(300.0, 0.0, 2.8), None) is None  # no refresh period


def test_a_refresh_the_sampler_missed_leaves_the_counter_as_read():
    samples = _samples(300.0, 0.0, 2.83, phase_s=0.03)
    gap = [s for s in samples if not 1.0 < s[0] < 1.2]  # 200 ms without a sample
    assert edge_corrected(gap, 0.1) is None
    assert edge_corrected(samples, 0.1) is not None


ON = ProtocolSettings()  # count_edges, as the default preset


def test_the_protocol_counts_edges_only_for_batches_shorter_than_the_refresh():
    reading = Reading(energy_j=840.0, duration_s=2.83, energy_counter_j=840.0, energy_edges_j=849.0)
    assert _counted_to_window(reading, ON, 0.01, 0.1).energy_j == 849.0
    assert _counted_to_window(reading, ON, 0.06, 0.1).energy_j == 849.0
    assert _counted_to_window(reading, ON, 0.1, 0.1).energy_j == 840.0  # a slow batch: as read
    assert _counted_to_window(reading, ON, 0.01, None).energy_j == 840.0  # RAPL, the estimate
    unknown = Reading(energy_j=840.0, duration_s=2.83)
    assert _counted_to_window(unknown, ON, 0.01, 0.1).energy_j == 840.0
    assert edges_counted(ON, None, 0.1) and not edges_counted(ON, 0.2, 0.1)
    assert not edges_counted(ProtocolSettings.from_dict({"preset": "strict"}), 0.01, 0.1)


def test_without_the_edges_the_sensor_explains_less_spread():
    full, counted = expected_cv(0.1, 2.8), expected_cv(0.1, 2.8, edges=True)
    assert counted < full
    assert math.hypot(counted, 0.1 / math.sqrt(6) / 2.8) == pytest.approx(full)


def test_the_nvml_meter_on_a_simulated_h100_counts_a_steady_load_to_its_edges():
    rng = random.Random(4)
    raw_errors, edge_errors = [], []
    for seed in range(12):
        rig = simulated_gpu("hopper", seed=seed, phase_s=rng.uniform(0, 0.1))
        with rig.meter() as meter:
            rig.gpu.busy(0.2, 250.0)  # the load before the window (a lead-in)
            start_j = rig.gpu.signal.cumulative_j(rig.clock())
            meter.begin()
            rig.gpu.busy(2.0 + rng.uniform(0, 0.1), 250.0)
            truth_j = rig.gpu.signal.cumulative_j(rig.clock()) - start_j
            reading = meter.end()
        raw_errors.append(reading.energy_counter_j / truth_j - 1)
        edge_errors.append(reading.energy_edges_j / truth_j - 1)
    assert max(abs(e) for e in edge_errors) < 0.01
    assert max(abs(e) for e in raw_errors) > 0.02  # up to a refresh of 2 s: 5 %
    assert reading.energy_j == reading.energy_counter_j  # the meter reports; the protocol picks
