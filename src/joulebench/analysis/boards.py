"""Board factors (issue 41): a pool's rows stated as its reference board reads them.

Every GPU read the same reference levels once (jobs.board_reference: the standard load on
random inputs, on zeros, idle). Between two boards of one product the readings are related
by a line (their sensors' gains and offsets, their silicon): a board reads `slope` x what
the reference board reads + `offset_w`. The line is fitted to the three levels (least
squares, each level weighted by the readings' own spread); a row's mean power is mapped back
through it, so its energy is the reference board's, and its CI widens by what the line may be
off (the fit's own uncertainty at the row's power, and the level the line misses most). The
pool's reference board is the lowest-numbered one with readings. docs/measurement.md#boards-
that-disagree; what it achieves against drawn boards: docs/benchmarks.md (issue 41).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.stats import t_quantile
from joulebench.tables import BOARD_LEVELS, check_board_record

# board_factor_source: the pool's reference board (as read), a board through its factor, a
# board without readings; and a pool whose reference board was calibrated (true watts)
REFERENCE, FITTED, NONE, CALIBRATED = "reference", "fitted", "none", "calibrated"
Z95 = 1.959964


@dataclass(frozen=True)
class BoardLine:
    """This board's reading = slope x the reference board's + offset_w, with the fit's
    covariance of (slope, offset) and its worst miss at a level (watts, of this board)."""

    uuid: str
    reference_uuid: str
    slope: float = 1.0
    offset_w: float = 0.0
    cov: tuple[tuple[float, float], tuple[float, float]] = ((0.0, 0.0), (0.0, 0.0))
    miss_w: float = 0.0

    @property
    def source(self) -> str:
        return REFERENCE if self.uuid == self.reference_uuid else FITTED

    def as_reference(self, power_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(power the reference board reads for this board's `power_w`, 95 % half-width of
        that from the line: its fit at that power, and its worst miss at a level)."""
        x = (power_w - self.offset_w) / self.slope
        d_slope, d_offset = -x / self.slope, -1.0 / self.slope
        (vaa, vab), (_, vbb) = self.cov
        var = d_slope**2 * vaa + 2 * d_slope * d_offset * vab + d_offset**2 * vbb
        half = Z95 * np.sqrt(np.maximum(var, 0.0)) + self.miss_w / self.slope
        return x, half


def read_records(boards_dir: str | Path) -> dict[str, dict]:
    """uuid -> a board's kept reference readings (results/boards/*.json); a file that is not
    one is skipped (tables.check_board_record)."""
    out = {}
    for path in sorted(Path(boards_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            check_board_record(record)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out[record["uuid"]] = record
    return out


def _levels(record: dict) -> tuple[np.ndarray, np.ndarray]:
    """(mean power, standard error) of a record's levels, in BOARD_LEVELS order."""
    means, ses = [], []
    for level in BOARD_LEVELS:
        values = record["levels"][level]
        n = max(int(values.get("windows", 3)), 2)
        half = float(values["ci95_half_w"])
        means.append(float(values["power_w"]))
        ses.append(half / t_quantile(0.975, n - 1) if math.isfinite(half) else 0.0)
    return np.asarray(means), np.asarray(ses)


def fit_line(board: dict, reference: dict) -> BoardLine:
    """The line from the reference board's readings to this board's, weighted least squares
    over the levels (both boards' errors, the reference's through the slope)."""
    y, sy = _levels(board)
    x, sx = _levels(reference)
    slope, offset = np.polyfit(x, y, 1)
    for _ in range(2):  # errors in both: the reference's count through the slope
        w = 1.0 / np.maximum(sy**2 + (slope * sx) ** 2, 1e-6)
        slope, offset = np.polyfit(x, y, 1, w=np.sqrt(w))
    design = np.column_stack([x, np.ones_like(x)])
    cov = np.linalg.inv(design.T @ (design * w[:, None]))
    miss = float(np.max(np.abs(y - (slope * x + offset))))
    return BoardLine(
        board["uuid"], reference["uuid"], float(slope), float(offset),
        ((float(cov[0, 0]), float(cov[0, 1])), (float(cov[1, 0]), float(cov[1, 1]))), miss,
    )  # fmt: skip


def pool_lines(rows: pd.DataFrame, records: dict[str, dict]) -> dict[str, BoardLine]:
    """uuid -> its line, for every board of every pool (device_pool) whose rows name it and
    that has readings; the reference of a pool is its lowest-numbered board with readings."""
    ok = rows["gpu_uuid"].notna() & rows["gpu_uuid"].ne("")
    boards = rows.loc[ok, ["device_pool", "gpu_uuid", "gpu_index"]].drop_duplicates("gpu_uuid")
    lines = {}
    for _, pool in boards.groupby("device_pool", dropna=False):
        read = pool[pool["gpu_uuid"].isin(records)]
        if read.empty:
            continue
        order = read.assign(i=read["gpu_index"].astype("Float64").fillna(1e9))
        order["calibrated"] = [0 if "calibration" in records[u] else 1 for u in order["gpu_uuid"]]
        ref = order.sort_values(["calibrated", "i", "gpu_uuid"]).iloc[0]["gpu_uuid"]
        for uuid in read["gpu_uuid"]:
            lines[uuid] = (
                BoardLine(uuid, ref) if uuid == ref else fit_line(records[uuid], records[ref])
            )
    return lines


def pool_spread(rows: pd.DataFrame, records: dict[str, dict]) -> pd.Series:
    """Per row, how far its pool's boards disagree before any factor: (max - min) / mean of
    their readings of the standard load (the `random` level); NaN for a pool of one."""
    key = rows["device_pool"].astype("string")
    out = pd.Series(np.nan, index=rows.index, dtype="float64")
    for pool, uuids in rows.groupby(key)["gpu_uuid"]:
        power = [
            records[u]["levels"]["random"]["power_w"] for u in set(uuids.dropna()) if u in records
        ]
        if len(power) > 1:
            out[key == pool] = (max(power) - min(power)) / float(np.mean(power))
    return out


def apply_board_factors(summary: pd.DataFrame, records: dict[str, dict]) -> pd.DataFrame:
    """The summary with every measured row of a referenced board stated as its pool's
    reference board reads it (energies, idle and mean power), its CIs widened by what the
    line may be off, and the board columns said; rows of boards without readings keep their
    energies and say `none`; rows off a GPU leave the board columns empty."""
    out = summary.copy()
    lines = pool_lines(out, records)
    on_gpu = out["gpu_uuid"].notna() & out["gpu_uuid"].ne("")
    out["energy_per_image_as_read_j"] = out["energy_per_image_j"].astype("float64")
    out["board_factor_source"] = pd.Series(
        np.where(on_gpu, NONE, ""), index=out.index, dtype="string"
    )
    out["pool_board_spread_fraction"] = pool_spread(out, records)
    for col in ("board_factor", "board_offset_w", "board_factor_ci95_rel"):
        out[col] = np.nan
    out["sensor_uncertainty_rel"] = np.nan  # the meter's figure (summary.absolute_ci), or a
    out["sensor_uncertainty_source"] = pd.Series("", index=out.index, dtype="string")  # calibration
    out["board_reference_uuid"] = pd.Series(pd.NA, index=out.index, dtype="string")
    for uuid, line in lines.items():
        rows = on_gpu & out["gpu_uuid"].eq(uuid)
        out.loc[rows, "board_factor"] = line.slope
        out.loc[rows, "board_offset_w"] = line.offset_w
        out.loc[rows, "board_reference_uuid"] = line.reference_uuid
        out.loc[rows, "board_factor_source"] = line.source
        measured = rows & out["status"].eq("ok").fillna(False)
        if measured.any() and line.source == FITTED:
            out.loc[measured] = _restated(out.loc[measured], line)
        elif measured.any():
            out.loc[measured, "board_factor_ci95_rel"] = 0.0
    for uuid in {line.reference_uuid for line in lines.values()}:
        if "calibration" in records[uuid]:
            out = _calibrated(out, uuid, records[uuid]["calibration"])
    return out


def _calibrated(out: pd.DataFrame, reference: str, calibration: dict) -> pd.DataFrame:
    """The rows stated by a calibrated reference board, in true watts: through its line
    against the external meter (jobs.calibration), whose uncertainty is then the sensor's."""
    rows = out["board_reference_uuid"].eq(reference).fillna(False)
    line = BoardLine(reference, "external meter", calibration["gain"], calibration["offset_w"])
    measured = rows & out["status"].eq("ok").fillna(False)
    if measured.any():
        keep = out.loc[measured, "board_factor_ci95_rel"].astype("float64")
        out.loc[measured] = _restated(out.loc[measured], line)
        out.loc[measured, "board_factor_ci95_rel"] = keep
    out.loc[rows, "board_factor_source"] = CALIBRATED
    out.loc[rows, "sensor_uncertainty_rel"] = calibration["rel_uncertainty"]
    out.loc[rows, "sensor_uncertainty_source"] = (
        f"calibrated against an external meter ({calibration.get('windows', '?')} windows, "
        f"its accuracy {calibration.get('external_accuracy', float('nan')):.1%})"
    )
    return out


def _restated(rows: pd.DataFrame, line: BoardLine) -> pd.DataFrame:
    """`rows` (one board's, measured) as the reference board reads them."""
    rows = rows.copy()
    seconds = 1.0 / pd.to_numeric(rows["throughput_img_s"], errors="coerce").to_numpy(float)
    energy = rows["energy_per_image_j"].to_numpy(float)
    x, half_w = line.as_reference(energy / seconds)
    restated, extra = x * seconds, half_w * seconds
    for low, high in (("energy_per_image_ci95_low_j", "energy_per_image_ci95_high_j"),):
        lo = line.as_reference(rows[low].to_numpy(float) / seconds)[0] * seconds
        hi = line.as_reference(rows[high].to_numpy(float) / seconds)[0] * seconds
        rows[low] = restated - np.hypot(restated - lo, extra)
        rows[high] = restated + np.hypot(hi - restated, extra)
    rows["energy_per_image_j"] = restated
    rows["energy_per_image_std_j"] = rows["energy_per_image_std_j"].to_numpy(float) / line.slope
    rows["energy_per_image_cv"] = rows["energy_per_image_std_j"].to_numpy(float) / restated
    rows["board_factor_ci95_rel"] = extra / restated
    _restate_parts(rows, line, seconds, energy, restated)
    return rows


def _restate_parts(rows, line: BoardLine, seconds, as_read, restated) -> None:
    """The dynamic energy (above this board's idle: only the slope stands between the two
    boards), the idle and mean powers, and the GPU's part of the node's energy."""
    slope_rel = Z95 * math.sqrt(max(line.cov[0][0], 0.0)) / line.slope
    dynamic = rows["dynamic_energy_per_image_j"].to_numpy(float) / line.slope
    extra = np.abs(dynamic) * slope_rel + line.miss_w / line.slope * seconds
    for col in ("dynamic_energy_per_image_ci95_low_j", "dynamic_energy_per_image_ci95_high_j"):
        bound = rows[col].to_numpy(float) / line.slope
        sign = -1.0 if col.endswith("low_j") else 1.0
        rows[col] = dynamic + sign * np.hypot(bound - dynamic, extra)
    rows["dynamic_energy_per_image_j"] = dynamic
    std = rows["dynamic_energy_per_image_std_j"].to_numpy(float) / line.slope
    rows["dynamic_energy_per_image_std_j"] = std
    for col in ("idle_power_w", "power_mean_w", "power_max_w"):
        rows[col] = line.as_reference(rows[col].to_numpy(float))[0]
    gpu = rows["energy_gpu_per_image_j"].to_numpy(float)
    rows["energy_gpu_per_image_j"] = np.where(np.isfinite(gpu), restated, gpu)
    node = rows["energy_node_per_image_j"].to_numpy(float)
    rows["energy_node_per_image_j"] = node - np.where(np.isfinite(gpu), as_read - restated, 0.0)


def spread_lines(summary: pd.DataFrame) -> list[str]:
    """One line per pool of several boards: how far its boards disagree as read, how its
    rows are stated, what the factors add to their CIs, and boards without readings."""
    if "pool_board_spread_fraction" not in summary.columns:  # a summary from before boards
        return []
    lines = []
    on_gpu = summary["gpu_uuid"].notna() & summary["gpu_uuid"].ne("")
    for pool, rows in summary[on_gpu].groupby("device_pool"):
        boards = rows["gpu_uuid"].nunique()
        if boards < 2:
            continue
        spread = rows["pool_board_spread_fraction"].dropna()
        referenced = rows.loc[
            rows["board_factor_source"].isin([REFERENCE, FITTED, CALIBRATED]), "gpu_uuid"
        ]
        text = f"{pool}: {boards} boards"
        if len(spread):
            text += f", {spread.iloc[0]:.1%} apart as read (the standard load)"
        if referenced.nunique() > 1:
            ref = rows["board_reference_uuid"].dropna().iloc[0]
            widest = rows["board_factor_ci95_rel"].max()
            text += f"; rows stated as board {ref} reads them (CIs widened by <= {widest:.1%})"
        missing = boards - referenced.nunique()
        if missing:
            text += f"; {missing} without reference readings: as read, not comparable"
        lines.append(text)
    return lines


def records_line(records: dict[str, dict]) -> str:
    """While a run goes on (status): the boards that read their reference levels, and how
    far apart they read the standard load, per product."""
    by_name: dict[str, list[float]] = {}
    for record in records.values():
        power = record["levels"]["random"]["power_w"]
        by_name.setdefault(record.get("device_name") or "GPU", []).append(power)
    parts = []
    for name, powers in sorted(by_name.items()):
        apart = (max(powers) - min(powers)) / float(np.mean(powers)) if len(powers) > 1 else 0.0
        parts.append(f"{len(powers)} x {name}" + (f", {apart:.1%} apart as read" if apart else ""))
    return "boards referenced: " + "; ".join(parts) if parts else ""


def restate_through(rows: pd.DataFrame, line: BoardLine) -> pd.DataFrame:
    """Measured `rows` already stated by one board (their run's reference board) stated by
    another through `line` (another run's reference board: a merge's run factor), what the
    line may be off added to what their own factors may be."""
    out = rows.copy()
    measured = out["status"].eq("ok").fillna(False).to_numpy(bool)
    if not measured.any():
        return out
    before = out.loc[measured, "board_factor_ci95_rel"].astype("float64").fillna(0.0)
    restated = _restated(out.loc[measured], line)
    restated["board_factor_ci95_rel"] = np.hypot(before, restated["board_factor_ci95_rel"])
    out.loc[measured] = restated
    return out
