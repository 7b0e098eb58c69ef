"""The Python API (joulebench.api, docs/api.md): measure over any callable, profile of a
module, Monitor windows, each honest about its meter; clear ValueErrors; README's example
run as written on the CPU and on a simulated H100."""

from __future__ import annotations

import contextlib
import io
import math
import re
import subprocess
import sys
import time
from dataclasses import fields

import pytest
from conftest import FAST_PROTOCOL, REPO

from joulebench.api import (
    Measurement,
    MeasurementError,
    Monitor,
    ShortWindowWarning,
    measure,
    profile,
)
from joulebench.flags import FLAG_ESTIMATE, FLAG_SHORT_WINDOW, FLAG_SIMULATED
from joulebench.tables import PROFILE_COLUMNS

# seconds per measurement: FAST_PROTOCOL's windows, a simulated sensor's too
FAST = {
    **FAST_PROTOCOL,
    "min_window_refreshes": 2,
    "spread_repeats": 2,
    "idle_s": 0.1,
    "quiet_wait_s": 0,
}


def _busy(seconds: float = 0.002) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _check_ci(m: Measurement) -> None:
    assert m.status == "ok" and m.repeats == 2
    assert 0 < m.energy_per_image_j < math.inf and m.throughput_img_s > 0
    assert m.energy_per_image_ci95_low_j <= m.energy_per_image_j <= m.energy_per_image_ci95_high_j
    assert m.energy_per_image_ci95_high_j > m.energy_per_image_ci95_low_j
    assert math.isfinite(m.dynamic_energy_per_image_j) and math.isfinite(m.energy_per_image_cv)


def test_measure_on_the_cpu_is_an_estimate_and_says_so():
    m = measure(_busy, images_per_step=4, name="busy", **FAST)
    _check_ci(m)
    assert m.is_estimate is True and FLAG_ESTIMATE in m.flags and m.ci_covers == "timing"
    assert m.meter.startswith("estimate:") and m.is_simulated is False
    assert (m.model, m.batch_size, m.torch_device, m.method) == ("busy", 4, "cpu", "")
    assert m.row["workload"] == "callable" and m.row["torch_version"]


def test_measure_on_a_simulated_gpu_reads_its_sensor():
    m = measure(_busy, images_per_step=2, device="sim:h100", **FAST)
    _check_ci(m)
    assert m.is_estimate is False and m.meter == "nvml:sim" and m.ci_covers == "measurement"
    assert m.is_simulated is True and FLAG_SIMULATED in m.flags and FLAG_ESTIMATE not in m.flags
    # the board draws 300 W while the step runs and 60 W idle (sim.wall)
    assert 60 < m.power_mean_w < 320 and m.idle_power_w == pytest.approx(60, rel=0.2)
    assert m.dynamic_energy_per_image_j < m.energy_per_image_j
    assert "(simulated)" in m.device_name


def test_a_measurement_is_a_profile_row():
    """Every field is the profile column of its name; the frame is the profile table's."""
    names = [f.name for f in fields(Measurement) if f.name != "row"]
    assert set(names) <= set(PROFILE_COLUMNS)
    m = measure(_busy, images_per_step=1, **FAST)
    frame = m.to_frame()
    assert list(frame.columns) == list(PROFILE_COLUMNS) and len(frame) == 1
    assert {c: str(t) for c, t in frame.dtypes.items()} == dict(PROFILE_COLUMNS)
    row = m.to_dict()
    for name in names:
        value = getattr(m, name)
        if name == "flags":
            assert ";".join(value) == row["flags"]
        elif isinstance(value, float) and math.isnan(value):
            assert row[name] is None or math.isnan(row[name])
        elif name != "method":  # a callable has no method: "" for the missing value
            assert value == row[name], name


def test_profile_of_a_module_is_a_profile_jobs_row():
    import torch
    from helpers.tiny_models import Tiny

    net = Tiny()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    m = profile(net, torch.randn(2, 3, 32, 32), batch_size=2, name="tiny", **FAST)
    _check_ci(m)
    assert (m.model, m.method, m.batch_size, m.device_label) == ("tiny", "fp32", 2, "cpu")
    assert m.row["phase"] == "inference" and m.row["fp32_math"] == "ieee"
    assert m.row["workload"].startswith("tiny=joulebench.held:")
    assert m.is_estimate is True and FLAG_ESTIMATE in m.flags
    # measured on a copy: the user's module is as it was (training mode, weights)
    assert net.training and all(torch.equal(v, before[k]) for k, v in net.state_dict().items())
    from joulebench.catalog import workloads

    assert not workloads._HELD  # released


def test_profile_of_a_timm_name_and_a_failure():
    import helpers.tiny_models  # noqa: F401  (registers jbtest_* with timm)

    m = profile("jbtest_tiny", device="sim:h100", **FAST)
    assert (m.model, m.row["workload"], m.meter) == ("jbtest_tiny", "timm", "nvml:sim")
    with pytest.raises(MeasurementError, match="jbtest_tiny_fails_forward fp32 bs1.*error"):
        profile("jbtest_tiny_fails_forward", **FAST)


def test_monitor_windows_on_the_cpu():
    with Monitor("cpu") as mon:
        mon.begin_window("outer")
        mon.begin_window("inner")
        _busy(0.2)
        inner = mon.end_window("inner")
        _busy(0.05)
        outer = mon.end_window("outer")
        mon.begin_window("left-open")
    assert inner.duration_s == pytest.approx(0.2, abs=0.05) and outer.duration_s > 0.25
    assert outer.energy_j > inner.energy_j > 0
    assert inner.power_w == pytest.approx(inner.energy_j / inner.duration_s)
    assert inner.is_estimate and FLAG_ESTIMATE in inner.flags and not inner.too_short
    assert inner.meter.startswith("estimate:") and inner.shortest_s == pytest.approx(0.1)
    assert not mon._open  # closed on leaving


def test_a_window_too_short_for_the_sensor_says_so():
    """An H100's sensor refreshes every 0.1 s: a window needs 20 refreshes (2 s) with the
    default preset, 10 with `fast`; a 50 ms window is flagged and warned of."""
    with Monitor("sim:h100") as mon:
        mon.begin_window("blink")
        time.sleep(0.05)
        with pytest.warns(ShortWindowWarning, match="blink.*shorter than the 2 s"):
            blink = mon.end_window("blink")
    assert blink.too_short and FLAG_SHORT_WINDOW in blink.flags and blink.shortest_s == 2.0
    assert blink.meter == "nvml:sim" and not blink.is_estimate

    with Monitor("sim:h100", preset="fast") as mon:
        work = mon.wrap(lambda: _busy(1.2))  # the simulated board works while it runs
        mon.begin_window("work")
        work()
        window = mon.end_window("work")
    assert not window.too_short and window.shortest_s == pytest.approx(1.0)
    assert FLAG_SIMULATED in window.flags  # the simulator's energy, as its rows say
    assert 200 < window.power_w < 320  # mostly the board's 300 W busy power, not its 60 W idle


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: measure(42, images_per_step=1), "step must be a callable"),
        (lambda: measure(_busy, images_per_step=1, sync=1), "sync must be None or a callable"),
        (lambda: measure(_busy, images_per_step=0), "images_per_step must be a positive int"),
        (lambda: measure(_busy, images_per_step=-3), "images_per_step"),
        (lambda: measure(_busy, images_per_step=2.5), "images_per_step"),
        (lambda: measure(_busy, images_per_step=True), "images_per_step"),
        (lambda: measure(_busy, images_per_step=1, device="tpu"), "not a device"),
        (lambda: measure(_busy, images_per_step=1, device=0), "device must be a string"),
        (lambda: measure(_busy, images_per_step=1, device="sim:nope"), "unknown simulated"),
        (lambda: measure(_busy, images_per_step=1, preset="quick"), "unknown protocol preset"),
        (lambda: measure(_busy, images_per_step=1, windows=3), "unknown protocol setting"),
        (lambda: measure(_busy, images_per_step=1, repeats=0), "repeats must be >= 1"),
        (lambda: measure(_busy, images_per_step=1, idle_s=0), "idle_s must be a positive"),
        (lambda: measure(_busy, images_per_step=1, meter="joules"), "prefer must be one of"),
        (lambda: profile("jbtest_tiny", method="fp64"), "unknown method 'fp64'"),
        (lambda: profile("jbtest_tiny", batch_size=0), "batch_size must be a positive int"),
        (lambda: profile("jbtest_tiny", (3, 8, 8)), "example_input is for a module object"),
        (lambda: profile(3.14), "model must be a timm name"),
        (lambda: profile("no_such_model_xyz"), "is no timm model"),
        (lambda: profile("jbtest_tiny*"), r"names \d+ models; give one"),
        (lambda: profile("jbtest_tiny", device="tpu"), "not a device"),
        (lambda: profile("jbtest_tiny", preset="quick"), "unknown protocol preset"),
        (lambda: Monitor("tpu"), "not a device"),
        (lambda: Monitor("cpu", preset="quick"), "unknown protocol preset"),
        # issue 40 item 10: each was accepted, or failed late (an OverflowError, a TypeError
        # after seconds of measuring, a RuntimeError, a build-error row)
        (lambda: measure(_busy, images_per_step=10**30), "images_per_step must be at most 65536"),
        (lambda: measure(_busy, images_per_step=1, min_repeat_s="3"), "min_repeat_s must be a"),
        (lambda: measure(_busy, images_per_step=1, ci_target=math.nan), "ci_target must be a"),
        (lambda: measure(_busy, images_per_step=1, quiet_wait_s=-5), "quiet_wait_s must be a"),
        (lambda: measure(_busy, images_per_step=1, idle_s=math.inf), "idle_s must be a positive"),
        (lambda: measure(_busy, images_per_step=1, idle_s=3600), "idle_s must be at most 600"),
        (lambda: measure(_busy, images_per_step=1, name=""), "name must be a text"),
        (lambda: Monitor("cpu", meter="nvml"), "measured with rapl or estimate, not 'nvml'"),
        (lambda: Monitor("cpu").wrap(3), "wrap takes a callable"),
        (lambda: profile("jbtest_tiny", batch_size=10**6), "batch_size must be at most 65536"),
        (lambda: profile("jbtest_tiny", threads=-1), "threads must be a positive int"),
        (lambda: profile("jbtest_tiny", name="a=b:c"), "name 'a=b:c' may only use"),
    ],
)
def test_bad_arguments_are_value_errors(call, message):
    import helpers.tiny_models  # noqa: F401

    with pytest.raises(ValueError, match=message):
        call()


def test_bad_module_inputs_are_value_errors():
    import torch
    from helpers.tiny_models import Tiny

    for example, message in [
        (None, "a module needs example_input"),
        (torch.randn(8, 8), "must be .N, C, H, W. or .C, H, W."),
        ({"input_size": (3, 8, 8)}, "missing \\['num_classes'\\]"),
        ({"input_size": (3, 0, 8), "num_classes": 2}, "input_size must be 3 positive ints"),
    ]:
        with pytest.raises(ValueError, match=message):
            profile(Tiny(), example)
    with pytest.raises(ValueError, match="name 'a b' may only use"):
        profile(Tiny(), (3, 8, 8), name="a b")
    with Monitor("cpu") as mon:
        with pytest.raises(ValueError, match="no window 'x' is open"):
            mon.end_window("x")
        mon.begin_window("x")
        with pytest.raises(ValueError, match="window 'x' is open already"):
            mon.begin_window("x")


def test_import_joulebench_stays_cheap_and_names_the_api():
    code = (
        "import sys, joulebench\n"
        "assert not [m for m in sys.modules if m.startswith(('torch', 'joulebench.api'))]\n"
        "import joulebench.api as api\n"
        "assert joulebench.Monitor is api.Monitor and joulebench.profile is api.profile\n"
        "import joulebench.core.protocol\n"
        "assert joulebench.measure is api.measure\n"
        "try:\n    joulebench.nothing\nexcept AttributeError:\n    pass\n"
        "else:\n    raise SystemExit('no AttributeError')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_measure_is_the_api_function_in_a_fresh_process():
    """The README's headline as a user's first line (issue 40 item 8): nothing imported
    before it, the real signature, and a measurement."""
    code = (
        "import inspect, joulebench\n"
        "sig = inspect.signature(joulebench.measure)\n"
        "assert 'images_per_step' in sig.parameters, sig\n"
        "assert 'example_input' in inspect.signature(joulebench.profile).parameters\n"
        "assert list(inspect.signature(joulebench.Monitor).parameters) == "
        "['device', 'meter', 'preset']\n"
        "kinds = [p.kind for n, p in sig.parameters.items() if n != 'protocol']\n"
        "assert inspect.Parameter.VAR_POSITIONAL not in kinds, sig\n"
        "m = joulebench.measure(lambda: sum(range(20000)), images_per_step=1, device='cpu',\n"
        "                       preset='smoke', idle_s=0.1, quiet_wait_s=0)\n"
        "assert m.energy_per_image_j > 0, m\n"
        "from joulebench import measure\n"
        "assert measure is joulebench.measure\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# ------------------------------------------------------------------ README's example

README_CODE = re.compile(r"## Python API\n.*?```python\n(.*?)```", re.S)


def readme_example(device: str) -> str:
    """The README's Python example, on `device` with the tests' fast protocol."""
    code = README_CODE.search((REPO / "README.md").read_text())[1]
    lines = code.splitlines()
    assert 'DEVICE = "cpu"' in lines[4] and lines[5].startswith("SETTINGS = ")
    lines[4], lines[5] = f"DEVICE = {device!r}", f"SETTINGS = {FAST!r}"
    return "\n".join(lines)


@pytest.mark.parametrize("device", ["cpu", "sim:h100"])
def test_the_readmes_example_runs(device, recwarn):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(device), "README.md", "exec"), {"__name__": "readme"})
    printed = out.getvalue().splitlines()
    assert len(printed) == 2 and "mJ/image (95% CI" in printed[0] and " J in " in printed[1]
    meter = "estimate:tdp-linear" if device == "cpu" else "nvml:sim"
    assert all(meter in line for line in printed)
    if device == "sim:h100":  # a block of well under 2 s: the sensor cannot read it
        assert FLAG_SHORT_WINDOW in printed[1]
        assert any(w.category is ShortWindowWarning for w in recwarn)
