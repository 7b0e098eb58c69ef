"""`joulebench plan --calibrate`: each configuration run for a moment on this CPU."""

import helpers.tiny_models  # noqa: F401  (registers the jbtest_* models with timm)

from joulebench.measure import calibrate
from joulebench.measure.methods import ORT_TENSORRT


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


def test_a_failing_configuration_is_left_out_and_steps_are_counted():
    """A clock that moves 0.5 s a read: the first timed steps pass CALIBRATE_MIN_S at once,
    so CALIBRATE_MIN_STEPS bound them."""
    ticks = iter(range(10_000))
    steps = calibrate.calibrate_model(
        "jbtest_tiny_fails_forward",
        "cpu",
        "cpu",
        {"fp32": {"precision": "fp32"}},
        {"inference": [1]},
    )
    assert steps == {}
    steps = calibrate.calibrate_model(
        "jbtest_tiny", "cpu", "cpu", {"fp32": {"precision": "fp32"}}, {"inference": [2]},
        clock=lambda: next(ticks) * 0.5,
    )  # fmt: skip
    (timed,) = steps.values()
    # reads: start, built, t0; the loop reads only once the fewest steps ran (one read:
    # past CALIBRATE_MIN_S), then the end: two reads after t0 for 3 steps
    assert timed.build_s == 0.5
    assert timed.step_s == 2 * 0.5 / calibrate.CALIBRATE_MIN_STEPS
