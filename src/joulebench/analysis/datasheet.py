"""A release's datasheet (DATASHEET.md): what was measured, how, on what, its known limits and
its licence, every sentence from the release's own rows (issue 41; docs/releases.md)."""

from __future__ import annotations

import pandas as pd

from joulebench.analysis.boards import spread_lines
from joulebench.flags import FLAGS, split_flags
from joulebench.safe_text import printable, quantity


def _counts(values: pd.Series) -> str:
    """'fp32 (20), fp16 (10)': each value with how many rows hold it, most first."""
    text = values.dropna().astype(str)
    counts = text[text != ""].value_counts()  # an empty field (no driver off a GPU) is none
    return ", ".join(f"{printable(v)} ({n})" for v, n in counts.items()) or "none"


def datasheet_text(summary: pd.DataFrame, manifest: dict) -> str:
    ok = summary[summary["status"].eq("ok").fillna(False)]
    until = manifest["measured_until_utc"] or "?"
    lines = [
        f"# {printable(manifest['name'])}: energy per image of image-classification models",
        "",
        f"A joulebench release (release version {manifest['release_version']}, joulebench "
        f"{manifest['joulebench_version']}), measured until {until}. "
        'Load it with `joulebench.load("<this folder>")` (its checksums and version are '
        "checked); `sha256sum -c SHA256SUMS` checks its files; COLUMNS.md says what each "
        "column means.",
        "",
        *_measured(summary, ok),
        *_how(ok),
        *_fingerprints(ok),
        *_limits(summary, ok),
        "## Licence",
        "",
        f"The measurements: {manifest['licence']}. The reference accuracy (accuracy_source "
        "`reference`) is timm's published tables (Apache-2.0).",
        "",
    ]
    return "\n".join(lines)


def _measured(summary: pd.DataFrame, ok: pd.DataFrame) -> list[str]:
    return [
        "## What was measured",
        "",
        f"- {quantity(len(summary), 'row')}, {len(ok)} measured (`ok`); the others by status: "
        f"{_counts(summary.loc[summary['status'] != 'ok', 'status'])}.",
        f"- {quantity(summary['model'].nunique(), 'model')}; phases: {_counts(ok['phase'])}; "
        f"methods: "
        f"{_counts(ok['method'])}; batch sizes: {_counts(ok['batch_size_requested'])}.",
        f"- Devices: {_counts(ok['device_name'])}; drivers: {_counts(ok['driver_version'])}.",
        f"- Software: torch {_counts(ok['torch_version'])}; timm {_counts(ok['timm_version'])}.",
        f"- Weights: {_counts(ok['weights'])}; inputs: {_counts(ok['input_kind'])}.",
        "",
    ]


def _how(ok: pd.DataFrame) -> list[str]:
    boards = spread_lines(ok)
    return [
        "## How",
        "",
        f"- Energy read by: {_counts(ok['meter'])}; protocol presets: "
        f"{_counts(ok['protocol_preset'])}.",
        f"- Device checks (joulebench check): {_counts(ok['check_verdict'].replace('', pd.NA))}; "
        f"heat: {_counts(ok['thermal_state'])}; power tail: {_counts(ok['tail_source'])}.",
        f"- Boards: {'; '.join(boards) if boards else 'one board per device, or none read'}.",
        f"- Accuracy: {_counts(ok['accuracy_source'])}.",
        "",
    ]


def _fingerprints(ok: pd.DataFrame) -> list[str]:
    """One line per protocol fingerprint: rows of one share a setup (COLUMNS.md)."""
    lines = ["## Setups (protocol fingerprints)", "", "| fingerprint | device | driver | "
             "torch | preset | rows |", "|---|---|---|---|---|---|"]  # fmt: skip
    for key, rows in ok.groupby("protocol_fingerprint", dropna=False):
        first = rows.iloc[0]
        cells = [key, first["device_name"], first["driver_version"], first["torch_version"]]
        cells += [first["protocol_preset"], len(rows)]
        lines.append("| " + " | ".join(printable(str(c)) for c in cells) + " |")
    return [*lines, ""]


def _limits(summary: pd.DataFrame, ok: pd.DataFrame) -> list[str]:
    flags = pd.Series([f for text in ok["flags"].dropna() for f in split_flags(text)])
    invalidating = flags[flags.map(lambda f: f in FLAGS and FLAGS[f].invalidates)]
    sources = ok["sensor_uncertainty_source"].dropna().unique().tolist()
    return [
        "## Known limits",
        "",
        "- Each energy's 95 % CI covers its own measurement (the windows against the sensor "
        "that read them, and a pool's board factor); the sensor's own calibration is not in "
        "it: " + ("; ".join(printable(s) for s in sources) or "not known") + ". "
        "energy_per_image_abs_ci95_low_j / _high_j add it where it is known.",
        f"- Estimated energies (a power model, not a counter): "
        f"{quantity(int(ok['energy_is_estimate'].fillna(False).sum()), 'row')}.",
        "- Simulated GPUs (never scored): "
        f"{quantity(int(ok['is_simulated'].fillna(False).sum()), 'row')}.",
        f"- Rows with a flag that keeps them off the front: {_counts(invalidating)}.",
        "- Energy was measured with the weights said in `weights` (random weights draw the "
        "power of the same arithmetic; accuracy comes from `accuracy_source`).",
        "",
    ]
