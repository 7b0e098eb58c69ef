"""Which of a study's models are measured, and in what order (issue 42): all, in the config's
order (`order: config`, the default); or in the informative order (analysis.informative), all
of them or, with `budget: {gpu_h: N}`, as many as N hours of the devices buy, the rest
predicted with their intervals (analysis.predict).

Decided when the study is read: the models whose rows exist are kept (a rerun never drops
what was measured), the order is made again from their energies, and the budget counts
what they cost by the plan. A larger budget, later, measures the next ones: Snakemake's
DAG is the same DAG with more jobs. docs/predictions.md#the-order-of-measuring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from joulebench.safe_text import quantity

ORDERS = ("config", "informative")


@dataclass
class Selection:
    """The models to measure, in order (the measured ones first), and what the budget bought."""

    models: list[str]
    measured: list[str] = field(default_factory=list)  # rows exist already
    left: int = 0  # models of the study not measured within the budget: predicted
    model_s: float = 0.0  # one model's planned cost, in device-seconds (all its devices)
    budget_s: float | None = None

    def priority(self, model: str) -> int:
        """Snakemake's priority of a model's jobs: the earlier in the order, the higher."""
        try:
            return len(self.models) - self.models.index(model)
        except ValueError:
            return 0


def budget_s(config: dict) -> float | None:
    hours = (config.get("budget") or {}).get("gpu_h")
    return None if hours is None else float(hours) * 3600.0


def measured_models(results: Path) -> dict[str, float]:
    """model -> the log of its energy per image in the first group its rows measured (the
    rows a profile job wrote so far, results/profile/*/rows/*.parquet; NaN where none ok)."""
    energies: dict[str, float] = {}
    for path in sorted(results.glob("profile/*/rows/*.parquet")):
        try:
            rows = pd.read_parquet(path, columns=["model", "status", "energy_per_image_j"])
        except Exception:  # being written, or damaged: the job will write it again
            continue
        for model, group in rows.groupby("model"):
            ok = group.loc[group["status"] == "ok", "energy_per_image_j"]
            ok = ok[ok > 0]
            energies[model] = math.log(float(ok.iloc[0])) if len(ok) else math.nan
    return energies


def select(
    config: dict, models: list[str], pools: dict, results: str | Path = "results", costs_s=None
) -> Selection:
    """The study's Selection (see the module): everything in the config's order unless the
    study asks for the informative order or a budget. `costs_s(config, models, pools)`: (one
    model's planned cost, the study's one-offs) in device-seconds (joulebench.plan.model_costs_s,
    handed in: the plan reads this module for --budget)."""
    budget = budget_s(config)
    if config.get("order", "config") == "config" and budget is None:
        return Selection(list(models))
    measured = measured_models(Path(results))
    done = [m for m in models if m in measured]
    order = _order(config, models, measured, Path(results))
    model_s, once_s = costs_s(config, models, pools)
    if budget is None:
        return Selection(done + order, done, 0, model_s)
    room = max(budget - once_s - len(done) * model_s, 0.0)
    take = int(room // model_s) if model_s > 0 else len(order)
    return Selection(done + order[:take], done, len(order) - min(take, len(order)), model_s, budget)


def _order(config: dict, models: list[str], measured: dict, results: Path) -> list[str]:
    """The models not measured yet, in the study's order."""
    left = [m for m in models if m not in measured]
    if config.get("order", "config") == "config":
        return left
    from joulebench.accuracy.reference import load_shipped
    from joulebench.analysis.informative import features, informative_order

    catalog_path = results / "catalog.parquet"
    catalog = pd.read_parquet(catalog_path) if catalog_path.is_file() else None
    feats = features(models, load_shipped().frames["imagenet"], catalog)
    known = {m: e for m, e in measured.items() if m in set(models) and math.isfinite(e)}
    ranked = informative_order(feats, known)
    return [m for m in ranked if m in set(left)] + [m for m in left if m not in set(ranked)]


# Front recall of the informative order on timm's published tables (bench/bench_order.py,
# docs/benchmarks.md: time per image standing in for energy; the worse of the GPU and CPU
# tables): share of the models measured -> share of the front's members measured.
FRONT_RECALL = ((0.10, 0.576), (0.25, 0.970), (0.40, 1.0))


def front_recall(share: float) -> float:
    """The front recall the benches saw at a share measured (interpolated; 0 at 0)."""
    points = ((0.0, 0.0), *FRONT_RECALL, (1.0, 1.0))
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if share <= x1:
            return y0 + (y1 - y0) * (share - x0) / (x1 - x0)
    return 1.0


# The median 90 % interval factor (x/÷) of a prediction on timm's tables (bench/bench_predict.py,
# docs/benchmarks.md: each architecture a model, the worse of the GPU and CPU tables), by the
# share measured; below the first share, the first (at least that wide).
INTERVAL_FACTOR = ((0.10, 1.54), (0.20, 1.44), (0.40, 1.38))


def interval_factor(share: float) -> float:
    """The median interval factor the bench saw at a share measured (interpolated)."""
    points = INTERVAL_FACTOR
    if share <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if share <= x1:
            return y0 + (y1 - y0) * (share - x0) / (x1 - x0)
    return points[-1][1]


def budget_lines(chosen: Selection, config: dict, n_models: int) -> list[str]:
    """What a budget buys (`joulebench plan --budget`): models measured and predicted, and,
    in the informative order, the share of the front the benches say it measures; the
    predictions' expected interval width."""
    hours = (chosen.budget_s or 0.0) / 3600.0
    measured = len(chosen.models)
    share = measured / n_models if n_models else 1.0
    lines = [
        f"budget: {hours:g} device-hours buy {measured:,} of {quantity(n_models, 'model')} "
        f"({share:.0%}; {chosen.model_s / 60:.1f} device-min a model on a quiet host, one-offs "
        f"counted), "
        f"in the {config.get('order', 'config')} order; {chosen.left:,} predicted with "
        "their intervals (docs/predictions.md)"
    ]
    if config.get("order") == "informative" and share < 1:
        lines.append(
            f"  the front: about {front_recall(share):.0%} of its members measured "
            f"(an estimate: the informative order on timm's tables at {share:.0%} measured, "
            "docs/benchmarks.md)"
        )
    if chosen.left:
        first = INTERVAL_FACTOR[0][0]
        at = max(share, first)  # the bench measured no smaller share: at least its width
        lines.append(
            f"  the predictions: 90 % intervals of {'at least' if share < first else 'about'} "
            f"x/÷{interval_factor(share):.2f} (an estimate: the median on timm's tables at "
            f"{at:.0%} measured; each run checks its own, docs/predictions.md)"
        )
    return lines
