"""Each GPU checked once before its first profile job (measure.first_check, issue 33)."""

from __future__ import annotations

import json
from dataclasses import replace

import helpers.profile_job as profile_job
import helpers.tiny_models  # noqa: F401  (registers jbtest_tiny)
import pytest
import torch  # noqa: F401  (it profiles a model: collected only with torch, test_tests)

from joulebench.core import first_check
from joulebench.core.backends import bound_device, kind_of
from joulebench.core.first_check import board_key, board_path, report_for, usable, wanted
from joulebench.core.profile import run_profile

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


def test_a_profile_job_on_a_simulated_gpu_checks_it_first_and_states_its_rows(tmp_path):
    cpu_job = profile_job.job("jbtest_tiny", batch_sizes=(1,))
    job = replace(
        cpu_job,
        torch_device="sim:a100",
        device_label="test-first-job",
        check_dir=str(tmp_path),
        check_first="on",
    )
    (row,) = run_profile(job).rows.to_dict("records")
    assert row["status"] == "ok", row["reason"]
    assert row["check_id"].startswith("sima100-")
    assert row["thermal_state"] == "sustained" and row["tail_source"] == "check"
    assert row["tail_correction"] < 0
    assert list((tmp_path / "gpus").glob("*.json"))
