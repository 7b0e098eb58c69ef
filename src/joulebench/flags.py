"""The flags a row can carry, declared once, and the helpers that read and write them.

A row's `flags` column is text: the kebab-case names of the conditions its measurement met,
joined by `;`. Each name is a `Flag` of `FLAGS`: what it means, whether it keeps a row off
the score's front by default (`invalidates`: the default `score.invalid_flags`) and the
functions that set it, so grep finds where a flag comes from; docs/columns.md#flags and the
page (`page_meta`) are made from it. Every module reads and writes flags through the helpers
here (`join_flags`, `split_flags`, `has_flag`, `add_flag`, `first_flag`), never with its own
`;`. Older spellings still read (`canonical_flags`, `canonical_names`). Adding a flag: a
constant and one `Flag` entry below. This module imports nothing of joulebench: every layer
may use it.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

SEPARATOR = ";"

# The meters (core/meters)
FLAG_OTHER_PROCESS = "other-process"
FLAG_PROCESS_CHECK_FAILED = "process-check-failed"
FLAG_MIG = "mig"
FLAG_PARTITION = "partition"
FLAG_OTHER_LOAD = "other-load"
FLAG_HOST_SHARED = "host-shared"
FLAG_ESTIMATE = "estimate"
# The protocol (core.protocol) and the profile job (jobs.profile, core.emulation)
FLAG_WARMUP_NOT_STEADY = "warmup-not-steady"
FLAG_CI_TARGET_NOT_MET = "ci-target-not-met"
FLAG_TRAIN_LOSS_NOT_FINITE = "train-loss-not-finite"
FLAG_EMULATED = "emulated"
FLAG_SIMULATED = "simulated"
FLAG_THERMAL_DRIFT = "thermal-drift"
FLAG_SPREAD_ABOVE_SENSOR = "spread-above-sensor"
FLAG_HOST_BOUND = "host-bound"
# The Python API (joulebench.api): a Monitor's window, never a row
FLAG_SHORT_WINDOW = "short-window"
# The summary and the score (analysis)
FLAG_CI_CLIPPED = "ci-clipped"
FLAG_HIGH_SPREAD = "high-spread"
# A merge of runs (analysis.merge)
FLAG_RUNS_DISAGREE = "runs-disagree"

_NVML = "joulebench.core.meters.nvml.NvmlMeter._flags"
_AMDSMI = "joulebench.core.meters.amdsmi.AmdSmiMeter._flags"


@dataclass(frozen=True)
class Flag:
    """One flag: its name, what it means, whether it invalidates a row by default, and the
    functions (dotted paths) that set it."""

    name: str
    meaning: str
    invalidates: bool  # in the default score.invalid_flags: kept off the front, no grade
    producer: tuple[str, ...]
    old_names: tuple[str, ...] = ()  # earlier spellings, still read
    advice: str = ""  # what to do about it, where a number flagged so is not to be trusted

    def __post_init__(self):
        if self.name != self.name.strip().lower() or not self.name or SEPARATOR in self.name:
            raise ValueError(f"flag {self.name!r}: a lower-case name without {SEPARATOR!r}")
        if not self.producer:
            raise ValueError(f"flag {self.name}: no producer")
        if self.invalidates and not self.advice:  # a warning says what to do about it
            raise ValueError(f"flag {self.name}: invalidates a row but gives no advice")


FLAGS: dict[str, Flag] = {
    f.name: f
    for f in (
        Flag(
            FLAG_OTHER_PROCESS,
            "another process used the GPU in the window: its work is in the energy",
            True,
            (_NVML, _AMDSMI),
            advice="measure again with the GPU to itself (nvidia-smi lists its processes)",
        ),
        Flag(
            FLAG_PROCESS_CHECK_FAILED,
            "the GPU's process list could not be read: other-process was not checked",
            False,
            (_NVML, _AMDSMI),
        ),
        Flag(
            FLAG_MIG,
            "MIG mode: power and energy are the whole GPU's, every slice's work included",
            True,
            (_NVML,),
            advice="measure on a GPU with MIG off",
        ),
        Flag(
            FLAG_PARTITION,
            "an AMD GPU split into partitions: the counter is the whole device's",
            False,
            (_AMDSMI,),
        ),
        Flag(
            FLAG_OTHER_LOAD,
            "other processes kept the measured CPU busy in the window",
            True,
            ("joulebench.core.meters.contention.ContentionGuard.end",),
            advice="measure again when no other process is busy on this host (top shows them)",
        ),
        Flag(
            FLAG_HOST_SHARED,
            "measurements overlapped: the host's CPU and DRAM energy is shared by CPU time",
            False,
            ("joulebench.core.meters.node.NodeMeter.end",),
        ),
        Flag(
            FLAG_ESTIMATE,
            "the energy is modelled from utilisation and TDP, not read from a counter",
            False,
            ("joulebench.core.meters.estimate.EstimateMeter.end",),
        ),
        Flag(
            FLAG_WARMUP_NOT_STEADY,
            "throughput was not steady when warm-up gave up (warmup_max_s)",
            False,
            ("joulebench.core.protocol.measure",),
            ("warmup_not_steady",),
        ),
        Flag(
            FLAG_CI_TARGET_NOT_MET,
            "the energy's 95% CI was still wider than ci_target at max_repeats",
            False,
            ("joulebench.core.protocol.measure",),
            ("ci_target_not_met",),
        ),
        Flag(
            FLAG_THERMAL_DRIFT,
            "the die's temperature moved more than 3 C within a window (leakage changed the "
            "power while it ran)",
            False,
            ("joulebench.core.protocol._drift_flags",),
        ),
        Flag(
            FLAG_SPREAD_ABOVE_SENSOR,
            "the repeats' CV is far above what the power sensor's sampling explains for "
            "windows this long: the CI describes an unsteady load or state, not the sensor",
            False,
            ("joulebench.core.protocol.spread_flags",),
        ),
        Flag(
            FLAG_HOST_BOUND,
            "the GPU was busy less than half of each step (gpu_busy_fraction): the step waits "
            "on the host's kernel launches, so the row measures launch overhead and the host "
            "as much as the model (a real cost; the fits can leave such rows out)",
            False,
            ("joulebench.core.host_bound.host_bound_fields",),
        ),
        Flag(
            FLAG_TRAIN_LOSS_NOT_FINITE,
            "the training loss became NaN or infinite (e.g. fp16 without a scaler)",
            False,
            ("joulebench.jobs.profile.config_row",),
            ("train_loss_not_finite",),
        ),
        Flag(
            FLAG_EMULATED,
            "a precision the device only emulates, measured because it was forced",
            False,
            ("joulebench.core.emulation.verdict",),
        ),
        Flag(
            FLAG_SIMULATED,
            "a simulated GPU: the energy is the sensor simulator's, never scored",
            True,
            (
                "joulebench.jobs.profile.config_row",
                "joulebench.analysis.score.row_flags",
                "joulebench.api.run.callable_row",
            ),
            advice="for tests and benches only: measure on a real device",
        ),
        Flag(
            FLAG_SHORT_WINDOW,
            "a Monitor window shorter than its meter reads faithfully (a GPU sensor's "
            "min_window_refreshes refreshes, 100 updates of a counter): its energy is a guess",
            False,
            ("joulebench.api.monitor.window_flags",),
        ),
        Flag(
            FLAG_CI_CLIPPED,
            "a 95% CI lower bound below 0 J was raised to 0",
            False,
            ("joulebench.analysis.summary.clip_ci_low",),
        ),
        Flag(
            FLAG_RUNS_DISAGREE,
            "a merge's later run measured this configuration with the same setup, and the "
            "two energies differ by more than their CIs together allow (comparisons.csv)",
            False,
            ("joulebench.analysis.merge.join",),
        ),
        Flag(
            FLAG_HIGH_SPREAD,
            "the energy varied more than max_energy_cv (CV) between repeats",
            True,
            ("joulebench.analysis.score.row_flags",),
            advice="measure again with more or longer windows, on a quiet host",
        ),
    )
}

# The default of score.invalid_flags (which rows count, for the score, fits and decisions
# alike): the schema's too.
INVALIDATING: tuple[str, ...] = tuple(f.name for f in FLAGS.values() if f.invalidates)
# Earlier spellings -> today's names.
OLD_NAMES: dict[str, str] = {old: f.name for f in FLAGS.values() for old in f.old_names}


# --- one row's flags: text <-> names ------------------------------------------------------


def split_flags(text) -> list[str]:
    """The names in a flags text, in order, each once; [] for empty, None or NA."""
    if text is None or text is pd.NA or (isinstance(text, float) and np.isnan(text)):
        return []
    return list(dict.fromkeys(f.strip() for f in str(text).split(SEPARATOR) if f.strip()))


def join_flags(*parts: str | Iterable[str] | None) -> str:
    """One flags text from flags texts and lists of names, each name once, in order."""
    names: list[str] = []
    for part in parts:
        if part is None or isinstance(part, str) or not isinstance(part, Iterable):
            names += split_flags(part)
        else:
            names += [n for p in part for n in split_flags(p)]
    return SEPARATOR.join(dict.fromkeys(names))


def has_flag(text, name: str) -> bool:
    """True where the flags text holds `name` (a whole name, not a part of one)."""
    return name in split_flags(text)


# --- a column of flags (pandas), worked out once per distinct text -------------------------


def _per_text(flags: pd.Series, fn, dtype=object) -> pd.Series:
    """fn of each row's flags text, called once per distinct text (a study has a handful)."""
    codes, texts = pd.factorize(flags.astype("string").fillna(""))
    values = np.asarray([fn(t) for t in texts] + [fn("")], dtype=dtype)
    return pd.Series(values[codes], index=flags.index)


def add_flag(flags: pd.Series, where, flag: str) -> pd.Series:
    """`flags` with `flag` added on the rows `where` is true, never twice."""
    where = pd.Series(where, index=flags.index).fillna(False).astype(bool)
    old = flags.astype("string").fillna("")
    added = _per_text(old, lambda t: t if has_flag(t, flag) else join_flags(t, [flag]))
    return old.where(~where, added).astype("string")


def first_flag(flags: pd.Series, names: Sequence[str]) -> pd.Series:
    """Each row's first flag that is one of `names`, '' for none."""
    wanted = set(names)
    return _per_text(flags, lambda t: next((f for f in split_flags(t) if f in wanted), ""))


def canonical_flags(flags: pd.Series) -> pd.Series:
    """A flags column with earlier spellings (OLD_NAMES) read as today's names; a text
    without one is left as it is."""

    def today(text: str) -> str:
        names = split_flags(text)
        return (
            join_flags([OLD_NAMES.get(f, f) for f in names])
            if set(names) & OLD_NAMES.keys()
            else text
        )

    return _per_text(flags, today).astype("string").where(flags.notna(), pd.NA)


def canonical_names(names: Sequence[str], what: str = "invalid_flags") -> tuple[str, ...]:
    """A config's list of flags with earlier spellings mapped to today's, with a note; a
    ValueError for what is no list of known flags (a string would be read letter by letter)."""
    if isinstance(names, str):
        raise ValueError(f"{what}: must be a list of flags, e.g. [{names!r}], not a text")
    if not isinstance(names, Sequence):
        raise ValueError(f"{what}: must be a list of flags, not {names!r}")
    unknown = [
        n for n in names if not isinstance(n, str) or (n not in FLAGS and n not in OLD_NAMES)
    ]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), list(FLAGS), n=1)
        hint = f" (closest: {close[0]!r})" if close else ""
        raise ValueError(
            f"{what}: unknown flag {unknown[0]!r}{hint}; the flags: {', '.join(FLAGS)}"
        )
    old = [n for n in names if n in OLD_NAMES]
    if old:
        renamed = ", ".join(f"{n} -> {OLD_NAMES[n]}" for n in old)
        warnings.warn(f"{what}: old flag names read as today's ({renamed})", stacklevel=2)
    return tuple(dict.fromkeys(OLD_NAMES.get(n, n) for n in names))


# --- the registry, shown ---------------------------------------------------------------


def flag_warnings(flags: Iterable) -> list[str]:
    """One line per invalidating flag among rows' flags texts: the flag, how many rows, what
    it means, that their numbers are not to be trusted, and what to do (`advice`)."""
    counts: dict[str, int] = {}
    for text in flags:
        for name in split_flags(text):
            if name in FLAGS and FLAGS[name].invalidates:
                counts[name] = counts.get(name, 0) + 1
    lines = []
    for name, n in counts.items():
        rows = "1 row" if n == 1 else f"{n} rows"
        flag = FLAGS[name]
        lines.append(
            f"WARNING: {rows} flagged {name} ({flag.meaning}): not to be trusted; {flag.advice}"
        )
    return lines


def flags_markdown() -> list[str]:
    """docs/columns.md's Flags section (tables.columns_markdown)."""
    lines = [
        "## Flags",
        "",
        f"The `flags` column holds these names, joined by `{SEPARATOR}`. *Invalidating*: in",
        "the default `score.invalid_flags`, so the row keeps its numbers but is kept off the",
        "Pareto front and gets no grade (`simulated` always is). Older spellings are still",
        "read: " + ", ".join(f"`{o}` as `{n}`" for o, n in OLD_NAMES.items()) + ".",
        "",
        "| flag | meaning | invalidating | producer |",
        "|---|---|---|---|",
    ]
    for f in FLAGS.values():
        producer = ", ".join(f"`{p.removeprefix('joulebench.')}`" for p in f.producer)
        yes, meaning = ("yes" if f.invalidates else "no"), f.meaning.replace("|", "\\|")
        lines.append(f"| `{f.name}` | {meaning} | {yes} | {producer} |")
    return [*lines, ""]


def page_meta() -> dict:
    """What the web page knows of flags (its embedded meta): the separator, each flag's
    meaning and whether it invalidates, and the flags it reads by role (ci-clipped,
    host-bound)."""
    return {
        "separator": SEPARATOR,
        "known": [
            {"name": f.name, "meaning": f.meaning, "invalidates": f.invalidates}
            for f in FLAGS.values()
        ],
        "ci_clipped": FLAG_CI_CLIPPED,
        "host_bound": FLAG_HOST_BOUND,
    }
