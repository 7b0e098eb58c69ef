"""Releases (issue 41): a finished run as a versioned folder others can load, check and merge.

`publish` copies what a run made (the summary, scores and best configurations, the check
reports and the boards' reference readings, the figures and the page) into a folder beside a
generated datasheet and columns page, `release.json` and `SHA256SUMS`. Nothing in it depends
on when it was published: the same run gives the same bytes. `load` reads a release (its
checksums and version checked) or a bare summary into a typed table, with the filters users
ask for. docs/releases.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from joulebench import __version__
from joulebench.analysis.release_files import (
    MANIFEST,
    RELEASE_VERSION,
    SUMMARY_FILE,
    SUMS,
    ReleaseError,
    is_release,
    sums_text,
)
from joulebench.analysis.summary import read_summary
from joulebench.table_io import WriteError, write_table
from joulebench.tables import SUMMARY, SUMMARY_COLUMNS

LICENCE = "CC-BY-4.0"
# what a release takes from a run's results/, as (source glob, folder in the release)
COPIED = (
    ("scores.parquet", ""),
    ("best_configs.parquet", ""),
    ("check/*.json", "check"),
    ("check/gpus/*.json", "check/gpus"),
    ("boards/*.json", "boards"),
    ("figures/*.png", "figures"),
    ("figures/*.pdf", "figures"),
    ("figures/figures.tsv", "figures"),
    ("webapp/index.html", "webapp"),
)


def publish(
    run: str | Path = ".", output: str | Path = "release", *, name: str | None = None
) -> Path:
    """Write the release of the run in folder `run` (its results/summary.parquet and what
    lies beside it) to `output`, atomically (write_release)."""
    results = Path(run) / "results"
    summary_path = results / SUMMARY_FILE
    if not summary_path.is_file():
        raise ReleaseError(f"{run}: no {summary_path} (run the study first; docs/releases.md)")
    files = {}
    for pattern, into in COPIED:
        for source in sorted(results.glob(pattern)):
            files[(Path(into) / source.name).as_posix()] = source
    return write_release(
        output, read_summary(summary_path), name or Path(run).resolve().name, files
    )


def write_release(
    output: str | Path, summary: pd.DataFrame, name: str, files: dict, extra: dict | None = None
) -> Path:
    """A release folder at `output`: the summary (parquet and CSV), `files` (release path ->
    a source file copied, or a text written), the columns page, the datasheet, the manifest
    (with `extra` keys) and the checksums; built beside `output`, then renamed into place (a
    former release there is replaced; any other folder is refused)."""
    output = Path(output)
    _check_output(output)
    building = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        _fill(building, summary, name, files, extra or {})
        _into_place(building, output)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return output


def _check_output(output: Path) -> None:
    if output.exists() and not output.is_dir():
        raise WriteError(f"cannot write {output}: it is a file; give a folder for the release")
    if output.is_dir() and any(output.iterdir()) and not is_release(output):
        raise WriteError(f"cannot write {output}: a folder that is not a release; give a new one")
    output.parent.mkdir(parents=True, exist_ok=True)


def _fill(folder: Path, summary: pd.DataFrame, name: str, files: dict, extra: dict) -> None:
    """Every file of the release in `folder`, the checksums last."""
    write_table(summary, folder / SUMMARY_FILE, SUMMARY_COLUMNS)
    write_table(summary, folder / "summary.csv", SUMMARY_COLUMNS)
    names = [SUMMARY_FILE, "summary.csv"]
    for target, source in sorted(files.items()):
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, str):
            (folder / target).write_text(source)
        else:
            shutil.copyfile(source, folder / target)
        names.append(target)
    manifest = {**manifest_of(summary, name, names), **extra}
    (folder / "COLUMNS.md").write_text(columns_page())
    (folder / "DATASHEET.md").write_text(datasheet(summary, manifest))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    names += ["COLUMNS.md", "DATASHEET.md", MANIFEST]
    (folder / SUMS).write_text(sums_text(folder, names))


def _into_place(building: Path, output: Path) -> None:
    """Rename the built folder to `output`; a former release there goes only once the new
    one stands."""
    os.chmod(building, 0o755)
    if output.exists():
        old = output.with_name(f".{output.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(output, old)
        os.replace(building, output)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(building, output)


def manifest_of(summary: pd.DataFrame, name: str, files: list[str]) -> dict:
    """What release.json says: its version and name, what made it, when the rows were
    measured (not when it was published), what it holds, each fingerprint's fields."""
    from joulebench.tables import FINGERPRINT_FIELDS

    ok = summary[summary["status"].eq("ok").fillna(False)]
    ends = summary["end_time_utc"].dropna()
    prints = ok.drop_duplicates("protocol_fingerprint")
    return {
        "release_version": RELEASE_VERSION,
        "name": name,
        "joulebench_version": __version__,
        "measured_until_utc": str(ends.max()) if len(ends) else "",
        "rows": len(summary),
        "measured_rows": len(ok),
        "models": int(summary["model"].nunique()),
        "devices": sorted(ok["device_name"].dropna().unique().tolist()),
        "fingerprints": {
            str(r["protocol_fingerprint"]): {f: _plain(r.get(f)) for f in FINGERPRINT_FIELDS}
            for r in prints.to_dict("records")
        },
        "licence": LICENCE,
        "files": sorted(files),
    }


def _plain(value):
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def columns_page() -> str:
    """The summary's columns, as docs/columns.md holds them (tables.columns_markdown)."""
    from joulebench.tables import columns_markdown

    text = columns_markdown()
    start = text.index("## summary")
    end = text.index("\n## ", start + 1)
    return f"# Columns of summary.parquet\n\nFrom joulebench {__version__}.\n\n" + text[
        start:end
    ].removeprefix(f"## summary\n\n`{SUMMARY.path}`: ")


def datasheet(summary: pd.DataFrame, manifest: dict) -> str:
    """DATASHEET.md: what was measured, how, on what, its known limits and its licence."""
    from joulebench.analysis.datasheet import datasheet_text

    return datasheet_text(summary, manifest)


def load(
    path: str | Path,
    *,
    ok: bool = False,
    comparable: bool = False,
    fingerprint: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """A release (folder: its version and checksums checked) or a summary (parquet or CSV)
    as a typed table, one row per summary row (SUMMARY_COLUMNS). `ok`: measured rows only;
    `comparable`: the rows the score compares (measured, an energy, no invalidating flag,
    not simulated); `fingerprint`: rows of these protocol fingerprints only."""
    from joulebench.analysis.score import measured_mask

    table = read_summary(path)
    if ok:
        table = table[table["status"].eq("ok").fillna(False).to_numpy(bool)]
    if comparable:
        table = table[measured_mask(table).to_numpy(bool)]
    if fingerprint is not None:
        wanted = [fingerprint] if isinstance(fingerprint, str) else list(fingerprint)
        table = table[table["protocol_fingerprint"].isin(wanted).to_numpy(bool)]
    return table.reset_index(drop=True)
