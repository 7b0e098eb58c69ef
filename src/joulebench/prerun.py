"""A study checked whole before any job: what each stage would refuse, and a published summary.

The schema cannot say every constraint (pause_s in order, warm-up min <= max, grade
thresholds decreasing, a method's runtime and precision, ...): `check_settings` runs each
stage's own validator on the config's value, so the workflow refuses at parse time (a dry
run too) exactly what a job would refuse hours later, one line per problem naming the key
and the file that set it. With `from_summary`, `check_published` reads the published summary
(and `figures.trace_table`) once, as the jobs would, and says the baseline of its method
savings where it is not the study's (`study_baseline`); `replot_inputs` names a run's own
summary and trace as the run named them, so its replot reruns nothing. `load_study` is
the study as `joulebench plan`, `devices`, `status` and the workflow see it: read and
schema-checked by `joulebench.study`, then checked here. This module calls into the
stages, so it sits above them (below cli); the stages import it never. The map of the
package: docs/design.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from joulebench.study import ConfigError, check_input_path, read_study, source_of

# A run's summary in its folder (the README's replot reads it), and the power trace its
# figures draw: a copy of one profile job's trace, so a replot finds the same one.
RUN_SUMMARY = "results/summary.parquet"
DRAWN_TRACE = "results/trace.parquet"


def load_study(configfile: str | Path | None = None, root: Path | None = None) -> dict:
    """config.yaml with the study file's keys over it, checked by the schema and by every
    stage's validator, with the schema's defaults."""
    config, sources = read_study(configfile, root)
    check_settings(config, sources)
    return config


def check_settings(config: Mapping, sources: Sequence[tuple[str, Mapping]] = ()) -> None:
    """Raise ConfigError naming each key whose value the stage reading it would refuse: the
    constraints no schema can say (pause_s in order, warm-up min <= max, repeats <= max_repeats,
    grade thresholds decreasing, a method's runtime and precision, ...). The stage's own
    validator runs on the config's value, so the workflow refuses at parse time (a dry run
    too) exactly what a job would refuse hours later."""
    problems = []
    for key, check in _stage_checks():
        try:
            check(config)
        except (ValueError, TypeError) as exc:
            origin = source_of(key.split("."), sources)
            origin = f" (set in {origin})" if origin else ""
            for problem in getattr(exc, "problems", [str(exc)]):
                problems.append(f"config: {key}{origin}: {_without_key(problem, key)}")
    if problems:
        raise ConfigError("\n".join(problems))


def _stage_checks() -> list[tuple[str, Callable[[Mapping], object]]]:
    """(key, its stage's validator applied to the config) for every setting a stage checks."""
    from joulebench.accuracy.datasets import normalize_source
    from joulebench.accuracy.reference import check_source
    from joulebench.analysis.best_configs import CONSTRAINTS, parse_constraints
    from joulebench.analysis.carbon import check_carbon
    from joulebench.analysis.score import check_max_cv, check_scope, parse_grade_thresholds
    from joulebench.core.methods import parse_methods
    from joulebench.core.protocol import ProtocolSettings
    from joulebench.core.train import TrainSpec
    from joulebench.flags import canonical_names

    return [
        ("protocol", lambda c: ProtocolSettings.from_dict(_at(c, "protocol"))),
        ("methods", lambda c: parse_methods(_at(c, "methods", {}))),
        ("train", lambda c: TrainSpec.from_dict(_at(c, "train"))),
        ("dataset", lambda c: normalize_source(_at(c, "dataset"))),
        (
            "reference",
            lambda c: check_source(_at(c, "reference.local_dir"), _at(c, "reference.commit")),
        ),
        (
            "energy_scope",
            lambda c: check_scope(
                _at(c, "energy_scope", "device"), _at(c, "score.energy", "total")
            ),
        ),
        (
            "score.grade_thresholds",
            lambda c: parse_grade_thresholds(_at(c, "score.grade_thresholds")),
        ),
        ("score.max_energy_cv", lambda c: check_max_cv(_at(c, "score.max_energy_cv"))),
        ("score.invalid_flags", lambda c: canonical_names(_at(c, "score.invalid_flags", ()))),
        (
            "decisions",
            lambda c: parse_constraints(
                **{k: v for k, v in _at(c, "decisions", {}).items() if k in CONSTRAINTS}
            ),
        ),
        ("carbon", lambda c: check_carbon(_at(c, "carbon"))),
    ]


def _without_key(message: str, key: str) -> str:
    """A stage's message without the key the line already names ("train: lr must be ...")."""
    for lead in (f"{key}: ", f"{key}."):
        if message.startswith(lead):
            return message[len(lead) :]
    return message


def _at(config: Mapping, key: str, default=None):
    """The config's value at a dotted key (`score.energy`), or `default` where unset."""
    node = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return default if node is None else node


def check_published(config: Mapping, sources: Sequence[tuple[str, Mapping]] = ()) -> list[str]:
    """With `from_summary`: the published summary (and `figures.trace_table`) read and
    checked once, before any job, as the jobs would read them (analysis.summary.read_summary):
    a ConfigError saying every problem, so the console says why, not three jobs' logs.
    Returns what reading noted (columns an older summary lacks, extra ones ignored)."""
    summary = config.get("from_summary")
    if _given_empty(summary, sources):  # a replot without a summary: never a measuring run
        raise ConfigError(
            "from_summary: empty; give a summary's path, or leave the key out to measure"
        )
    if summary is None:
        return []
    from joulebench.analysis.summary import SummaryError, read_summary
    from joulebench.table_io import TableError

    trace = (config.get("figures") or {}).get("trace_table")
    check_input_path("from_summary", summary)
    if trace:
        check_input_path("figures.trace_table", trace)
    problems, said = [], []
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        try:
            published = read_summary(summary)
            if published.empty:
                raise SummaryError(f"{summary} has no rows (a header only): nothing to score")
            said = _baseline_said(config, published)
        except (SummaryError, TableError) as exc:
            problems.append(f"from_summary: {exc}")
        except ConfigError as exc:
            problems.append(str(exc))
        if trace:
            problems += _trace_problems(trace)
    if problems:
        raise ConfigError("\n".join(problems))
    return [f"from_summary: note: {w.message}" for w in notes] + said


def _given_empty(summary, sources: Sequence[tuple[str, Mapping]]) -> bool:
    """Whether `from_summary` was given empty: a blank path, or `--config from_summary=`
    (Snakemake reads an empty value as null, the same as the key left out)."""
    if summary is not None:
        return not str(summary).strip()
    given = dict(sources).get("--config", {})
    return "from_summary" in given and given["from_summary"] is None


def replot_inputs(config: Mapping, folder: Path | None = None) -> tuple[str, str | None]:
    """The summary and power trace a replot (`from_summary`) draws from. Where the summary is
    the run's own in `folder` (the README's replot), they are named as the run named them
    (RUN_SUMMARY, and DRAWN_TRACE where the run drew one): the same figures, and Snakemake
    sees the same inputs, so it reruns nothing. Else the summary as given and
    `figures.trace_table` (or no trace)."""
    folder = Path(folder or Path.cwd())
    summary, trace = str(config["from_summary"]), _at(config, "figures.trace_table")
    if (folder / summary).resolve() != (folder / RUN_SUMMARY).resolve():
        return summary, trace
    if not trace and (folder / DRAWN_TRACE).is_file():
        trace = DRAWN_TRACE
    return RUN_SUMMARY, trace


def study_baseline(config: Mapping) -> str | None:
    """The method savings are computed against: `fits.baseline_method`, else the study's
    first method (a sweep's first value: fp16@1.0); None where the study names none. The
    same for a measured run and a replot of its summary, so a replot draws the same savings."""
    from joulebench.core.methods import expand_methods

    named = _at(config, "fits.baseline_method")
    return named or next(iter(expand_methods(_at(config, "methods", {}))), None)


def _baseline_said(config: Mapping, summary) -> list[str]:
    """A published summary's baseline, never changed silently: a ConfigError where the study
    names one (`fits.baseline_method`) the summary lacks; a note where the study's first
    method is not in it, naming the method its savings are against instead."""
    from joulebench.analysis.fits import pick_baseline

    wanted = study_baseline(config)
    picked = pick_baseline(summary, wanted)
    if wanted is None or picked == wanted:
        return []
    methods = ", ".join(sorted(summary["method"].dropna().unique())) or "none"
    if _at(config, "fits.baseline_method"):
        raise ConfigError(
            f"fits.baseline_method: {wanted!r} is no method of the summary (its methods: {methods})"
        )
    return [
        f"from_summary: note: the summary has no method {wanted!r} (the study's first): "
        f"method savings against {picked!r}; fits.baseline_method picks another ({methods})"
    ]


def _trace_problems(path) -> list[str]:
    """Why `path` cannot be the trace figure's power trace (tables.TRACE), if it cannot."""
    from joulebench.table_io import TableError, read_table
    from joulebench.tables import TRACE_TABLE_COLUMNS

    try:
        trace = read_table(path)
    except TableError as exc:
        return [f"figures.trace_table: {exc}"]
    missing = [c for c in TRACE_TABLE_COLUMNS if c not in trace.columns]
    if missing:
        return [f"figures.trace_table: {path}: not a power trace, it lacks {missing}"]
    return []
