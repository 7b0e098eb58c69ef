"""`joulebench plan --calibrate`: each configuration run for a moment on this CPU."""

import helpers.tiny_models  # noqa: F401  (registers the jbtest_* models with timm)
import pytest
import torch  # noqa: F401  (the tiny models run on it; test_tests collects without it)

from joulebench.core.methods import ORT_TENSORRT
from joulebench.jobs import calibrate


def test_each_configuration_that_runs_gets_a_step_and_a_build_time():
    steps = calibrate.calibrate_model(
        "jbtest_tiny",
        "cpu",
        "cpu",
        {"fp32": {"precision": "fp32"}, "trt": {"runtime": ORT_TENSORRT}},  # not on a CPU
        {"inference": [1, 4]},
    )
    assert set(steps) == {("inference", "fp32", 1), ("inference", "fp32", 4)}
    for timed in steps.values():
        assert 0 < timed.step_s < 1.0 and timed.build_s > 0


def test_a_failing_configuration_is_left_out_and_the_fastest_step_is_kept():
    """Steps that waited for descheduled threads (seconds) do not set the step time: the
    fastest of single synced steps does."""
    steps = calibrate.calibrate_model(
        "jbtest_tiny_fails_forward",
        "cpu",
        "cpu",
        {"fp32": {"precision": "fp32"}},
        {"inference": [1]},
    )
    assert steps == {}
    now, durations = [0.0], iter([2.0, 10.0, 0.1, 1.5] + [0.3] * 30)

    def step():
        now[0] += next(durations)

    assert calibrate._fastest_step_s(step, lambda: None, lambda: now[0]) == pytest.approx(0.1)
    # at least CALIBRATE_MIN_STEPS, and on until CALIBRATE_MIN_S has passed (10 x 20 ms),
    # but never more than CALIBRATE_MAX_STEPS (20 x 5 ms)
    now[0], durations = 0.0, iter([0.02] * 100)
    calibrate._fastest_step_s(step, lambda: None, lambda: now[0])
    assert now[0] == pytest.approx(calibrate.CALIBRATE_MIN_S, abs=0.021)  # one step past
    now[0], durations = 0.0, iter([0.005] * 100)
    calibrate._fastest_step_s(step, lambda: None, lambda: now[0])
    assert now[0] == pytest.approx(calibrate.CALIBRATE_MAX_STEPS * 0.005)
