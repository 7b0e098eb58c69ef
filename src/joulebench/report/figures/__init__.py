"""The study's figures: matplotlib (Agg, no pyplot state), PDF + PNG, sized for a paper column.

Every figure function takes DataFrames and an output path stem and writes `<stem>.pdf` and
`<stem>.png` atomically, returning both paths. Empty or degenerate input gives a figure that
says "No data" and why, never an exception. Colours come from palettes.py (shared with the
page); energies from an estimating meter are labelled "estimated" on their axis. One module
per figure (or small family), each registered with `registry.figure(name, needs=...)`;
`plot` holds what they draw with, `rows` which rows they show, `render` draws them all
(`render_all`, `run_figures`); the names are declared in `report.figure_names`. Only numpy,
pandas and matplotlib are imported: figures are made from published summaries without
torch. docs/figures.md.
"""

from joulebench.report.figure_names import FIGURE_NAMES
from joulebench.report.figures import plot, rows
from joulebench.report.figures.accuracy import accuracy_vs_energy, unscored_reasons
from joulebench.report.figures.batch import energy_vs_batch_size
from joulebench.report.figures.decisions import (
    best_from,
    energy_optimal_front,
    method_value,
    method_value_table,
)
from joulebench.report.figures.factors import FACTOR_AXES, energy_vs_factors
from joulebench.report.figures.phases import train_vs_inference
from joulebench.report.figures.plot import (
    ENERGY_UNITS,
    SECONDARY_UNITS,
    STYLE,
    energy_label,
    energy_unit,
    no_data,
    plain_number,
    short,
)
from joulebench.report.figures.power import power_limit_sweep
from joulebench.report.figures.registry import REGISTRY, figure
from joulebench.report.figures.render import render_all, run_figures, with_score_flags
from joulebench.report.figures.rows import not_comparable
from joulebench.report.figures.savings import method_savings
from joulebench.report.figures.throughput import throughput_vs_energy
from joulebench.report.figures.trace import choose_trace_config, power_trace
from joulebench.report.palettes import GRADE_COLORS, OKABE_ITO

__all__ = [
    "ENERGY_UNITS",
    "FACTOR_AXES",
    "FIGURE_NAMES",
    "GRADE_COLORS",
    "OKABE_ITO",
    "REGISTRY",
    "SECONDARY_UNITS",
    "STYLE",
    "accuracy_vs_energy",
    "best_from",
    "choose_trace_config",
    "energy_label",
    "energy_optimal_front",
    "energy_unit",
    "energy_vs_batch_size",
    "energy_vs_factors",
    "figure",
    "method_savings",
    "method_value",
    "method_value_table",
    "no_data",
    "not_comparable",
    "plain_number",
    "plot",
    "power_trace",
    "render_all",
    "rows",
    "run_figures",
    "short",
    "throughput_vs_energy",
    "train_vs_inference",
    "power_limit_sweep",
    "unscored_reasons",
    "with_score_flags",
]
