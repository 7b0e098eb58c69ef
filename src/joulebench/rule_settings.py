"""What each rule hands its command as `--settings`: exactly the keyword arguments of the
function the command calls, built from the config.

`COMMANDS` names, per command, that function and the keywords its own options fill; the rest
of its arguments with a default are the command's settings (`keywords`). The workflow builds
them here (common.smk's `get_<rule>_settings`, `build`) and the command reads them against
the same function (cli: `study.settings_for`, an unknown key is an error), so no function
takes a key it does not use and no rule hands one that is dropped. Which keys a rule hands
does not depend on the study (the schema fixes each section's keys): tests/test_config.py
checks every command's keys, and that each default of its function is the schema's.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable, Mapping

# command -> ("module:function" its --settings are the keyword arguments of, the keywords the
# command itself fills: from the job, not the config, as Snakemake's {threads} and a log).
# run_score, run_reference and run_accuracy pass theirs on to these functions. Every rule that
# hands its command a config setting hands it here; the profile job alone takes a --spec.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "catalog": ("joulebench.jobs.catalog_job:supervised_catalog", ("threads", "log")),
    "idle": ("joulebench.jobs.idle:run_idle", ()),
    "prepare": ("joulebench.accuracy.shards:prepare", ("progress", "shard_size")),
    "accuracy": ("joulebench.accuracy.measured:measure_models", ("allow_download", "log")),
    "reference": ("joulebench.accuracy.reference:load_tables", ()),
    "score": ("joulebench.analysis.score:score_summary", ()),
    "fits": ("joulebench.analysis.fits:run_fits", ()),
    "best-configs": ("joulebench.analysis.best_configs:run_best_configs", ()),
    "figures": (
        "joulebench.report.figures:run_figures",
        ("trace_path", "best_configs_path", "predicted_path"),
    ),
    "webapp": ("joulebench.report.webapp:run_webapp", ("predicted_path",)),
}

# Which rows count: the score section's, read by the score, the fits and the decisions
# (best configurations) alike, so editing one never leaves another behind.
SCORE_RULES = ("energy", "invalid_flags", "max_energy_cv")


def function(command: str) -> Callable:
    """The stage function whose keyword arguments `command`'s settings are."""
    module, _, name = COMMANDS[command][0].partition(":")
    return getattr(importlib.import_module(module), name)


def keywords(command: str) -> list[str]:
    """The keys of `command`'s settings: its function's arguments with a default, less those
    the command's own options fill."""
    options = COMMANDS[command][1]
    params = inspect.signature(function(command)).parameters.values()
    return [p.name for p in params if p.default is not p.empty and p.name not in options]


def build(command: str, config: Mapping) -> dict:
    """The settings a rule hands `command`, from the config (with the schema's defaults)."""
    return _BUILDERS[command](config)


def _catalog(config: Mapping) -> dict:
    """How long a model's build or count may make no progress (models_per_job sizes the parts:
    the workflow's business, not the command's)."""
    return {"timeout_s": config["catalog"]["timeout_s"]}


def _idle(config: Mapping) -> dict:
    """The baseline's length, on the meter the profile reads (profile.meter and the estimate's
    tdp_w): dynamic energy subtracts an idle read like the windows were."""
    profile = config["profile"]
    return {
        "duration_s": config["idle"]["duration_s"],
        "meter": profile["meter"],
        "tdp_w": profile["estimate"]["tdp_w"],
    }


def _prepare(config: Mapping) -> dict:
    """The processes that decode a dataset (the rest of the section is its --source)."""
    return {"workers": config["dataset"]["workers"]}


def _accuracy(config: Mapping) -> dict:
    """The accuracy section: local weights, batch size and device of measured accuracy."""
    return dict(config["accuracy"])


def _reference(config: Mapping) -> dict:
    return dict(config["reference"])


def _score(config: Mapping) -> dict:
    """The score section with the headline energy (energy_scope) and the carbon figures."""
    return {**config["score"], "energy_scope": config["energy_scope"], "carbon": config["carbon"]}


def rows_that_count(config: Mapping) -> dict:
    """The score section's rules of which rows count (SCORE_RULES)."""
    return {key: config["score"][key] for key in SCORE_RULES}


def _fits(config: Mapping) -> dict:
    """The baseline of method savings defaults to the study's first method, with from_summary
    too (prerun.study_baseline): a replot in a run's folder draws the run's savings, and
    hands the same settings, so Snakemake reruns nothing. Which rows count, and the headline
    energy fitted: the score's."""
    from joulebench.prerun import study_baseline

    return {
        **config["fits"],
        **rows_that_count(config),
        "baseline_method": study_baseline(config),
        "energy_scope": config["energy_scope"],
    }


def _best_configs(config: Mapping) -> dict:
    """The constraints (decisions:) with the score's rules of which rows count, and its
    headline energy."""
    return {
        **config["decisions"],
        **rows_that_count(config),
        "energy_scope": config["energy_scope"],
    }


def _figures(config: Mapping) -> dict:
    """The figures section; its trace_table is an input of the rule, handed as --trace."""
    return {k: v for k, v in config["figures"].items() if k != "trace_table"}


def _webapp(config: Mapping) -> dict:
    """The page prints the grade thresholds (the rest of the score it reads from the scores)
    and says how the numbers were measured: with the study's protocol section, also in a
    replot of the run's own summary (the same page, nothing reruns); not known for a summary
    from elsewhere (None)."""
    from joulebench.prerun import RUN_SUMMARY, replot_inputs

    elsewhere = config.get("from_summary") and replot_inputs(config)[0] != RUN_SUMMARY
    protocol = None if elsewhere else dict(config["protocol"])
    return {"grade_thresholds": config["score"]["grade_thresholds"], "protocol": protocol}


_BUILDERS: dict[str, Callable[[Mapping], dict]] = {
    "catalog": _catalog,
    "idle": _idle,
    "prepare": _prepare,
    "accuracy": _accuracy,
    "reference": _reference,
    "score": _score,
    "fits": _fits,
    "best-configs": _best_configs,
    "figures": _figures,
    "webapp": _webapp,
}


def settings_json(command: str, config: Mapping) -> str:
    """`build` as the rule's `--settings` JSON (keys sorted: the same settings, the same text,
    so Snakemake reruns a job only when one changes)."""
    return json.dumps(build(command, config), sort_keys=True)


# --- a setting's JSON value against its function's annotation -------------------------------

# What each annotation word accepts from JSON, and how it reads to a person (a bool is never
# a number: JSON's true is not 1).
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "str": (lambda v: isinstance(v, str), "a text"),
    "Path": (lambda v: isinstance(v, str), "a path"),
    "float": (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "None": (lambda v: v is None, "null"),
}
_LISTS = ("Sequence", "list", "tuple")
_OBJECTS = ("Mapping", "dict")


def _split(annotation: str, sep: str) -> list[str]:
    """`annotation` split at `sep` outside brackets ("Mapping[str, float] | None")."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(annotation):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            parts.append(annotation[start:i])
            start = i + 1
    return [p.strip() for p in [*parts, annotation[start:]]]


def _accepts(annotation: str, value) -> bool | None:
    """Whether a JSON value fits a (string) annotation; None where the annotation says
    nothing JSON can check (the stage's own validator decides)."""
    verdicts = []
    for alt in _split(annotation, "|"):
        head, _, inner = alt.partition("[")
        inner = inner[:-1]
        if head in _LISTS:
            ok = isinstance(value, list) and (
                not inner or all(_accepts(inner, v) is not False for v in value)
            )
        elif head in _OBJECTS:
            ok = isinstance(value, dict) and (
                not inner
                or all(_accepts(_split(inner, ",")[-1], v) is not False for v in value.values())
            )
        elif head in _KINDS:
            ok = _KINDS[head][0](value)
        else:
            return None
        verdicts.append(ok)
    return any(verdicts)


def _words(annotation: str) -> str:
    """An annotation as a person reads it: "a list of texts or null"."""
    out = []
    for alt in _split(annotation, "|"):
        head, _, inner = alt.partition("[")
        if head in _LISTS:
            item = _words(inner[:-1]).removeprefix("a ") if inner else "values"
            out.append(f"a list of {item}s" if inner else "a list")
        elif head in _OBJECTS:
            out.append("an object {...}")
        else:
            out.append(_KINDS.get(head, (None, head))[1])
    return " or ".join(dict.fromkeys(out))


def type_problem(command: str, key: str, value) -> str:
    """Why `value` is not of the type `command`'s function takes for `key` ('' if it is):
    a `--settings` value is checked against the signature it is handed to."""
    annotation = inspect.signature(function(command)).parameters[key].annotation
    if annotation is inspect.Parameter.empty:
        return ""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    if _accepts(text, value) is not False:
        return ""
    shown = json.dumps(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"must be {_words(text)}, got {shown}"
