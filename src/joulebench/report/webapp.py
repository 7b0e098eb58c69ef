"""The webapp stage: one self-contained HTML page to compare models by accuracy and energy.

`results/webapp/index.html` is meant to be mailed around and opened from disk: the data is
embedded as JSON (column by column, most as base64 typed arrays: `encode_column`, so a
300,000-row study stays loadable), the script and styles are inlined (hand-written canvas,
no plotting library, nothing from a CDN), and a Content-Security-Policy allows no network
access at all. The page's own code lives in `webapp_assets/` as package data (the script
in modules, SCRIPT_MODULES, joined into one); this module only joins the summary with its
scores, encodes the rows and fills the template.

Model names come from anywhere (a study config, a published summary), so the JSON is escaped
to stay inert inside its <script> tag, and the page shows every string via textContent.
Like the figures, this needs only pandas: pages can be built from a published summary.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench import __version__
from joulebench.analysis.grade_ranges import (
    PREDICTED_ENERGY,
    compares_predicted_energy,
    grade_ranges,
)
from joulebench.analysis.score import (
    GRADES,
    SCORE_GROUP,
    parse_grade_thresholds,
    score_summary,
)
from joulebench.analysis.summary import SUMMARY_KEY
from joulebench.flags import page_meta as flags_meta
from joulebench.report.how_measured import how_comparable, how_measured
from joulebench.report.palettes import page_palettes
from joulebench.table_io import atomic_write, read_table
from joulebench.tables import (
    PAGE,
    STATUS_NOT_PROFILED,
    STATUS_PREDICTED,
    SUMMARY_COLUMNS,
    energy_is_estimate,
)

DEFAULT_TITLE = "joulebench: energy and accuracy of image classifiers"
# Relative to results/webapp/index.html: the repository's docs folder.
DEFAULT_DOCS_HREF = "../../docs/"

# The page's columns (tables.PAGE, which its CSV download writes too): the summary's, then
# the scores' under their page names (the scored energy is renamed so it cannot be mistaken
# for the summary's total energy: with energy="dynamic" it is the energy above idle).
PAGE_COLUMNS: tuple[str, ...] = tuple(PAGE.names)
PAGE_SUMMARY_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in PAGE.columns if c.name in SUMMARY_COLUMNS and not c.renamed_from
)
# The page's own columns (a row's source, the grade range) and the predicted table's.
PAGE_OWN_COLUMNS = ("source", "grade_range")
PAGE_PREDICTED_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in PAGE.columns if c.origin == "predicted"
)
PAGE_SCORE_COLUMNS: dict[str, str] = {
    (c.renamed_from.partition(".")[2] or c.name): c.name
    for c in PAGE.columns
    if c.name not in (*PAGE_SUMMARY_COLUMNS, *PAGE_OWN_COLUMNS, *PAGE_PREDICTED_COLUMNS)
}
# A predicted row's columns of its model, taken from the summary's row of that model.
PAGE_MODEL_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in PAGE.columns if c.origin in ("catalog", "accuracy")
)

# The page's script, in the order it is put together: the pure data first (also run under
# node by the tests), the URL state, DOM helpers, plot, tables, panels, and the start.
SCRIPT_MODULES = ("data.js", "url.js", "dom.js", "plot.js", "table.js", "panels.js", "main.js")
# Inside <script type="application/json"> the HTML parser only looks for `</script` and
# `<!--`; escaping every <, > and & (valid JSON escapes, only ever inside strings) makes both
# impossible. U+2028/9 are escaped too so the text is also a valid JavaScript literal.
_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)
_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def page_table(
    summary: pd.DataFrame,
    scores: pd.DataFrame,
    predicted: pd.DataFrame | None = None,
    *,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
) -> pd.DataFrame:
    """PAGE_COLUMNS: one row per summary row (source measured), then one per prediction of
    `predicted` (tables.PREDICTED; None: none) with its grade range (predicted_rows). A
    model's `not-profiled` row goes where it has predicted rows: they say more."""
    measured = measured_rows(summary, scores)
    if predicted is None or predicted.empty:
        return measured
    rows = predicted_rows(predicted, summary, scores, grade_thresholds=grade_thresholds)
    if rows.empty:
        return measured
    stand_in = (measured["status"] == STATUS_NOT_PROFILED) & measured["model"].isin(rows["model"])
    measured = measured[~stand_in.fillna(False).astype(bool)]
    return pd.concat([measured, rows], ignore_index=True)[list(PAGE_COLUMNS)]


def measured_rows(summary: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """One row per summary row, PAGE_COLUMNS: the summary joined with its scores by key.

    Rows without a score row (scores computed from another summary) keep empty scores;
    `energy_is_estimate` follows tables.energy_is_estimate (the meter's name where the row
    does not say), so the page can badge every estimate. `flags` are the score stage's
    where it gave them (they add high-spread to the summary's own). `source` is measured;
    the predicted table's columns and the grade range stay empty.
    """
    key = list(SUMMARY_KEY)
    missing = [c for c in PAGE_SUMMARY_COLUMNS if c not in summary.columns]
    if missing:
        raise ValueError(f"summary lacks columns {missing} (see SUMMARY_COLUMNS)")
    left = summary[list(PAGE_SUMMARY_COLUMNS)].reset_index(drop=True)
    right = scores.reindex(columns=[*key, *PAGE_SCORE_COLUMNS, "flags"]).drop_duplicates(key)
    right = right.rename(columns={**PAGE_SCORE_COLUMNS, "flags": "_score_flags"})
    out = left.merge(right, on=key, how="left", validate="many_to_one")
    score_flags = out.pop("_score_flags").astype("string")
    out["flags"] = score_flags.where(score_flags.notna(), out["flags"].astype("string"))
    out["energy_is_estimate"] = energy_is_estimate(out)
    node = (out["energy_scope"] == "node").fillna(False).astype(bool)
    host = out["host_is_estimate"].astype("boolean").fillna(False)
    # energy_scope node: the headline holds the host's part, an estimate where that is
    out["energy_is_estimate"] = out["energy_is_estimate"] | (node & host)
    out["source"] = "measured"
    for column in (*PAGE_PREDICTED_COLUMNS, "grade_range"):
        out[column] = pd.Series(None, index=out.index, dtype=PAGE[column].dtype)
    return out[list(PAGE_COLUMNS)]


def predicted_rows(
    predicted: pd.DataFrame,
    summary: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
) -> pd.DataFrame:
    """The page's rows of the predictions (tables.PREDICTED), PAGE_COLUMNS: each with the
    catalog and accuracy columns of the summary's row of its model, status predicted, never
    scored, and its grade range (analysis.grade_ranges). A row with a note (nothing
    predicted) is left out. Its energy is the device's total, what was predicted: it is the
    scored energy only where the scores compare that energy, else it stays off the plot,
    the note says why. A model the summary measured under the same key is never doubled."""
    energy = pd.to_numeric(predicted["energy_per_image_j"], errors="coerce")
    pred = predicted[(energy > 0).fillna(False).to_numpy(bool)].reset_index(drop=True)
    models = summary.drop_duplicates("model").set_index("model")[list(PAGE_MODEL_COLUMNS)]
    out = pred.join(models, on="model")
    out = out[~_measured_here(out, summary)].reset_index(drop=True)
    ranges = grade_ranges(out, scores, grade_thresholds=grade_thresholds)
    out["source"] = "predicted"
    out["status"] = STATUS_PREDICTED
    out["grade_range"] = ranges["grade_range"]
    out = out.assign(**PREDICTED_ENERGY, scored=False)
    drawn = compares_predicted_energy(scores)
    out["scored_energy_per_image_j"] = out["energy_per_image_j"] if drawn else float("nan")
    note = ranges["grade_range_note"].fillna("")
    if not drawn:
        note = note.where(note == "", note + "; ") + _OTHER_ENERGY
    out["score_note"] = note.mask(note == "", pd.NA)
    return out.reindex(columns=list(PAGE_COLUMNS))


_OTHER_ENERGY = "predicted as the device's total energy, not the energy scored here: not drawn"


def _measured_here(rows: pd.DataFrame, summary: pd.DataFrame) -> np.ndarray:
    """Which of `rows` have an ok summary row under the same key (SUMMARY_KEY)."""
    key = list(SUMMARY_KEY)
    ok = summary[(summary["status"] == "ok").fillna(False).astype(bool)][key].drop_duplicates()
    joined = rows[key].astype(object).merge(ok.astype(object).assign(_ok=True), on=key, how="left")
    return joined["_ok"].fillna(False).astype(bool).to_numpy()


def _json_values(column: pd.Series) -> list:
    """A column as JSON-ready Python values: NaN, inf and NA become null."""
    values = []
    for v in column.astype(object).tolist():
        if v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v)):
            values.append(None)
        elif hasattr(v, "item"):  # numpy scalar
            item = v.item()
            finite = not isinstance(item, float) or math.isfinite(item)
            values.append(item if finite else None)
        else:
            values.append(v)
    return values


def _code_width(n_values: int) -> int:
    return 1 if n_values <= 1 << 8 else 2 if n_values <= 1 << 16 else 4


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode("ascii")


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Codes (0, 1, ... in order of first appearance; -1 for missing) and the distinct values.
    An object column is told apart by type too, so that True and 1 stay two values."""
    if column.dtype != object:
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        return codes, pd.Series(uniques, dtype=object)
    codes, _ = pd.factorize(pd.Series([(type(v).__name__, v) for v in column.tolist()]))
    _, first = np.unique(codes, return_index=True)
    return codes, column.iloc[first].reset_index(drop=True)


def _f64_chars(n_rows: int) -> int:
    return 4 * math.ceil(n_rows * 8 / 3)


def encode_column(column: pd.Series) -> dict:
    """One column as the page decodes it, whichever is smaller: {"values", "codes", "width"}
    (the distinct JSON values, and per row the index of its value as little-endian unsigned
    ints of `width` bytes, base64; no "codes" when every row holds values[0]) or, for
    numbers with many distinct values, {"f64": base64 of little-endian float64, NaN for
    missing}. Both are exact; a 300,000-row page is a third of the size of plain JSON lists
    and decodes without building a JavaScript value per cell."""
    column = column.reset_index(drop=True)
    n = len(column)
    codes, uniques = _factorize(column)
    width = _code_width(len(uniques) + 1)
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    code_chars = 4 * math.ceil(n * width / 3)
    # each distinct number takes at least 2 characters ("1,") in the list of values
    if numeric and len(uniques) > 1 and 2 * len(uniques) + code_chars > _f64_chars(n):
        return _f64(column)
    values = _json_values(uniques)
    if (codes < 0).any():
        codes = np.where(codes < 0, len(values), codes)
        values.append(None)
    if numeric and len(values) > 1:
        if len(json.dumps(values, allow_nan=False)) + code_chars > _f64_chars(n):
            return _f64(column)
    if len(values) <= 1:
        return {"values": values}
    return {"values": values, "codes": _b64(codes.astype(f"<u{width}")), "width": width}


def _f64(column: pd.Series) -> dict:
    floats = pd.to_numeric(column, errors="coerce").astype("Float64")
    floats = floats.to_numpy(dtype="<f8", na_value=np.nan)
    floats[~np.isfinite(floats)] = np.nan  # inf is no number on the page, as in JSON
    return {"f64": _b64(floats)}


def co2e_g_per_j(table: pd.DataFrame) -> float | None:
    """Grams of CO2e per joule the scores assumed (carbon.grid_gco2e_per_kwh x PUE / 3.6e6),
    for the page's gCO2e unit; None when the study set no grid intensity."""
    e = pd.to_numeric(table["scored_energy_per_image_j"], errors="coerce")
    g = pd.to_numeric(table["co2e_per_1k_images_g"], errors="coerce") / 1000.0
    ratio = (g / e).replace([math.inf, -math.inf], math.nan).dropna()
    return float(ratio.median()) if len(ratio) else None


def page_data(
    summary: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    title: str = DEFAULT_TITLE,
    generated_by: str | None = None,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
    protocol: Mapping | None = None,
    predicted: pd.DataFrame | None = None,
) -> dict:
    """What the page embeds: meta plus the rows column by column, each as `encode_column`;
    `predicted` (tables.PREDICTED) adds the predictions as rows of their own (page_table).

    The meta carries what the script would otherwise retype: the score's comparison group
    (SCORE_GROUP), the colours (palettes.py), the flags (flags.py: separator, meanings,
    which invalidate) and how the numbers were measured (how_measured: from `protocol`, the
    study's protocol section, None where not known, and the rows), so page, score and
    figures cannot drift apart and no number on the page is typed by hand.
    """
    table = page_table(summary, scores, predicted, grade_thresholds=grade_thresholds)
    measured = table[(table["source"] == "measured").to_numpy(bool)]
    kinds = measured["energy_kind"].dropna().unique().tolist()
    thresholds = parse_grade_thresholds(grade_thresholds)
    meta = {
        "title": title,
        "generated_by": generated_by or f"joulebench {__version__}",
        "rows": len(table),
        "predicted_rows": len(table) - len(measured),
        "energy_kind": kinds[0] if len(kinds) == 1 else ("mixed" if kinds else "total"),
        "grades": list(GRADES),
        "grade_thresholds": thresholds,
        "reference_model": next(iter(table["reference_model"].dropna()), None),
        # the page draws one front per score group and colours from the shared palettes
        "score_group": list(SCORE_GROUP),
        "palettes": page_palettes(),
        # the headline energy (energy_scope) and the page's unit switch (analysis.carbon)
        "energy_scope": next(iter(measured["energy_scope"].dropna()), "device"),
        "co2e_g_per_j": co2e_g_per_j(measured),
        "flags": flags_meta(),
        "how": how_measured(measured, protocol) + how_comparable(summary),
    }
    columns = list(PAGE_COLUMNS)
    return {"meta": meta, "columns": columns, "data": {c: encode_column(table[c]) for c in columns}}


def embed_json(data) -> str:
    """JSON that is inert inside <script type="application/json">: no `</script`, no `<!--`."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.translate(_JSON_ESCAPES)


def _asset(name: str) -> str:
    return resources.files("joulebench.report").joinpath("webapp_assets", name).read_text("utf-8")


def page_script() -> str:
    """The page's one inline script: its modules (SCRIPT_MODULES) in one strict closure, so
    nothing lands on `window`; each module is a `const jb<Name> = (function (...) {...})()`."""
    parts = [f"/* ---- webapp_assets/{name} */\n{_asset(name)}" for name in SCRIPT_MODULES]
    return '"use strict";\n(function () {\n' + "\n".join(parts) + "\n})();\n"


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_page(data: dict, *, docs_href: str = DEFAULT_DOCS_HREF) -> str:
    """The page's HTML: template + inlined styles and script + the embedded data.

    The Content-Security-Policy names the inline script and style by hash and allows no
    fetch, image, font or frame source, so the page cannot reach the network and injected
    markup could not run script even if some string ever reached innerHTML.
    """
    template, css = _asset("page.html"), _asset("app.css")
    checks = [("app.css", css, "</style"), *((n, _asset(n), "</script") for n in SCRIPT_MODULES)]
    for name, text, tag in checks:
        if tag in text.lower():
            raise ValueError(f"webapp_assets/{name} must not contain {tag!r}")
    js = page_script()
    csp = (
        "default-src 'none'; "
        f"script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; "
        "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    values = {
        "CSP": html.escape(csp),
        "TITLE": html.escape(data["meta"]["title"]),
        "GENERATED_BY": html.escape(data["meta"]["generated_by"]),
        "DOCS": html.escape(docs_href),
        "STYLE": css,
        "SCRIPT": js,
        "DATA": embed_json(data),
    }
    # One pass, so a value that happens to contain "{{...}}" is never substituted again.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def build_page(
    summary: pd.DataFrame,
    scores: pd.DataFrame | None,
    out_path: str | os.PathLike,
    *,
    title: str = DEFAULT_TITLE,
    generated_by: str | None = None,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
    docs_href: str = DEFAULT_DOCS_HREF,
    protocol: Mapping | None = None,
    predicted: pd.DataFrame | None = None,
) -> Path:
    """Write the page for a summary (SUMMARY_COLUMNS) and its scores (SCORE_COLUMNS).

    scores None: scored here with the defaults. Written atomically (temp file, rename).
    `grade_thresholds` should be the ones the scores were made with; the page prints them.
    `protocol`: the protocol section the summary was measured with (None: not known).
    `predicted`: the models not measured, predicted (tables.PREDICTED; None: none).
    """
    if scores is None:
        scores = score_summary(summary, grade_thresholds=grade_thresholds)
    missing = [c for c in SUMMARY_KEY if c not in scores.columns]
    if missing:
        raise ValueError(f"scores lack key columns {missing} (see SCORE_COLUMNS)")
    data = page_data(
        summary,
        scores,
        title=title,
        generated_by=generated_by,
        grade_thresholds=grade_thresholds,
        protocol=protocol,
        predicted=predicted,
    )
    text = render_page(data, docs_href=docs_href)
    path = Path(out_path)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path


def run_webapp(
    summary,
    scores,
    output,
    *,
    grade_thresholds: Mapping[str, float] | Sequence[float] | None = None,
    protocol: Mapping | None = None,
    predicted_path=None,
) -> Path:
    """`joulebench webapp`: the page for a summary and its scores (paths); the score's grade
    thresholds are printed on the page (the rest of the score it reads from the scores), and
    the protocol section the summary was measured with says how (None: not known, as for a
    summary from elsewhere). `predicted_path`: `joulebench predict`'s table (None: none),
    its predictions drawn apart from the measurements."""
    from joulebench.analysis.grade_ranges import read_predicted
    from joulebench.analysis.summary import read_summary

    path = build_page(
        read_summary(summary),
        read_table(scores),
        output,
        grade_thresholds=grade_thresholds,
        protocol=protocol,
        predicted=read_predicted(predicted_path) if predicted_path else None,
    )
    print(f"web page -> {path}", file=sys.stderr)
    return path


__all__ = [
    "DEFAULT_TITLE",
    "PAGE_COLUMNS",
    "SCRIPT_MODULES",
    "build_page",
    "embed_json",
    "page_data",
    "page_script",
    "page_table",
    "predicted_rows",
    "render_page",
]
