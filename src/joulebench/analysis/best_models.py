"""The end of a run: where its page and figures are, and the study's best models in a table.

"Best" is the most accurate model in each energy band (decades of energy per image: under
1 mJ, 1-10 mJ, ...), at the configuration where it spends the least: the question a reader
of the study asks first ("what accuracy can I buy for this much energy?"). Rows the score
stage kept off the front (flagged, e.g. other-load) are used only when no row is clean, and
the table then says so. A measured energy is ranked apart from an estimated one: a model's
least-energy configuration is its least measured one where it has any, a band shows an
estimate only where no measured model falls in it, and each row says which it is. Reads the
published tables only; never imports torch.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from joulebench.analysis.boards import spread_lines
from joulebench.analysis.score import left_out_of_grades
from joulebench.safe_text import printable, quantity

MAX_ROWS = 8
ESTIMATED = "ESTIMATED"  # a row's energy is modelled (no hardware counter), never measured


def energy_band(energy_j: float) -> str:
    """The decade an energy per image falls in, in the unit that reads best."""
    if not (math.isfinite(energy_j) and energy_j > 0):
        return "?"
    low = 10.0 ** math.floor(math.log10(energy_j))
    return f"{_energy(low)}-{_energy(low * 10)}"


def _energy(j: float) -> str:
    if j >= 1:
        return f"{j:g} J"
    if j >= 1e-3:
        return f"{j * 1e3:g} mJ"
    return f"{j * 1e6:g} uJ"


def best_per_energy_band(scores: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """(one row per energy band: the most accurate model there, a note on what was used)."""
    energy = pd.to_numeric(scores["energy_per_image_j"], errors="coerce")
    top1 = pd.to_numeric(scores["top1"], errors="coerce")
    usable = scores[(energy > 0) & top1.notna() & (scores["status"] == "ok")].copy()
    if (usable["phase"] == "inference").any():  # energy per image, not per training sample
        usable = usable[usable["phase"] == "inference"]
    note = ""
    if usable.empty:
        if top1.isna().all():
            return usable, "no model has a top-1 (accuracy missing; see docs/accuracy.md)"
        return usable, "no model has both a measured energy and a top-1"
    clean = usable[usable["scored"].fillna(False).astype(bool)]
    if clean.empty:
        notes = usable.get("score_note", pd.Series(dtype=str)).dropna().astype(str)
        why = notes.iloc[0] if len(notes) else "flagged"
        note = f"every row is kept off the front ({why}); shown anyway"
    else:
        usable = clean
    usable["energy_per_image_j"] = pd.to_numeric(usable["energy_per_image_j"])
    usable["top1"] = pd.to_numeric(usable["top1"])
    usable["estimated"] = usable["energy_is_estimate"].fillna(False).astype(bool)
    # Each model once: its least-energy configuration, a measured one where it has any.
    usable = usable.sort_values(["estimated", "energy_per_image_j"]).drop_duplicates("model")
    usable["band_low_j"] = [10.0 ** math.floor(math.log10(e)) for e in usable["energy_per_image_j"]]
    best = (
        usable.sort_values(
            ["estimated", "top1", "energy_per_image_j"], ascending=[True, False, True]
        )
        .drop_duplicates("band_low_j")
        .sort_values("band_low_j")
        .head(MAX_ROWS)
    )
    return best, note


def batch_text(row) -> str:
    """The batch a row ran (`batch_size`, smaller after an out-of-memory retry), else the one
    asked for: a summary with only the essential columns has no `batch_size`."""
    for column in ("batch_size", "batch_size_requested"):
        value = row.get(column)
        if value is not None and pd.notna(value):
            return str(int(value))
    return "-"


def _estimated(best: pd.DataFrame) -> list[bool]:
    return best["energy_is_estimate"].fillna(False).astype(bool).tolist()


def format_best(best: pd.DataFrame) -> str:
    """A plain-text table: text columns left-aligned, numbers right-aligned."""
    columns = {
        "energy band": [energy_band(e) for e in best["energy_per_image_j"]],
        "model": best["model"].astype(str).tolist(),
        "top-1 %": [f"{v:.1f}" for v in best["top1"]],
        "mJ/image": [f"{v * 1e3:.3g}" for v in best["energy_per_image_j"]],
        "device": best["device_label"].astype(str).tolist(),
        "method": best["method"].astype(str).tolist(),
        "batch": [batch_text(row) for _, row in best.iterrows()],
        "energy is": [ESTIMATED if e else "measured" for e in _estimated(best)],
        "grade": best["grade"].fillna("-").astype(str).tolist(),
    }
    columns = {name: [printable(v) for v in values] for name, values in columns.items()}
    numeric = {"top-1 %", "mJ/image", "batch"}
    widths = {name: max(len(name), *map(len, values)) for name, values in columns.items()}

    def cell(name, text):
        return text.rjust(widths[name]) if name in numeric else text.ljust(widths[name])

    lines = ["  ".join(cell(name, name) for name in columns)]
    for i in range(len(best)):
        lines.append("  ".join(cell(name, values[i]) for name, values in columns.items()))
    return "\n".join(line.rstrip() for line in lines)


def graded_text(scores: pd.DataFrame) -> str:
    """'24 of 30 measured rows graded; left out: flagged other-load (4), no top1 (2)'."""
    measured = int((scores["status"] == "ok").fillna(False).sum())
    left = left_out_of_grades(scores)
    graded = measured - sum(left.values())
    text = f"{graded} of {measured} measured rows graded"
    if left:
        text += "; left out: " + ", ".join(f"{why} ({n})" for why, n in left.items())
        text += " (docs/scoring.md)"
    return text


def end_of_run(results: str | Path = "results") -> str:
    """What the workflow prints when it succeeds: the outputs and the best models, every name
    from the tables made printable (a terminal never runs what a summary holds)."""
    return printable("\n".join(_end_lines(Path(results))), newlines=True)


def predicted_lines(path: Path) -> list[str]:
    """How many configurations were predicted rather than measured, where any were."""
    if not path.is_file():
        return []
    predicted = pd.read_parquet(path, columns=["model", "energy_per_image_j", "pi_level"])
    done = predicted["energy_per_image_j"].notna()
    if not len(predicted):
        return []
    level = predicted["pi_level"].dropna()
    level = f"{level.iloc[0]:.0%}" if len(level) else "their"
    models = quantity(predicted.loc[done, "model"].nunique(), "model")
    return [
        f"  predicted: {quantity(int(done.sum()), 'configuration')} of "
        f"{models} not measured, with {level} intervals "
        f"({path}; hollow on the page; docs/predictions.md)"
        + (f"; {int((~done).sum()):,} not predicted (see `note`)" if (~done).any() else "")
    ]


def _end_lines(results: Path) -> list[str]:
    lines = ["joulebench: done."]
    page = results / "webapp" / "index.html"
    if page.is_file():
        lines.append(f"  web page: {page.resolve()}")
    figures = sorted((results / "figures").glob("*.png"))
    if figures:
        made = quantity(len(figures), "figure")
        lines.append(f"  figures:  {figures[0].parent.resolve()}/ ({made}, PNG and PDF)")
    tables = [
        results / name for name in ("summary.parquet", "scores.parquet", "best_configs.parquet")
    ]
    if any(path.is_file() for path in tables):
        lines.append("  tables:   " + ", ".join(str(p) for p in tables if p.is_file()))
    scores_path = results / "scores.parquet"
    if not scores_path.is_file():
        return lines
    scores = pd.read_parquet(scores_path)
    lines.append("  grades:   " + graded_text(scores))
    summary_path = results / "summary.parquet"
    if summary_path.is_file():
        summary = pd.read_parquet(summary_path)
        lines += ["  boards:   " + line for line in spread_lines(summary)]
    lines += predicted_lines(results / "predicted.parquet")
    best, note = best_per_energy_band(scores)
    lines.append("")
    if best.empty:
        lines.append(f"Best models: none to show: {printable(note)}.")
        return lines
    lines.append(
        "Most accurate model per energy band (energy per image, at its least-energy "
        "configuration)" + (f"; {printable(note)}" if note else "") + ":"
    )
    lines += ["  " + line for line in format_best(best).splitlines()]
    return lines
