"""Every figure at once: `render_all` (from tables) and `run_figures` (`joulebench figures`,
from the tables' paths), drawing each registered figure in FIGURE_NAMES order."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from joulebench.analysis.score import DEFAULT_MAX_ENERGY_CV
from joulebench.analysis.summary import SUMMARY_KEY
from joulebench.report.figure_manifest import write_manifest
from joulebench.report.figure_names import FIGURE_NAMES
from joulebench.report.figures.registry import REGISTRY, Inputs
from joulebench.report.figures.rows import not_comparable
from joulebench.report.figures.trace import TRACE_KEY, choose_trace_config, trace_context
from joulebench.table_io import read_table


def render_all(
    summary: pd.DataFrame,
    scores: pd.DataFrame,
    fits: dict[str, pd.DataFrame],
    trace: pd.DataFrame | None,
    outdir,
    *,
    group: dict | None = None,
    trace_config: dict | None = None,
    best: pd.DataFrame | None = None,
    secondary_unit: str | None = None,
    predicted: pd.DataFrame | None = None,
) -> dict[str, list[Path]]:
    """Every figure into `outdir/<name>.{pdf,png}`, and which were not made (nothing to draw:
    their files say why) into `outdir/figures.tsv` (report.figure_manifest).

    With scores of energy_scope node, every energy axis shows the whole node's energy
    (the summary's energy_node_per_image_j; the fits fitted it, run_fits' energy_scope) and
    says so.
    `group` picks the score group of figures (1)-(2) (keys phase, device_label, method,
    batch_size; unset keys: the group with the most models); its device_label also picks the
    device of figures (3), (4) and (6). `trace_config` picks the trace of figure (5) (keys
    device_label, model, method, batch_size; unset: the first configuration in the table).
    `best`: the best configurations (results/best_configs.parquet) for figure (8); None:
    computed here from the summary by the same rules. `predicted`: joulebench predict's
    table (tables.PREDICTED; None: none), drawn apart in the accuracy-vs-energy figure.
    """
    missing = [name for name in FIGURE_NAMES if name not in REGISTRY]
    if missing:  # each figure module registers on import, in report.figures' __init__
        raise RuntimeError(f"figures declared but not registered: {missing}")
    out = Path(outdir)
    tc = choose_trace_config(trace, trace_config or {})
    idle, est, sim = trace_context(summary, tc)
    if "energy_scope" in scores.columns and set(scores["energy_scope"].dropna()) == {"node"}:
        from joulebench.analysis.score import node_headline

        summary = node_headline(summary).assign(energy_scope="node")
        fits = {name: table.assign(energy_scope="node") for name, table in fits.items()}
    summary, cv = with_score_flags(summary, scores)
    inputs = Inputs(
        summary=summary,
        scores=scores,
        fits=fits,
        trace=trace if trace is not None else pd.DataFrame(columns=[*TRACE_KEY, "power_w"]),
        best_configs=best,
        group=dict(group or {}),
        trace_config=tc,
        idle_power_w=idle,
        trace_estimated=est,
        trace_simulated=sim,
        max_energy_cv=cv,
        why=not_comparable(summary, max_energy_cv=cv),  # why a fits figure may be empty
        secondary_unit=secondary_unit,
        predicted=predicted,
    )
    drawn = {}
    for name in FIGURE_NAMES:
        spec = REGISTRY[name]
        drawn[name] = spec.draw(inputs.only(spec.needs), out / name)
    write_manifest(out, {name: getattr(paths, "why", "") for name, paths in drawn.items()})
    return drawn


def with_score_flags(summary: pd.DataFrame, scores: pd.DataFrame):
    """The summary with each row's flags as the score stage set them (high-spread included,
    by the configured threshold), and the spread threshold the figures should still apply:
    None when the scores carried flags, else the default."""
    key = list(SUMMARY_KEY)
    if "flags" not in scores.columns or not set(key) <= set(scores.columns):
        return summary, DEFAULT_MAX_ENERGY_CV
    flags = scores.drop_duplicates(key)[[*key, "flags"]].rename(columns={"flags": "_score_flags"})
    # merge, not join on a MultiIndex: pandas' MultiIndex join raises on NA keys, and the
    # summary's own not-profiled rows have NA device, method and batch size
    joined = summary[key].merge(flags, on=key, how="left", validate="many_to_one")
    score_flags = joined["_score_flags"].astype("string").set_axis(summary.index)
    out = summary.copy()
    out["flags"] = score_flags.fillna(summary["flags"].astype("string"))
    return out, None


def run_figures(
    summary,
    scores,
    fits_dir,
    outdir,
    *,
    trace_path=None,
    group: dict | None = None,
    trace: dict | None = None,
    best_configs_path=None,
    secondary_unit: str | None = None,
    predicted_path=None,
) -> dict[str, list[Path]]:
    """`joulebench figures`: every figure from the tables' paths (summary, scores, the fits'
    folder, optionally a power trace and `joulebench predict`'s table) and the config's
    figures section: `group` and `trace` pick what figures show (null keys: chosen
    automatically). The section's `trace_table` (the trace with from_summary) is the
    workflow's input, given here as `trace_path`."""
    from joulebench.analysis.fits import read_fits
    from joulebench.analysis.grade_ranges import read_predicted
    from joulebench.analysis.summary import read_summary

    paths = render_all(
        read_summary(summary),
        read_table(scores),
        read_fits(fits_dir),
        read_table(trace_path) if trace_path else None,
        outdir,
        group={k: v for k, v in (group or {}).items() if v is not None},
        trace_config={k: v for k, v in (trace or {}).items() if v is not None},
        best=read_table(best_configs_path) if best_configs_path else None,
        secondary_unit=secondary_unit,
        predicted=read_predicted(predicted_path) if predicted_path else None,
    )
    made = [name for name, p in paths.items() if not getattr(p, "why", "")]
    print(f"figures: {len(made)} of {len(paths)} made -> {outdir}", file=sys.stderr)
    return paths
