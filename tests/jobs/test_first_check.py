"""Each GPU checked once before its first profile job (jobs.first_check, issue 33)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace

import helpers.profile_job as profile_job
import helpers.tiny_models  # noqa: F401  (registers jbtest_tiny)
import pandas as pd
import pytest
import torch  # noqa: F401  (it profiles a model: collected only with torch, test_tests)

from joulebench.check.report import validate_report
from joulebench.core.backends import bound_device, kind_of
from joulebench.jobs import first_check
from joulebench.jobs.first_check import board_key, board_path, report_for, usable, wanted
from joulebench.jobs.profile import result_fields, run_profile

DETAIL = {"uuid": "GPU-1", "driver_version": "580.1", "power_limit_w": 700.0}


def test_real_gpus_are_checked_simulated_ones_when_asked_cpus_never():
    cuda, sim, cpu = kind_of("cuda:0"), kind_of("sim:h100"), kind_of("cpu")
    assert (wanted("auto", cuda), wanted("auto", sim), wanted("auto", cpu)) == (True, False, False)
    assert (wanted("on", cuda), wanted("on", sim), wanted("on", cpu)) == (True, True, False)
    assert not any(wanted("off", b) for b in (cuda, sim, cpu))
    with pytest.raises(ValueError, match="check_first must be one of"):
        wanted("sometimes", cuda)


def _report(detail=DETAIL, heat=True, tail=True) -> dict:
    protocol = {
        "heat": {"c_per_w": 0.1} if heat else None,
        "tail": {"excess_w": 30.0} if tail else None,
    }
    return {"meter_detail": json.dumps(detail), "protocol": protocol}


def test_a_report_counts_for_the_same_board_driver_and_limit_that_measured_heat_and_tail():
    key = board_key(DETAIL)
    assert key == ("GPU-1", "580.1", 700)
    assert usable(_report(), key)
    assert not usable(_report(heat=False), key) and not usable(_report(tail=False), key)
    assert not usable(_report({**DETAIL, "driver_version": "590.2"}), key)  # a new driver
    assert not usable(_report({**DETAIL, "power_limit_w": 500.0}), key)  # another limit
    assert not usable(None, key)


def test_a_simulated_board_is_checked_once_and_the_report_kept(tmp_path, monkeypatch):
    device = bound_device("sim:a100", "test-first")
    meter = device.meter()[0]
    detail = meter.describe()
    meter.close()
    calls = []
    measure_board = first_check.measure_board

    def counted(*args):
        calls.append(args)
        return measure_board(*args)

    monkeypatch.setattr(first_check, "measure_board", counted)
    lines = []
    first = report_for(device, detail, tmp_path, "on", lines.append)
    assert len(calls) == 1 and any("measuring its heat and power tail first" in s for s in lines)
    assert first["uuid"] == detail["uuid"] and first["protocol"]["tail"]["excess_w"] > 0
    assert board_path(tmp_path, detail["uuid"]).exists()
    again = report_for(device, detail, tmp_path, "on", lines.append)
    assert len(calls) == 1 and again["check_id"] == first["check_id"]  # kept, not measured
    # off: a kept report still counts, nothing is measured
    off = report_for(device, detail, tmp_path, "off", lines.append)
    assert off["check_id"] == first["check_id"] and len(calls) == 1
    # another driver: measured again
    newer = {**detail, "driver_version": "999.0"}
    assert report_for(device, newer, tmp_path / "x", "off", print) is None


def test_a_check_that_fails_leaves_the_rows_as_run(tmp_path, monkeypatch):
    device = bound_device("sim:a100", "t")

    def broken(*args):
        raise RuntimeError("the board fell off the bus")

    monkeypatch.setattr(first_check, "measure_board", broken)
    lines = []
    assert report_for(device, DETAIL, tmp_path, "on", lines.append) is None
    assert "check: failed (RuntimeError: the board fell off the bus); rows stay as-run" in lines


@pytest.mark.slow
def test_a_profile_job_on_a_simulated_gpu_checks_it_first_and_states_its_rows(tmp_path):
    cpu_job = profile_job.job("jbtest_tiny", batch_sizes=(1,))
    job = replace(
        cpu_job,
        spec=replace(cpu_job.spec, torch_device="sim:a100", check_first="on"),
        device_label="test-first-job",
        check_dir=str(tmp_path),
    )
    (row,) = run_profile(job).rows.to_dict("records")
    assert row["status"] == "ok", row["reason"]
    assert row["check_id"].startswith("sima100-")
    assert row["thermal_state"] == "sustained" and row["tail_source"] == "check"
    assert row["tail_correction"] < 0
    assert list((tmp_path / "gpus").glob("*.json"))


@pytest.mark.slow
def test_a_kept_report_no_board_can_have_is_not_read_and_no_row_is_negative(tmp_path):
    """Issue 40 item 4: `protocol.tail.excess_w: 5000` in a kept report (a board idling at
    60 W) made `ok` rows of negative energy. Beyond the board's limit, or beyond any board's,
    it is refused when read, and measured again."""
    cpu_job = profile_job.job("jbtest_tiny", batch_sizes=(1,))
    job = replace(
        cpu_job,
        spec=replace(cpu_job.spec, torch_device="sim:a100", check_first="on"),
        device_label="test-implausible",
        check_dir=str(tmp_path),
    )
    (first,) = run_profile(job).rows.to_dict("records")
    (kept,) = (tmp_path / "gpus").glob("*.json")
    report = json.loads(kept.read_text())
    report["protocol"]["tail"]["excess_w"] = 600.0  # the simulated A100's limit is 400 W
    kept.write_text(json.dumps(report))
    with pytest.raises(ValueError, match=r"tail.excess_w = 600 W is above the board's power"):
        validate_report(report)
    (row,) = run_profile(job).rows.to_dict("records")
    assert row["status"] == "ok" and row["energy_per_image_j"] > 0, row["reason"]
    assert row["check_id"] != first["check_id"]  # measured again, not read
    report["protocol"]["tail"]["excess_w"] = 1e300  # beyond any board: the schema's range
    with pytest.raises(Exception, match="is greater than the maximum"):
        validate_report(report)


def test_a_measured_energy_that_is_not_positive_and_finite_is_never_ok():
    repeats = pd.DataFrame(
        [{"start_temperature_c": 40.0, "end_temperature_c": 41.0, "start_sm_clock_mhz": 1980.0,
          "end_sm_clock_mhz": 1980.0}]
    )  # fmt: skip
    for energy in (-0.0034, 0.0, math.nan, math.inf):
        result = SimpleNamespace(summary={"energy_per_image_j": energy}, repeats=repeats)
        fields = result_fields(result, {"meter": "nvml"})
        assert fields["status"] == "invalid", energy
        assert (
            "energy_per_image_j" in fields["reason"]
            and "not positive and finite" in fields["reason"]
        )
    result = SimpleNamespace(summary={"energy_per_image_j": 0.0034}, repeats=repeats)
    assert "status" not in result_fields(result, {"meter": "nvml"})
