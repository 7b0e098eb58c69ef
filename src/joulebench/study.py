"""A study's configuration: the default config.yaml, a study file over it, checked by the schema.

The workflow (Snakefile) and the commands that look at a study before it runs (`joulebench
plan`, `joulebench devices`) read it the same way (`read_study`): a key the study file sets
replaces the default's whole. A config the schema refuses gives one short message per
problem, naming the key, where it is, which file set it and, for an unknown key, the closest
valid one; never the schema itself. What each stage's own validator would refuse, and a
published summary, are checked before any job above the stages (`joulebench.prerun`), in the
same words.

The schema (joulebench.config_schema) is where a default is decided. Stage functions take
their settings as keyword arguments (`settings_for`; rule_settings builds them from the
config), with the schema's defaults; the few no dataclass or function holds are below. The
map of the package: docs/design.md.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import shlex
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import yaml

from joulebench.config_schema import SCHEMA_PATH, default, load_schema

# Defaults of config keys no dataclass holds, the schema's (config_schema).
IDLE_DURATION_S = default("idle.duration_s")
IDLE_PRE_S = default("profile.idle_pre_s")
MAX_MESSAGE_CHARS = 300
# Config keys that were and are no more, each with where its setting went: a study that still
# sets one is told so (check_config), not sent to the closest valid key. A history, so a list.
_PRESETS_NOW = (
    "a protocol preset's setting now, not a config key: pick the preset that fits "
    "(protocol.preset: default, strict, fast or smoke; docs/protocol.md#presets), or set it "
    "from Python (joulebench.core.protocol.ProtocolSettings)"
)
_ROWS_NOW = (
    "score.{key} now: one section (score:) says which rows count, for the score, the fits "
    "and the decisions alike"
)
MOVED_KEYS: dict[str, str] = {
    **{
        f"protocol.{key}": _PRESETS_NOW
        for key in (
            "warmup_min_iters",
            "warmup_min_s",
            "warmup_max_s",
            "warmup_chunk_s",
            "steady_tolerance",
            "min_repeat_batches",
            "pause_s",
            "phase_shifts",
            "lead_in",
            "count_edges",
            "min_batches_max_s",
            "min_window_refreshes",
            "spread_repeats",
            "sweep_periods",
            "spread_sweep_periods",
        )
    },  # fmt: skip
    **{
        f"fits.{key}": _ROWS_NOW.format(key=key)
        for key in ("energy", "invalid_flags", "max_energy_cv")
    },
}
# A config file is read bounded (`read_yaml`): no YAML aliases (an alias bomb of 9 levels of 9
# is 9**9 nodes once expanded), at most this many levels of nesting (5,000 levels overflow
# Python's stack), and no key given twice in one mapping (YAML would keep the last silently).
MAX_YAML_DEPTH = 32
# ... and it is a regular file of at most this many bytes (`--configfile /dev/zero` grew to
# 23 GB; the paper-size study is 2 KB).
MAX_CONFIG_BYTES = 4 * 2**20
# A study file's top-level keys are words (models, batch_sizes, ...); a file whose top level
# holds other things (`root:*:19000:...`) is no config, and its lines are never shown.
CONFIG_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


class ConfigError(ValueError):
    """The config breaks the schema; the message says where and what to write instead."""


def workflow_root() -> Path:
    """The clone this package runs from (it holds the Snakefile), else the working folder."""
    clone = Path(__file__).resolve().parents[2]
    return clone if (clone / "Snakefile").is_file() else Path.cwd()


def job_command(conda: bool, executable: str | None = None) -> str:
    """How the workflow's jobs run the package: with the Python that runs Snakemake (its
    absolute path, so never a `python` that happens to be first on PATH), or under
    `--sdm conda` with the rule's conda environment, whose python its shell activates."""
    if conda:
        return "python -m joulebench"
    return f"{shlex.quote(executable or sys.executable)} -m joulebench"


def job_shell_prefix(conda: bool, executable: str | None = None) -> str:
    """The prefix of every rule's shell command (`shell.prefix`): bash's strict mode, as
    Snakemake's default prefix, and a `joulebench` function that runs `job_command`, so
    rules say `joulebench ...` and none can reach a `joulebench` or `python` on PATH.
    Braces are doubled: Snakemake formats the prefix like a rule's command."""
    prefix = f'set -euo pipefail; joulebench() {{ {job_command(conda, executable)} "$@"; }}; '
    return prefix.replace("{", "{{").replace("}", "}}")


class _Refused(yaml.YAMLError):
    """A YAML document the bounded loader will not build (alias, depth, duplicate key)."""

    def __init__(self, what: str, mark):
        super().__init__(f"line {mark.line + 1}: {what}")


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses, before anything is built, what a config never needs
    and what would exhaust memory or the stack: aliases (`*name`), nesting deeper than
    MAX_YAML_DEPTH, and a key given twice in one mapping."""

    depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(
                f"YAML aliases (*{event.anchor}) are not allowed in a config", event.start_mark
            )
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:
            raise _Refused(
                f"nested deeper than {MAX_YAML_DEPTH} levels", self.peek_event().start_mark
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str) and key in seen:
                raise _Refused(f"key {key[:60]!r} is given twice", key_node.start_mark)
            seen.add(key if isinstance(key, str) else id(key_node))
        return super().construct_mapping(node, deep)


def load_bounded(text: str):
    """One YAML document read with BoundedLoader (yaml.YAMLError for what it refuses)."""
    return yaml.load(text, Loader=BoundedLoader)  # noqa: S506 (a SafeLoader)


def read_yaml(path: str | Path) -> dict:
    """A config file as a mapping, read bounded (BoundedLoader: no aliases, no deep nesting,
    no key twice); a one-line ConfigError for a missing, malformed or refused one."""
    try:
        data = load_bounded(read_bounded_text(path))
    except OSError as err:
        raise ConfigError(f"cannot read config file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text file (not UTF-8)") from None
    except _Refused as err:
        raise ConfigError(f"{path} is refused: {err}") from None
    except yaml.YAMLError as err:  # PyYAML's message spans lines: one line here
        raise ConfigError(f"{path} is not valid YAML: {' '.join(str(err).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config is a mapping of keys, not {type(data).__name__}")
    return data


def read_bounded_text(path: str | Path) -> str:
    """A config file's text: a regular file of at most MAX_CONFIG_BYTES (a device, a FIFO or
    a huge file is a ConfigError before anything is read into memory)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
        raise ConfigError(f"{path} is {what}: a config is a YAML file")
    with open(path, "rb") as fh:
        data = fh.read(MAX_CONFIG_BYTES + 1)  # bounded, whatever its size says
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path} is larger than {MAX_CONFIG_BYTES // 2**20} MB: no study file is "
            "(the paper-size study is 2 KB); is it the right file?"
        )
    return data.decode("utf-8")


def read_config(path: str | Path) -> dict:
    """A study file (read_yaml) whose top-level keys are words, as every config key is: any
    other file (`--configfile /etc/passwd` reads as a mapping of its lines) is refused without
    showing its contents."""
    data = read_yaml(path)
    odd = [k for k in data if not (isinstance(k, str) and CONFIG_KEY.fullmatch(k))]
    if odd:
        raise ConfigError(
            f"{path} is not a study file: {len(odd)} of its top-level entries are no config "
            "key (keys are words such as models, devices, batch_sizes); its contents are not shown"
        )
    return data


def _where(path: Sequence) -> str:
    return ".".join(str(p) for p in path) if path else "the top level"


def source_of(path: Sequence, sources: Sequence[tuple[str, Mapping]]) -> str:
    """The last source (file or --config) that sets the key at `path`."""
    found = ""
    for name, data in sources:
        node = data
        for part in path:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                break
        else:
            found = name
    return found


def _messages(error, sources) -> list[str]:
    """Short messages for one jsonschema error."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        return _unknown_keys(error, path, sources)
    origin = source_of(path, sources)
    hint = _config_option_hint(error, origin)
    origin = f" (set in {origin})" if origin else ""
    message = error.message
    if error.context:  # anyOf / oneOf: the alternative of the value's own type says more
        inner = [e for e in error.context if e.absolute_path != error.absolute_path]
        if inner:
            from jsonschema.exceptions import best_match

            return _messages(best_match(inner), sources)
        message = f"{error.instance!r} is none of: " + "; ".join(
            dict.fromkeys(e.message for e in error.context)
        )
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "..."
    return [f"config: {_where(path)}{origin}: {message}{hint}"]


def _unknown_keys(error, path: list, sources) -> list[str]:
    """One line per key the schema does not know at `path`: where its setting went
    (MOVED_KEYS), else the closest valid key and every valid one."""
    allowed = list(error.schema.get("properties", {}))
    out = []
    for key in error.instance:
        if key in allowed:
            continue
        origin = source_of([*path, key], sources)
        origin = f" (set in {origin})" if origin else ""
        moved = MOVED_KEYS.get(_where([*path, key]))
        if moved:
            out.append(f"config: {_where([*path, key])}{origin} is {moved}")
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.5)
        hint = f"; closest valid key: '{close[0]}'" if close else ""
        out.append(
            f"config: unknown key '{key}' at {_where(path)}{origin}{hint}. "
            f"Valid keys there: {', '.join(allowed)}. ('{key}' was unexpected)"
        )
    return out


def _config_option_hint(error, origin: str) -> str:
    """Snakemake's --config reads the values inside a list or mapping as text ('2', 'false'):
    a wrong type there is the option's doing, and a study file is the way to give it."""
    text = error.validator == "type" and isinstance(error.instance, str)
    if origin == "--config" and text and len(error.absolute_path) > 1:
        return ". --config reads values inside a list or mapping as text: use a --configfile"
    return ""


def check_config(
    config: Mapping, schema: Mapping | None = None, sources: Sequence[tuple[str, Mapping]] = ()
) -> None:
    """Raise ConfigError naming every place the config breaks the schema (defaults not set)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema if schema is not None else load_schema())
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    odd = list(not_finite(config))  # said once, not again as "greater than the maximum"
    lines = [_not_finite_message(path, sources) for path in odd]
    lines += [m for e in errors if tuple(e.absolute_path) not in odd for m in _messages(e, sources)]
    if lines:
        raise ConfigError("\n".join(dict.fromkeys(lines)))


def not_finite(node, path: tuple = ()) -> Iterator[tuple]:
    """The paths of every NaN or infinity in a config (a schema's minimum lets NaN through:
    `timeout_s: .nan` turned the timeout off)."""
    if isinstance(node, float) and not math.isfinite(node):
        yield path
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from not_finite(value, (*path, key))
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from not_finite(value, (*path, i))


def _not_finite_message(path: tuple, sources) -> str:
    origin = source_of(path, sources)
    origin = f" (set in {origin})" if origin else ""
    return f"config: {_where(path)}{origin}: must be a finite number (not NaN or infinity)"


def check_input_path(key: str, path: str | os.PathLike) -> None:
    """A path from the config that becomes a workflow input: Snakemake reads `{` and `}` in
    one as a wildcard (a WildcardError that never names the path), so say so here."""
    if "{" in str(path) or "}" in str(path):
        raise ConfigError(
            f"{key}: {path}: Snakemake reads {{ and }} in an input path as a wildcard; rename "
            "the file, or link it under a name without them (ln -s)"
        )


def shell_option(name: str, value) -> str:
    """`--name=value`, shell-quoted, for a rule's command: glued to its option, a value from
    the config (a label or path starting with `-`) can never be read as an option itself."""
    return shlex.quote(f"--{name}={value}")


def settings_for(section: str, settings: Mapping | None, accepted: Sequence[str]) -> dict:
    """A command's settings as its stage function's keyword arguments (`accepted`).

    Rules pass every one (JSON built by rule_settings, with the schema's defaults); a user of
    the command may pass some. A key left out is left out, so the function's default applies,
    which is the schema's (config_schema.default). An unknown key
    is a ConfigError naming it, never silently ignored.
    """
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise ConfigError(f"{section}: unknown setting(s) {unknown}; known: {', '.join(accepted)}")
    return settings


def with_defaults(config: dict, schema_path: Path) -> dict:
    """The config with the schema's defaults filled in (as the workflow sees it)."""
    from snakemake.utils import validate

    validate(config, str(schema_path))
    return config


def read_study(
    configfile: str | Path | None = None, root: Path | None = None
) -> tuple[dict, list[tuple[str, Mapping]]]:
    """config.yaml with the study file's keys over it, checked by the schema, with the
    schema's defaults; and where each key came from (the files, for messages). What the
    stages would refuse is checked above them: `prerun.load_study` reads a study whole."""
    root = root or workflow_root()
    base_path = root / "config.yaml"
    base = read_config(base_path)
    sources = [(str(base_path), base)]
    config = dict(base)
    if configfile:
        study = read_config(configfile)
        sources.append((str(configfile), study))
        config.update(study)  # a key the study sets replaces the default's whole
    check_config(config, load_schema(), sources)
    return with_defaults(config, SCHEMA_PATH), sources
