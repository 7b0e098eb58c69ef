"""A GPU's heat and power tail, measured once before its first profile job (issue 33).

Rows are stated at the sustained temperature (core.heat) and the board's tail is taken
out of the phase shifts (core.tail) only where `joulebench check` measured the board. A
plain `snakemake` run would never have: so a profile job on a GPU runs the check itself when
no report of that very board is at hand, before it measures anything, and keeps the report
for every later job (`results/check/gpus/<uuid>.json`): once per GPU, whichever job of a pool
gets it first. A report counts for the board whose UUID, driver and power limit it was
taken with; after a driver update or a changed default limit the next job measures again.

`profile.check_first` in the study: `auto` (real GPUs; not CPUs, whose meters have no sensor
refresh or heat step, nor simulated GPUs), `on` (simulated GPUs too: tests and benches) or
`off` (never: rows then say `as-run` and `tail_source: assumed`, as before).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from joulebench.config_schema import default
from joulebench.jobs.supervise import deadline_s, emit

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

CHECK_FIRST = ("auto", "on", "off")
DEFAULT = default("profile.check_first")
GPU_DIR = "gpus"


def check_s(settings=None) -> float:
    """How long `joulebench check` runs on a GPU with `settings` (CheckSettings), from its
    parts' own lengths: idle, the tail's cycles, the square wave, the heat step, the steady
    load, and the protocol runs of the repeat CV and zeros-vs-random rows (their windows as
    the protocol sizes them, warm-up and pauses about a window each). An estimate."""
    from joulebench.check.rows import CheckSettings

    s = settings or CheckSettings()
    cycle_s = math.ceil(s.tail_busy_s + s.tail_idle_s + 0.2) if s.tail_cycles else 0.0
    window_s = max(s.protocol.min_repeat_s, s.protocol.min_window_refreshes * 0.1)
    repeat_s = (s.protocol.min_repeats + 2) * window_s * 1.2
    input_s = 2 * (s.input_protocol.min_repeats + 1) * window_s * 1.2
    heat_s = s.heat_idle_s + s.heat_s if s.heat_s > 0 else 0.0
    parts = (s.idle_s, s.tail_cycles * cycle_s, s.square_s, heat_s, s.steady_s)
    return sum(parts) + repeat_s + input_s


SIMULATED_CHECK_S = 10.0  # a simulated GPU's check runs in simulated time: seconds of wall


def first_check_s(setting: str, device: str) -> float:
    """What a profile job spends checking its GPU first (the plan counts it once per GPU):
    0 where `setting` does not want it for `device`'s kind."""
    from joulebench.core.backends import kind_of

    backend = kind_of(device)
    if not wanted(setting, backend):
        return 0.0
    return SIMULATED_CHECK_S if backend.simulated else check_s()


def wanted(setting: str, backend) -> bool:
    """Whether a job on `backend`'s device checks its board first (`profile.check_first`)."""
    if setting not in CHECK_FIRST:
        raise ValueError(f"check_first must be one of {CHECK_FIRST}, got {setting!r}")
    if setting == "off" or backend.is_host:
        return False
    return setting == "on" or not backend.simulated


def board_key(detail: dict) -> tuple:
    """What a report must match: the GPU's UUID, driver and power limit (whole watts)."""
    limit = detail.get("power_limit_w")
    watts = round(float(limit)) if isinstance(limit, int | float) and math.isfinite(limit) else None
    return (detail.get("uuid"), str(detail.get("driver_version") or ""), watts)


def _detail(report: dict) -> dict:
    detail = report.get("meter_detail") or {}
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            return {}
    return detail if isinstance(detail, dict) else {}


def usable(report: dict | None, key: tuple) -> bool:
    """A report of this very board (board_key) that measured its heat and its tail."""
    if not report:
        return False
    protocol = report.get("protocol") or {}
    measured = bool(protocol.get("heat")) and bool(protocol.get("tail"))
    return measured and board_key(_detail(report)) == key


def board_path(check_dir: str | Path, uuid: str) -> Path:
    from joulebench.check.report import device_file

    return Path(check_dir) / GPU_DIR / f"{device_file(uuid)}.json"


def cached(check_dir: str | Path, key: tuple, log=None) -> dict | None:
    """The kept report of the board `key` names, where it is still usable; one that holds
    values no board can have is said in the log and measured again."""
    from joulebench.check.report import validate_report

    if not key[0]:
        return None
    path = board_path(check_dir, key[0])
    try:
        report = json.loads(path.read_text())
        validate_report(report)
    except Exception as exc:  # missing, damaged, implausible, another version: measure again
        if log is not None and path.exists():
            log(f"check: the kept report {path} is not read ({_first_line(exc)})")
        return None
    return report if usable(report, key) else None


def _first_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def measure_board(device: BoundDevice, key: tuple, check_dir, log) -> dict:
    """`joulebench check` on the job's board (its heat and tail among the rest), kept for
    the next job. A check that fails leaves nothing kept; the job goes on as-run."""
    from joulebench.check.gpu import check_gpu
    from joulebench.check.report import write_report

    target = device.check_target()
    report = check_gpu(target, progress=lambda line: log(f"check: {line}"), state=device.state)
    data = report.as_dict()
    if usable(data, key):
        write_report(data, board_path(check_dir, key[0]))
    return data


def report_for(device: BoundDevice, detail: dict, check_dir, setting: str, log) -> dict | None:
    """The report a profile job states its rows by: its board's kept one, else (where
    `setting` wants it) one measured now, else the device's latest `joulebench check`
    report of the same GPU (check.report.device_check), else None."""
    from joulebench.check.report import device_check

    key = board_key(detail)
    report = cached(check_dir, key, log)
    if report is not None:
        return report
    latest = device_check(device.device, check_dir, detail.get("uuid"))
    if usable(latest, key) or not wanted(setting, device):
        return latest
    took = SIMULATED_CHECK_S if device.simulated else check_s()
    log(f"no check of this GPU ({key[0]}, driver {key[1]}, {key[2]} W) yet: measuring its heat "
        f"and power tail first, once (about {took / 60:.0f} min; profile.check_first: off "
        "skips it)")  # fmt: skip
    emit("stage", doing="the GPU's check (its heat and power tail)", deadline_s=deadline_s(took))
    try:
        return measure_board(device, key, check_dir, log)
    except Exception as exc:  # a check that cannot run leaves the rows as they were
        log(f"check: failed ({type(exc).__name__}: {exc}); rows stay as-run")
        return latest
