"""Runs and releases joined into one (issue 41): `joulebench merge A B ... -o C`.

Each input is a release folder (checked), a run's folder (its results/) or a summary. The
first is the merge's reference: a later run's rows of a GPU product both read reference
levels on are stated as the first run's reference board reads them (a run factor: the line
between the two runs' reference boards, as between the boards of a pool, analysis.boards).
Then row by row, by configuration: a row whose setup (protocol fingerprint) the merged table
already holds under its device label joins it; one whose setup differs in a field that
changes a number is kept apart under its own label (`h200@lab-b`), never averaged with it; a
configuration the merged table holds already, with the same setup, is compared (agreement
within the two CIs, else `runs-disagree` on the kept row) and the first input's row kept.
Every comparison is in comparisons.csv and MERGE.md. docs/releases.md#merge.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis.boards import fit_line, read_records, restate_through
from joulebench.analysis.release_files import ReleaseError, is_release
from joulebench.analysis.summary import SUMMARY_KEY, read_summary
from joulebench.flags import FLAG_RUNS_DISAGREE, add_flag
from joulebench.safe_text import quantity
from joulebench.tables import FINGERPRINT_FIELDS, fingerprint_of


@dataclass
class Run:
    """One input: its name, its summary, its boards' reference readings."""

    name: str
    summary: pd.DataFrame
    records: dict = field(default_factory=dict)


def read_run(path: str | Path) -> Run:
    """A release folder, a run's folder (results/summary.parquet), or a summary file."""
    path = Path(path)
    if is_release(path):
        manifest = json.loads((path / "release.json").read_text())
        return Run(str(manifest.get("name") or path.name), read_summary(path),
                   read_records(path / "boards"))  # fmt: skip
    if path.is_dir():
        summary = path / "results" / "summary.parquet"
        if not summary.is_file():
            raise ReleaseError(f"{path}: neither a release nor a run's folder (no {summary})")
        return Run(
            path.resolve().name, read_summary(summary), read_records(summary.parent / "boards")
        )
    return Run(path.stem, read_summary(path))


def unique_names(runs: list[Run]) -> None:
    """Each run's name unique (a second `run` becomes `run-2`)."""
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name = f"{run.name}-{seen[run.name]}"


def run_factors(run: Run, base: Run) -> list[str]:
    """State `run`'s rows as `base`'s reference boards read them, per GPU product both
    referenced (the run factor); returns a line per product said."""
    said = []
    for product, rows in run.summary.groupby("device_name"):
        theirs = _reference_uuid(rows, run.records)
        mine = _reference_uuid(base.summary[base.summary["device_name"] == product], base.records)
        if theirs is None or mine is None:
            continue
        line = fit_line(run.records[theirs], base.records[mine])
        index = rows.index
        run.summary.loc[index] = restate_through(run.summary.loc[index], line)
        run.summary.loc[index, "run_factor"] = line.slope
        said.append(f"{product}: {run.name} x {1 / line.slope:.4f} - {line.offset_w:+.1f} W "
                    f"(its reference board {theirs} to {base.name}'s {mine})")  # fmt: skip
    return said


def _reference_uuid(rows: pd.DataFrame, records: dict) -> str | None:
    refs = rows["board_reference_uuid"].dropna()
    refs = [u for u in refs.unique() if u in records]
    return refs[0] if refs else None


def differing(a: dict, b: dict) -> list[str]:
    """The fingerprint's fields in which two rows differ (a field that changes a number)."""
    same = lambda x, y: x == y or (_na(x) and _na(y))  # noqa: E731
    return [f for f in FINGERPRINT_FIELDS if f in a and not same(a.get(f), b.get(f))]


def _na(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _half(row: dict) -> float:
    return (row["energy_per_image_ci95_high_j"] - row["energy_per_image_ci95_low_j"]) / 2


def compare(kept: dict, other: dict) -> dict:
    """Two measurements of one configuration: how far apart, and whether within the two
    CIs (their half-widths combined)."""
    a, b = float(kept["energy_per_image_j"]), float(other["energy_per_image_j"])
    combined = float(np.hypot(_half(kept), _half(other)))
    return {"rel_diff": (b - a) / a, "combined_half_rel": combined / a,
            "agree": bool(abs(b - a) <= combined)}  # fmt: skip


def join(merged: pd.DataFrame, run: Run) -> tuple[pd.DataFrame, list[dict]]:
    """`run`'s rows joined to the merged table row by row (see the module); returns the
    table and one comparison per configuration both hold or a setup kept apart."""
    at = {tuple(r[k] for k in SUMMARY_KEY): i for i, r in merged.iterrows()}
    setups = merged[merged["status"].eq("ok").fillna(False)].groupby("device_label")
    setups = {label: set(rows["protocol_fingerprint"]) for label, rows in setups}
    added, found, flagged = [], [], []
    for row in run.summary.assign(run=run.name).to_dict("records"):
        key = tuple(row[k] for k in SUMMARY_KEY)
        held = merged.loc[at[key]].to_dict() if key in at else None
        ok = row["status"] == "ok"
        if held is not None and held["status"] == "ok" and ok:
            fields = differing(held, row)
            if not fields:
                said = compare(held, row)
                found.append(_found(held, row, "compared", said))
                if not said["agree"]:
                    flagged.append(at[key])
                continue
            found.append(_found(held, row, "kept apart: " + ", ".join(fields), {}))
        elif held is None and not (ok and _new_setup(row, setups)):
            added.append(row)
            continue
        if ok:
            row["device_label"] = f"{row['device_label']}@{run.name}"
            added.append(row)
    out = pd.concat([merged, pd.DataFrame(added)], ignore_index=True) if added else merged
    if flagged:
        out["flags"] = add_flag(out["flags"], out.index.isin(flagged), FLAG_RUNS_DISAGREE)
    return out, found


def _new_setup(row: dict, setups: dict) -> bool:
    """A measured row whose device label the merged table holds under other setups only."""
    label = row["device_label"]
    return label in setups and row["protocol_fingerprint"] not in setups[label]


def _found(held: dict, row: dict, what: str, said: dict) -> dict:
    return {
        **{k: held[k] for k in SUMMARY_KEY},
        "kept_run": held.get("run"),
        "other_run": row["run"],
        "kept_energy_per_image_j": held["energy_per_image_j"],
        "other_energy_per_image_j": row["energy_per_image_j"],
        "outcome": what,
        **said,
    }


def merge(inputs, output, *, name: str | None = None) -> str:
    """Join `inputs` (release folders, run folders, summaries) into the release `output`;
    returns what was joined, kept apart and compared (MERGE.md's text)."""
    from joulebench.analysis.release import write_release

    if len(inputs) < 2:
        raise ReleaseError("merge: give two or more runs or releases")
    runs = [read_run(path) for path in inputs]
    unique_names(runs)
    base = runs[0]
    base.summary = base.summary.assign(run=base.name)
    factors, merged, found = [], base.summary, []
    for run in runs[1:]:
        factors += run_factors(run, base)
        merged, more = join(merged, run)
        found += more
    merged = merged.assign(
        protocol_fingerprint=[fingerprint_of(r) for r in merged.to_dict("records")]
    )
    comparisons = pd.DataFrame(found)
    text = merge_text(runs, merged, comparisons, factors)
    files = {"MERGE.md": text, "comparisons.csv": comparisons.to_csv(index=False)}
    for run in runs:
        for uuid, record in sorted(run.records.items()):
            files[f"boards/{run.name}/{uuid}.json"] = json.dumps(record, indent=2, sort_keys=True)
    name = name or Path(output).name
    write_release(output, merged, name, files, {"merged_from": [r.name for r in runs]})
    return text


def merge_text(runs: list[Run], merged: pd.DataFrame, comparisons: pd.DataFrame, factors) -> str:
    """MERGE.md: the inputs, the run factors, and per later run what was joined, kept apart
    and compared."""
    lines = [f"# Merge of {', '.join(r.name for r in runs)}", ""]
    lines += [f"- {r.name}: {quantity(len(r.summary), 'row')}" for r in runs]
    lines += ["", "Run factors (a later run stated as the first run's reference board reads):"]
    none = "- none: no GPU product both runs read reference levels on (as their boards read)"
    lines += [f"- {f}" for f in factors] or [none]
    for run in runs[1:]:
        lines += ["", *_run_lines(run, merged, comparisons)]
    return "\n".join(lines) + "\n"


def _run_lines(run: Run, merged: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    mine = merged[merged["run"] == run.name]
    apart = mine[mine["device_label"].str.endswith(f"@{run.name}")]
    joined = quantity(len(mine) - len(apart), "row")
    lines = [f"{run.name}: {joined} joined (the same setup, or a device "
             f"the merged table did not hold); {len(apart)} kept apart"]  # fmt: skip
    if len(apart):
        labels = ", ".join(sorted(apart["device_label"].unique()))
        lines[-1] += f" under {labels}"
    these = comparisons[comparisons["other_run"] == run.name] if len(comparisons) else comparisons
    if len(these):
        why = these.loc[these["outcome"] != "compared", "outcome"].value_counts()
        lines += [f"- {quantity(n, 'configuration')} {what}" for what, n in why.items()]
        compared = these[these["outcome"] == "compared"]
        if len(compared):
            diff = compared["rel_diff"].abs()
            lines.append(
                f"- {quantity(len(compared), 'configuration')} both measured with one setup: "
                f"{int(compared['agree'].sum())} agree within their CIs, "
                f"{int((~compared['agree']).sum())} do not (flagged runs-disagree); "
                f"|difference| median {diff.median():.1%}, p95 {diff.quantile(0.95):.1%}"
            )
    return lines
