"""Which figures a study made, and why the others were not: `results/figures/figures.tsv`.

A figure with nothing to draw (no power trace on an estimating meter, no training rows, no
power-limit sweep, every row flagged) is not made: its file still exists, so Snakemake's
outputs and its up-to-date checks stay as they are, but it only says why, and the manifest
lists it as not made. The end of the run (common.smk's end_message) and `snakemake --report`
(the figures rule's report category and labels) read the manifest; neither tells a made figure
from a note by its file. Standard library only: the Snakefile imports this on every parse.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from joulebench.report.figure_names import FIGURE_NAMES

MANIFEST = "figures.tsv"  # in the figures' folder
COLUMNS = ("figure", "made", "why")
MADE, NOT_MADE = "Figures", "Figures not made"  # the report's categories


def manifest_text(why_not: Mapping[str, str]) -> str:
    """The manifest of figures `why_not` maps to why each was not made ('' for made), in
    FIGURE_NAMES order: tab-separated, one line each, text cut to one line."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for name in [n for n in FIGURE_NAMES if n in why_not]:
        why = " ".join(str(why_not[name]).split())
        writer.writerow((name, "no" if why else "yes", why))
    return out.getvalue()


def write_manifest(folder, why_not: Mapping[str, str]) -> Path:
    """Write `folder/figures.tsv` atomically (see manifest_text)."""
    from joulebench.table_io import atomic_write

    path = Path(folder) / MANIFEST
    text = manifest_text(why_not)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path


def read_manifest(path) -> dict[str, str]:
    """figure -> why it was not made ('' for made); {} where there is no manifest (a folder
    from before it existed)."""
    path = Path(path)
    if not path.is_file():
        return {}
    rows = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t")
    return {row["figure"]: (row["why"] if row["made"] == "no" else "") for row in rows}


def not_made_lines(folder) -> list[str]:
    """The end of a run's lines on the figures not made, and why ([] when all were)."""
    why_not = read_manifest(Path(folder) / MANIFEST)
    missed = {name: why for name, why in why_not.items() if why}
    if not missed:
        return []
    head = (
        f"Figures not made ({len(missed)} of {len(why_not)}; each file says why, "
        f"{Path(folder) / MANIFEST} lists them):"
    )
    return ["", head, *(f"  {name}: {why}" for name, why in missed.items())]


def report_category(path, name: str) -> str:
    """The `snakemake --report` category of figure `name`: made, or not made."""
    return NOT_MADE if read_manifest(path).get(name) else MADE


def report_labels(path, name: str) -> dict[str, str]:
    """The report's labels of figure `name`: its name, and why it was not made."""
    why = read_manifest(path).get(name, "")
    return {"figure": name, "made": f"no: {why}" if why else "yes"}


__all__ = [
    "COLUMNS",
    "MADE",
    "MANIFEST",
    "NOT_MADE",
    "manifest_text",
    "not_made_lines",
    "read_manifest",
    "report_category",
    "report_labels",
    "write_manifest",
]
