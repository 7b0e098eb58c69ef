"""A board calibrated against an external meter (issue 41 item 2): `joulebench check --device
cuda:0 --external-command CMD` (or `--external-csv FILE`).

A power sensor is linear in the true power but its gain and offset are its own (SC'24). While
the board reads its reference levels (jobs.board_reference), an external meter on the same
board (a wall meter, a PCIe riser's, a shunt) is read too: by a command that prints watts,
sampled every SAMPLE_S, or from a CSV of timestamps and watts it logged meanwhile. Each
window's sensor mean against the external mean gives a line (sensor = gain x true + offset)
and how far it may be off (its fit, and the external meter's own stated accuracy). It is kept
in the board's record; the summary then states its pool's rows in true watts (`calibrated`).
docs/measurement.md#boards-that-disagree.
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.jobs.board_reference import read_levels
from joulebench.stats import t_quantile

SAMPLE_S = 0.25  # how often an external command is read
COMMAND_TIMEOUT_S = 5.0
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


class CalibrationError(ValueError):
    """An external meter that could not be read, or readings that do not fit a line."""


def command_reader(command: str) -> Callable[[], float]:
    """A reader that runs `command` (no shell) and takes the first number it prints as watts."""
    argv = shlex.split(command)
    if not argv:
        raise CalibrationError("--external-command is empty")

    def read() -> float:
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise CalibrationError(f"--external-command {command!r}: {err}") from None
        found = NUMBER.search(out.stdout)
        if out.returncode != 0 or not found:
            raise CalibrationError(
                f"--external-command {command!r} printed no watts (exit {out.returncode})"
            )
        return float(found.group())

    return read


def sample(target, read: Callable[[], float], body: Callable[[], object]) -> tuple[object, list]:
    """Run `body` while `read` is sampled every SAMPLE_S: [(epoch seconds, watts)] beside its
    result. On a target whose time is simulated (its `timer`) the samples are its own."""
    samples: list[tuple[float, float]] = []
    offset = time.time() - target.clock()

    def take() -> None:
        samples.append((target.clock() + offset, read()))

    if target.timer is not None:
        stop = target.timer(SAMPLE_S, take)
        try:
            return body(), samples
        finally:
            stop()
    done = threading.Event()

    def loop() -> None:
        while not done.wait(SAMPLE_S):
            take()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        return body(), samples
    finally:
        done.set()
        thread.join()


def csv_samples(path: str | Path) -> list[tuple[float, float]]:
    """[(epoch seconds, watts)] of a CSV with a time column (`time`, `timestamp`: Unix
    seconds or ISO 8601) and a `watts` column (or `power_w`)."""
    table = pd.read_csv(path)
    tcol = next((c for c in ("time", "timestamp", "time_s") if c in table.columns), None)
    wcol = next((c for c in ("watts", "power_w", "w") if c in table.columns), None)
    if tcol is None or wcol is None:
        raise CalibrationError(f"{path}: needs a time column (time) and a watts column (watts)")
    times = table[tcol]
    if not pd.api.types.is_numeric_dtype(times):
        times = pd.to_datetime(times, utc=True).astype("int64") / 1e9
    return list(zip(times.astype(float), table[wcol].astype(float), strict=True))


def fit(windows: list[dict], samples: list[tuple[float, float]], accuracy: float) -> dict:
    """The board's line against the external meter: sensor = gain x true + offset_w, from
    each window's sensor mean and the external samples inside it; `rel_uncertainty` is what
    a calibrated energy may be off (95 %: the fit at the standard load, the meter's own)."""
    t = np.array([s[0] for s in samples])
    w = np.array([s[1] for s in samples])
    sensor, true = [], []
    for window in windows:
        inside = (t >= window["start"]) & (t <= window["end"])
        if inside.sum() >= 2:
            sensor.append(window["power_w"])
            true.append(float(w[inside].mean()))
    if len(sensor) < 4 or np.ptp(true) < 1.0:
        raise CalibrationError(
            f"the external meter's readings cover {len(sensor)} of {len(windows)} windows "
            "(at least 4 at two levels are needed): was it logging while the levels ran?"
        )
    (gain, offset), residual, *_ = np.polyfit(true, sensor, 1, full=True)
    dof = len(sensor) - 2
    sigma = math.sqrt(float(residual[0]) / dof) if dof > 0 and len(residual) else 0.0
    at = max(true)
    fit_rel = t_quantile(0.975, max(dof, 1)) * sigma / math.sqrt(len(sensor)) / (gain * at)
    return {
        "gain": float(gain),
        "offset_w": float(offset),
        "rel_uncertainty": float(math.hypot(fit_rel, accuracy)),
        "windows": len(sensor),
        "external_accuracy": accuracy,
    }


def calibrate(target, *, read=None, csv=None, accuracy: float = 0.01, progress=print) -> dict:
    """The board's reference levels read with an external meter beside them (a reader, or a
    CSV read once they are done); the levels and the calibration, as the record keeps them."""
    if (read is None) == (csv is None):
        raise CalibrationError("give one external meter: --external-command or --external-csv")
    if read is not None:
        (levels, windows), samples = sample(target, read, lambda: read_levels(target, progress))
    else:
        levels, windows = read_levels(target, progress)
        samples = csv_samples(csv)
    samples = [s for s in samples if math.isfinite(s[1])]
    return {"levels": levels, "windows": windows, "calibration": fit(windows, samples, accuracy)}


def run_calibration(device: str, command, csv, accuracy: float, boards_dir) -> str:
    """`joulebench check --external-command/--external-csv`: the board's reference levels
    read beside the external meter, the line fitted, kept in its record (the summary then
    states its pool in true watts); the line said."""
    from joulebench.core.backends import bound_device
    from joulebench.jobs.board_reference import board_path, record_of, write_record
    from joulebench.jobs.first_check import board_key

    bound = bound_device(device, device.replace(":", ""))
    meter = bound.meter()[0]
    detail = meter.describe()
    meter.close()
    key = board_key(detail)
    if not key[0]:
        raise CalibrationError(f"{device}: no GPU UUID to keep a calibration by")
    read = command_reader(command) if command else None
    result = calibrate(bound.check_target(), read=read, csv=csv, accuracy=accuracy)
    record = record_of(key, detail, result["levels"], result["windows"],
                       calibration=result["calibration"])  # fmt: skip
    path = write_record(record, board_path(boards_dir, key[0]))
    c = result["calibration"]
    return (
        f"calibrated {key[0]}: its sensor reads {c['gain']:.4f} x true power "
        f"{c['offset_w']:+.1f} W ({c['windows']} windows; a calibrated energy within "
        f"{c['rel_uncertainty']:.1%} at 95 %) -> {path}"
    )
