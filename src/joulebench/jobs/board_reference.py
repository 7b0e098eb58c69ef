"""A board's reference readings (issue 41): the same loads on every GPU, so that each board's
rows can be stated as the pool's reference board would have read them (analysis.boards).

Boards of one product disagree: each sensor has its own gain and offset (about +-5 %, SC'24)
and each chip draws its own power for the same work. Every board reads three levels, in one
order, after the same warm-up: the check's standard load on random inputs, the same load on
zeros (less power) and idle. Two boards' readings of these are related by a line (gain and
offset of the one against the other, silicon included); the third level says how straight.
Measured once per board by its first profile job, before any configuration, and kept by
UUID, driver and power limit (`results/boards/<uuid>.json`), as the check is
(jobs.first_check); `profile.board_reference`: auto (real GPUs), on (simulated too), off.
What it costs and how well it works: docs/measurement.md#boards-that-disagree.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from joulebench.config_schema import default
from joulebench.core.provenance import utc_now
from joulebench.jobs.first_check import board_key, wanted
from joulebench.jobs.supervise import deadline_s, emit
from joulebench.stats import spread
from joulebench.tables import BOARD_LEVELS, BOARD_RECORD_VERSION, check_board_record

if TYPE_CHECKING:
    from joulebench.core.backends import BoundDevice

DEFAULT = default("profile.board_reference")
BOARDS_DIR = "results/boards"
# (level, what the board runs): the standard load on random inputs, on zeros, then idle
LEVELS = tuple(zip(BOARD_LEVELS, ("random", "zeros", None), strict=True))
WARM_S = 15.0  # the standard load first: every board at its working temperature
WINDOW_S = 4.0  # each window: 40 refreshes of a 100 ms sensor
WINDOWS = 3  # per level
SETTLE_S = 3.0  # before the idle windows: the load's power tail gone
SIMULATED_S = 5.0  # a simulated board reads its levels in simulated time: seconds of wall


def reference_s(simulated: bool = False) -> float:
    """What a board's reference readings take (the plan counts it once per board)."""
    if simulated:
        return SIMULATED_S
    return WARM_S + SETTLE_S + len(LEVELS) * WINDOWS * WINDOW_S


def first_reference_s(setting: str, device: str) -> float:
    """What a profile job spends reading its GPU's reference levels first (the plan counts
    it once per GPU): 0 where `setting` does not want them for `device`'s kind."""
    from joulebench.core.backends import kind_of

    backend = kind_of(device)
    return reference_s(backend.simulated) if wanted(setting, backend) else 0.0


def read_levels(target, progress=lambda line: None) -> tuple[dict[str, dict], list[dict]]:
    """({level: {power_w, ci95_half_w, windows}}, [each window: level, start and end in
    epoch seconds, power_w]): each level's mean power over WINDOWS windows of WINDOW_S, on
    the board's own meter, after WARM_S of the standard load (the windows' times let an
    external meter's log be matched to them: jobs.calibration)."""
    meter = target.meter()
    levels, windows = {}, []
    epoch = time.time() - target.clock()
    with meter:
        target.busy(WARM_S, "random")
        for level, inputs in LEVELS:
            progress(f"reference: {level}")
            if inputs is None:
                target.sync()
                target.sleep(SETTLE_S)
            for _ in range(WINDOWS):
                start = target.clock() + epoch
                power = _window_w(target, meter, inputs)
                windows.append({"level": level, "start": start, "end": target.clock() + epoch,
                                "power_w": power})  # fmt: skip
            s = spread([w["power_w"] for w in windows if w["level"] == level])
            half = s.ci95_half_width if math.isfinite(s.ci95_half_width) else 0.0
            levels[level] = {"power_w": s.mean, "ci95_half_w": half, "windows": s.n}
    return levels, windows


def _window_w(target, meter, inputs: str | None) -> float:
    """One window's mean power at a level: the load (or idle) between synced edges."""
    target.sync()
    meter.begin()
    if inputs is None:
        target.sleep(WINDOW_S)
    else:
        target.busy(WINDOW_S, inputs)
    target.sync()
    reading = meter.end()
    return reading.energy_j / reading.duration_s if reading.duration_s > 0 else math.nan


def board_path(boards_dir: str | Path, uuid: str) -> Path:
    from joulebench.check.report import device_file

    return Path(boards_dir) / f"{device_file(uuid)}.json"


def kept(boards_dir: str | Path, key: tuple) -> dict | None:
    """The kept readings of the board `key` (UUID, driver, power limit) names, else None."""
    if not key[0]:
        return None
    try:
        record = json.loads(board_path(boards_dir, key[0]).read_text())
        check_board_record(record)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = (record["uuid"], record["driver_version"], record["power_limit_w"])
    return record if same == key else None


def reference_for(device: BoundDevice, detail: dict, boards_dir, setting: str, log) -> dict | None:
    """This board's reference readings: kept ones, else (where `setting` wants them) read
    now and kept; None where not wanted or they could not be read (the rows then carry no
    board factor, and say so)."""
    if not wanted(setting, device):
        return None
    key = board_key(detail)
    record = kept(boards_dir, key)
    if record is not None or not key[0]:
        return record
    took = reference_s(device.simulated)
    log(f"no reference readings of this GPU ({key[0]}) yet: reading its three levels first, "
        f"once (about {took:.0f} s; profile.board_reference: off skips it)")  # fmt: skip
    emit("stage", doing="the GPU's reference readings", deadline_s=deadline_s(took))
    try:
        levels, windows = read_levels(device.check_target(), lambda line: log(line))
    except Exception as exc:  # readings that cannot be taken leave the rows without a factor
        log(f"reference: failed ({type(exc).__name__}: {exc}); no board factor for its rows")
        return None
    record = record_of(key, detail, levels, windows)
    write_record(record, board_path(boards_dir, key[0]))
    return record


def record_of(key: tuple, detail: dict, levels: dict, windows: list, **more) -> dict:
    """A board's record: what it is (UUID, driver, power limit, product), when, its levels
    and windows (and a calibration, where one was made)."""
    return {
        "schema_version": BOARD_RECORD_VERSION,
        "uuid": key[0],
        "driver_version": key[1],
        "power_limit_w": key[2],
        "device_name": str(detail.get("device_name", "")),
        "measured_utc": utc_now(),
        "levels": levels,
        "windows": windows,
        **more,
    }


def write_record(record: dict, path: Path) -> Path:
    from joulebench.table_io import atomic_write

    check_board_record(record)
    text = json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))
