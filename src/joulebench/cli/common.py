"""What every command shares: printing for a person, range-checked numbers, JSON options and
settings, and the options several commands take, each declared once here."""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
import warnings
from collections.abc import Callable

from joulebench.safe_text import printable


def say(text, *, file=None, **kwargs) -> None:
    """Print for a person at a terminal: names from data (a published summary's) may hold
    escape sequences, so every control, bidi or invisible character is shown as its escape
    (safe_text.printable); line breaks stay. Every output of a command goes through here."""
    print(printable(text, newlines=True), file=file or sys.stdout, **kwargs)


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """warnings.showwarning through printable (a warning may quote a summary's column names)."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    say(text, file=file or sys.stderr, end="")


def number(kind: type = float, *, minimum=None, above=None, maximum=None) -> Callable[[str], float]:
    """An argparse `type=` for a finite number of `kind` in range, named as the schema names
    ranges (minimum, exclusive minimum `above`, maximum): the one way every numeric option
    is range-checked on the way in, so a bad value is a one-line usage error."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            word = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {word}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be > {above}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return value

    return parse


COUNT = number(int, minimum=1)  # threads, repeats, workers, GPUs, rows
_UNITS_H = {"h": 1.0, "m": 1 / 60, "min": 1 / 60, "s": 1 / 3600, "d": 24.0}


def hours_type(text: str) -> float:
    """A duration in hours: `8h`, `90m`, `3600s`, `2d`, or a bare number of hours (> 0)."""
    import re

    found = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(h|min|m|s|d)?\s*", text)
    if not found:
        raise argparse.ArgumentTypeError(f"must be a duration such as 8h or 90m, got {text!r}")
    hours = number(above=0, maximum=1e6)(found[1]) * _UNITS_H[found[2] or "h"]
    return hours


def batch_size_type() -> Callable[[str], float]:
    """A batch size: a whole number in [1, tables.MAX_BATCH_SIZE]."""
    from joulebench.tables import MAX_BATCH_SIZE

    return number(int, minimum=1, maximum=MAX_BATCH_SIZE)


POSITIVE = number(above=0)  # watts, seconds, ms, images per second


def json_object(option: str, text: str) -> dict:
    """A JSON-object option (`--settings`, `--spec`, ...); ConfigError, one line, if it is not."""
    from joulebench.study import ConfigError

    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_key_twice)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{option}: not valid JSON ({err.msg} at character {err.pos})") from None
    except _Refused as err:
        raise ConfigError(f"{option}: {err}") from None
    except RecursionError:
        raise ConfigError(
            f"{option}: nested too deep (a setting is a few levels at most)"
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option}: must be a JSON object {{...}}, not {type(value).__name__}")
    return value


class _Refused(ValueError):
    """JSON that Python reads but a setting never is (NaN, a key given twice)."""


def _no_constant(name: str):
    raise _Refused(f"{name} is not a number a setting can be; give a finite number")


def _no_key_twice(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise _Refused(f"key {twice[:60]!r} is given twice")
    return dict(pairs)


def command_settings(command: str, text: str) -> dict:
    """`--settings` JSON as the keyword arguments of the function `command` calls, as the
    workflow builds them (rule_settings); a key it does not take is an error, and a value the
    stage's own validator refuses (`setting_checks`) one line, before the stage runs."""
    from joulebench.rule_settings import keywords, type_problem
    from joulebench.study import ConfigError, settings_for

    settings = settings_for(command, json_object("--settings", text), keywords(command))
    for key, value in settings.items():
        problem = type_problem(command, key, value)
        if problem:
            raise ConfigError(f"--settings: {key}: {problem}")
    for key, check in setting_checks().items():
        if key in settings:
            try:
                check(settings[key])
            except (ValueError, TypeError) as exc:
                message = str(exc).removeprefix(f"{key}: ")
                raise ConfigError(f"--settings: {key}: {message}") from None
    return settings


def setting_checks() -> dict[str, Callable]:
    """setting -> the validator its stage applies (as prerun applies it to the config); a
    number's range as its option's would be (`number`), a meter or device by the registry."""
    from joulebench.accuracy.reference import check_commit
    from joulebench.analysis.best_configs import CONSTRAINTS
    from joulebench.analysis.carbon import check_carbon
    from joulebench.analysis.score import (
        check_energy,
        check_max_cv,
        check_scope,
        parse_grade_thresholds,
    )
    from joulebench.flags import canonical_names
    from joulebench.tables import MAX_BATCH_SIZE

    return {
        "grade_thresholds": parse_grade_thresholds,
        "max_energy_cv": check_max_cv,
        "energy_scope": check_scope,
        "energy": check_energy,
        "invalid_flags": canonical_names,
        "carbon": check_carbon,
        "protocol": _check_protocol,
        "commit": lambda commit: commit is None or check_commit(commit),
        "min_models": value_check(int, minimum=2),
        **{kind: _constraint_check(kind) for kind in CONSTRAINTS},
        "duration_s": value_check(above=0),
        "timeout_s": value_check(above=0, optional=True),
        "tdp_w": value_check(above=0, optional=True),
        "workers": value_check(int, minimum=1),
        "batch_size": value_check(int, minimum=1, maximum=MAX_BATCH_SIZE),
        "meter": _check_meter,
        "device": _check_torch_device,
    }


def value_check(kind: type = float, *, optional: bool = False, **bounds) -> Callable:
    """A `--settings` number's check: a JSON number of `kind` in the range `number` would give
    its option (None too where `optional`), never a string or a bool read as one."""
    parse = number(kind, **bounds)

    def check(value) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, got {value!r}")
        try:
            parse(repr(value))
        except argparse.ArgumentTypeError as err:
            raise ValueError(str(err)) from None

    return check


def _check_protocol(value) -> None:
    """The study's protocol section as the page reads it (a preset and its keys), or null."""
    from joulebench.core.protocol import ProtocolSettings

    if value is not None:
        ProtocolSettings.from_dict(value)


def _constraint_check(kind: str) -> Callable:
    """A decision constraint's values as the decisions read them (numbers > 0)."""
    from joulebench.analysis.best_configs import parse_constraints

    return lambda values: parse_constraints(**{kind: values})


def _check_meter(value) -> None:
    """A meter of the registry, or None (the best readable)."""
    from joulebench.core.backends import meter_names

    if value is not None and value not in meter_names():
        raise ValueError(f"must be one of {', '.join(meter_names())} or null, got {value!r}")


def _check_torch_device(value) -> None:
    """A torch device this machine's registry serves (no simulated GPU: a real model runs)."""
    import re

    from joulebench.core.backends import device_pattern, spellings

    if not isinstance(value, str) or not re.fullmatch(device_pattern(simulated=False), value):
        raise ValueError(f"must be {spellings(simulated=False)}, got {value!r}")


def default(func, name: str):
    """The default of `func`'s parameter `name`: one place in the code holds it."""
    return inspect.signature(func).parameters[name].default


# --- options several commands take ---------------------------------------------------------


def add_device(p, *, default_in_help: bool = True) -> None:
    """`--device`: a device string of the registry (default cpu)."""
    from joulebench.core.backends import spellings

    shown = f"{spellings()} (default cpu)" if default_in_help else spellings()
    p.add_argument("--device", default="cpu", help=shown)


def add_meter(p, *, meter_help: str | None = None, tdp_help: str | None = None) -> None:
    """`--meter` (one of the registry's meters) and `--tdp-w` (the estimate's CPU power)."""
    from joulebench.core.backends import meter_names

    p.add_argument("--meter", choices=meter_names(), help=meter_help)
    p.add_argument("--tdp-w", type=POSITIVE, help=tdp_help)


def add_protocol(p) -> None:
    """The protocol's preset, and its repeats and their least length over it."""
    from joulebench.core.protocol import DEFAULT_PRESET, PRESETS

    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=DEFAULT_PRESET,
        help="protocol preset (docs/protocol.md#presets; default %(default)s): smoke takes "
        "seconds, its numbers not for citing",
    )
    p.add_argument("--repeats", type=COUNT, help="windows (default: the preset's)")
    p.add_argument(
        "--min-repeat-s", type=number(minimum=0), help="shortest window (default: the preset's)"
    )


def add_gpu_uuid(p) -> None:
    """`--gpu-uuid`: the workflow pins a job to one GPU; `--pool`: to a free GPU of a pool."""
    p.add_argument("--gpu-uuid", help="pin to this GPU (CUDA_VISIBLE_DEVICES); it is cuda:0")
    p.add_argument(
        "--pool",
        help='JSON {"gpus": [{device, uuid, index, serial, pin}, ...]}: lease a free one, '
        "hold it for the whole job, pin to it",
    )


def add_settings(p, what: str) -> None:
    """`--settings`: JSON of the stage function's keyword arguments (rule_settings)."""
    p.add_argument("--settings", default="{}", help=f"JSON: {what}")


def add_summary_input(p) -> None:
    """`--summary` of a command that reads a study's results (ours or published), or
    `--from-release` (a release folder: its version and checksums checked)."""
    p.add_argument(
        "--summary",
        default="results/summary.parquet",
        help="ours or published (parquet, CSV or a release folder)",
    )
    p.add_argument(
        "--from-release",
        dest="summary",
        metavar="DIR",
        help="a release folder (joulebench publish): read after its checksums are checked",
    )
