"""The config's schema, shipped in the package: where each config default is decided.

The schema (config.schema.yaml beside this module; workflow/schemas/ links to it, where
Snakemake's `validate` reads it and fills the defaults in) declares every key with its
default. Code that takes a config key as an argument takes its default from here
(`default("score.max_energy_cv")`), so a default is written once and a Python caller gets
what a study gets.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).with_name("config.schema.yaml")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _schema() -> dict:
    return yaml.load(SCHEMA_PATH.read_text(), Loader=_LOADER)


def load_schema() -> dict:
    """The schema, a copy the caller may change."""
    return copy.deepcopy(_schema())


def _node(key: str) -> dict:
    """The schema of a dotted key; KeyError where it is not declared."""
    node = _schema()
    for part in key.split("."):
        if part == "*":
            node = node["additionalProperties"]
            continue
        properties = node.get("properties", {})
        if part not in properties:
            raise KeyError(f"the config schema has no key {key!r} (at {part!r})")
        node = properties[part]
    return node


def default(key: str):
    """The schema's default of a dotted key (`profile.idle_pre_s`; `methods.*.precision`
    for a key of every method), a copy; KeyError where the key or its default is not
    declared, so a typo fails at import, not with a wrong value."""
    node = _node(key)
    if "default" not in node:
        raise KeyError(f"the config schema gives {key!r} no default")
    value = copy.deepcopy(node["default"])
    return tuple(value) if isinstance(value, list) else value


def maximum(key: str) -> float:
    """The schema's maximum of a dotted number key: the API and the jobs range-check a value
    from Python as the schema checks a study's (KeyError where none is declared)."""
    node = _node(key)
    if "maximum" not in node:
        raise KeyError(f"the config schema gives {key!r} no maximum")
    return node["maximum"]
