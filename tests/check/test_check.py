"""`joulebench check` on this machine's CPU, its JSON report, RAPL rows against a fake
powercap tree, and how profile rows pick up the latest check. (The GPU checks run against
the sensor simulator in test_sim.py.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from helpers.profile_job import job

from joulebench.check.cpu import rapl_rows
from joulebench.check.report import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    CheckReport,
    Row,
    checked_fields,
    device_check,
    format_table,
    new_check_id,
    report_path,
    validate_report,
    verdict,
    write_report,
)
from joulebench.check.sensor_fit import fit_refresh, fit_sensor
from joulebench.cli import main as cli_main
from joulebench.core.backends import bound_device
from joulebench.core.meters import RaplMeter
from joulebench.jobs.profile import run_profile


def small_report(device="cpu", uuid=None, status=WARN, refresh_s=None) -> dict:
    report = CheckReport(
        device=device,
        rows=[Row("environment", "energy source", status, "estimate:tdp-linear")],
        meter={"meter": "estimate:tdp-linear", "uuid": uuid, "device_name": "test"},
        protocol={"sensor_refresh_s": refresh_s, "min_window_s": 5.0},
        check_id=new_check_id(device),
        start_time_utc="2026-12-03T00:00:00Z",
        duration_s=1.0,
    )
    return report.as_dict()


def test_cli_check_cpu_prints_its_table_and_writes_the_report(capsys, tmp_path):
    out = tmp_path / "check" / "cpu.json"
    rc = cli_main(["check", "--device", "cpu", "--quick", "--output", str(out)])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    validate_report(report)
    assert rc == (1 if report["verdict"] == FAIL else 0)
    assert printed.startswith("joulebench check  cpu")
    for name in ("energy source", "idle power", "repeat CV", "verdict:"):
        assert name in printed
    names = [r["name"] for r in report["results"]]
    assert names[0] == "energy source"
    if report["is_estimate"]:  # no readable RAPL here: the estimate, labelled, and why
        assert report["results"][0]["status"] == WARN
        assert "ESTIMATE" in report["results"][0]["detail"]
        assert "rapl" in report["results"][0]["detail"]
    assert not list(out.parent.glob(".*.tmp"))  # written atomically, nothing left behind


def test_cli_check_refuses_an_unknown_device_or_meter(capsys):
    assert cli_main(["check", "--device", "tpu:0"]) == 2
    err = capsys.readouterr().err
    assert "--device must be cpu, cuda, cuda:N or sim:<gpu>, not 'tpu:0'" in err
    assert cli_main(["check", "--device", "sim:h100", "--meter", "rapl"]) == 2
    assert "device 'sim:h100' is measured with nvml, not 'rapl'" in capsys.readouterr().err


def test_cli_check_refuses_an_unwritable_report_before_measuring(capsys, tmp_path):
    """A folder as --output is said at once, not after a minute of measuring."""
    assert cli_main(["check", "--device", "cpu", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {tmp_path}: it is a folder" in err
    assert "idle power" not in err  # no part of the check ran


def test_cli_check_of_a_simulated_gpu_passes_and_writes_its_report(capsys, tmp_path):
    """The simulated proof of the check: every GPU check on a simulated H100 (in simulated
    time), its report validated, found again by the device's own name."""
    out = tmp_path / "check" / "simh100.json"
    assert cli_main(["check", "--device", "sim:h100", "--quick", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    validate_report(report)
    assert printed.startswith("joulebench check  sim:h100  NVIDIA H100")
    assert report["device"] == "sim:h100"
    assert report["meter"] == "nvml:sim" and report["check_id"].startswith("simh100-")
    rows = {r["name"]: r for r in report["results"]}
    # the simulated board heats (sim.thermal), so the protocol's repeat CV on it, about 1 %
    # from the sensor alone, may pass its 1 % line or warn; nothing else may
    warned = {name for name, r in rows.items() if r["status"] not in (PASS, SKIP)}
    assert warned <= {"repeat CV"} and rows["repeat CV"]["value"] <= 0.03
    assert "the counter as read: CV" in rows["repeat CV"]["detail"]  # its edges were counted
    assert report["verdict"] in (PASS, WARN)
    assert {rows[n]["status"] for n in ("thermal time constant", "leakage slope")} == {SKIP}
    assert rows["refresh period"]["value"] == pytest.approx(100.0, rel=0.10)  # hopper's, ms
    assert rows["MIG"]["status"] == rows["persistence mode"]["status"] == PASS
    assert report_path("sim:h100", tmp_path / "check") == out
    assert cli_main(["check", "--device", "sim:x9", "--quick", "-o", str(out)]) == 2


def test_report_layout_is_enforced(tmp_path):
    report = small_report()
    validate_report(report)
    path = write_report(report, report_path("cpu", tmp_path))
    assert path == tmp_path / "cpu.json" and json.loads(path.read_text()) == report
    for key, bad in (("verdict", "maybe"), ("device", "gpu0"), ("results", [])):
        with pytest.raises(jsonschema.ValidationError):
            validate_report({**report, key: bad})
    with pytest.raises(jsonschema.ValidationError):
        validate_report({**report, "results": [{**report["results"][0], "status": "ok"}]})
    with pytest.raises(ValueError):
        Row("x", "y", "ok")


def test_verdict_is_the_worst_status_and_skips_do_not_count():
    rows = [Row("a", "1", PASS), Row("a", "2", "skip")]
    assert verdict(rows) == PASS
    assert verdict([*rows, Row("a", "3", WARN)]) == WARN
    assert verdict([*rows, Row("a", "3", WARN), Row("a", "4", FAIL)]) == FAIL
    assert Row("a", "nan", PASS, float("nan")).value is None  # JSON has no NaN


def test_table_is_plain_text_with_every_row():
    report = small_report()
    report["results"].append(
        Row("idle", "idle power $x^2$ <b>", PASS, 1.5, "W", detail="a_b").__dict__
    )
    text = format_table(report)
    assert "idle power $x^2$ <b>" in text and "1.5 W" in text  # labels are text, untouched
    assert text.splitlines()[-1].startswith("verdict: WARN")


# ---------------------------------------------------------------- RAPL rows


def fake_rapl(tmp_path: Path, max_uj: int, watts: float = 40.0) -> RaplMeter:
    """One package zone whose counter moves every millisecond at `watts`, wrapping at max_uj."""
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    (zone / "energy_uj").write_text("0\n")
    t0 = time.monotonic()

    def read(path: Path) -> str:
        if path.name == "energy_uj":
            ms = int((time.monotonic() - t0) * 1000)
            return f"{int(ms * watts * 1000) % max_uj}\n"
        return path.read_text()

    return RaplMeter(root=tmp_path, read=read, sample_interval_s=0.1)


def test_rapl_rows_measure_update_interval_and_wraparound(tmp_path):
    rows = {r.name: r for r in rapl_rows(fake_rapl(tmp_path / "a", 262_143_328_850), 0.1)}
    assert rows["update interval"].status == PASS
    assert rows["update interval"].value == pytest.approx(1.0, abs=0.5)  # ms
    assert rows["wraparound"].status == PASS
    assert rows["wraparound"].value == pytest.approx(262_143 / 40, rel=0.3)  # s at 40 W
    tiny = {r.name: r for r in rapl_rows(fake_rapl(tmp_path / "b", 2_000_000), 0.1)}
    assert tiny["wraparound"].status == FAIL  # wraps in 50 ms: faster than the 100 ms poll


# ---------------------------------------------------------------- profile rows


@pytest.fixture
def tiny_models():
    """The jbtest_* timm models: they need torch, which the rest of this file does not."""
    pytest.importorskip("torch")
    from helpers import tiny_models

    return tiny_models


def test_profile_rows_carry_input_kind_and_the_latest_check(tmp_path, tiny_models):
    check_dir = tmp_path / "check"
    out = run_profile(job("jbtest_tiny", batch_sizes=(1,), check_dir=str(check_dir)), log=print)
    row = out.rows.iloc[0]
    assert (row.input_kind, row.check_id, row.check_verdict) == ("random", "", "")
    report = small_report()
    write_report(report, report_path("cpu", check_dir))
    out = run_profile(
        job("jbtest_tiny", batch_sizes=(1,), check_dir=str(check_dir), input_kind="zeros"),
        log=print,
    )
    row = out.rows.iloc[0]
    assert row.status == "ok" and row.input_kind == "zeros"
    assert (row.check_id, row.check_verdict) == (report["check_id"], "warn")
    with pytest.raises(ValueError, match="input_kind"):
        job("jbtest_tiny", input_kind="ones")


def test_a_check_of_another_gpu_is_not_used(tmp_path):
    report = small_report("cuda:0", uuid="GPU-aaaa", refresh_s=0.12)
    write_report(report, report_path("cuda:0", tmp_path))
    assert device_check("cuda:0", tmp_path, "GPU-aaaa")["check_id"] == report["check_id"]
    assert device_check("cuda:0", tmp_path, "GPU-bbbb") is None  # CUDA_VISIBLE_DEVICES moved
    assert device_check("cuda:1", tmp_path, "GPU-aaaa") is None  # no report for that device
    nvidia, cpu = bound_device("cuda:0", prefer="nvml"), bound_device("cpu")
    assert nvidia.meter_options_from_check(report) == {"refresh_s": 0.12}
    assert cpu.meter_options_from_check(report) == {}
    assert nvidia.meter_options_from_check(None) == {}
    assert checked_fields(None) == {"check_id": "", "check_verdict": ""}
    (tmp_path / "cuda0.json").write_text("{not json")
    assert device_check("cuda:0", tmp_path, "GPU-aaaa") is None  # unreadable: as if none


# ---------------------------------------------------------------- the sensor fit, edge cases


def test_sensor_fit_needs_a_reading_that_changes():
    t = [i * 0.001 for i in range(5000)]
    assert fit_sensor(t, [60.0] * 5000, [(1.0, 1.4)]) is None  # a driver that never refreshes


def test_refresh_fit_survives_refreshes_that_showed_no_change():
    # changes seen at most refreshes of a 100 ms grid, a third of them missing
    changes = [0.0137 + 0.1 * k for k in range(60) if k % 3 != 1]
    period, phase = fit_refresh(np.array(changes))
    assert period == pytest.approx(0.1, rel=1e-9) and phase == pytest.approx(0.0137)
