"""Model selection: turn the config's `models:` entries into exact timm names.

Accepted entries (resolved once, in the order given, duplicates dropped):
- `resnet50.a1_in1k`   an exact timm name with its pretrained tag;
- `resnet50`           a bare architecture, resolved to timm's default tag
                       (an architecture without pretrained weights stays bare);
- `convnext_*`         a glob over pretrained names (`arch.tag`); when it matches no
                       pretrained weight it is tried against architectures;
- `all-pretrained`     every pretrained weight timm knows;
- an old timm name     (`convnext_tiny_in22ft1k`) resolved to its new `arch.tag`;
- a custom workload    (`path/to/file.py:function`, `package.module:function`, optionally
                       `name=` in front) resolved to its name (docs/workloads.md); the file
                       or module must exist, nothing is imported.
"""

from __future__ import annotations

import difflib
import fnmatch

from joulebench.catalog.workloads import WorkloadError, check_entry, is_workload, parse_entry

ALL_PRETRAINED = "all-pretrained"
GLOB_CHARS = "*?["


class ModelSelectionError(ValueError):
    """One or more `models:` entries name no timm model."""


def split_name(name: str) -> tuple[str, str]:
    """`resnet50.a1_in1k` -> ("resnet50", "a1_in1k"); a bare name has an empty tag."""
    arch, _, tag = name.partition(".")
    return arch, tag


def _registry():
    import timm
    import timm.models._registry as registry

    pretrained = timm.list_pretrained()
    return {
        "pretrained": pretrained,
        "pretrained_set": set(pretrained),
        "archs": timm.list_models(),
        "archs_set": set(timm.list_models()),
        "deprecated": registry.get_deprecated_models(),
        "has_pretrained": set(registry._model_has_pretrained),
        "default_tag": lambda arch: registry.get_pretrained_cfg(arch).tag,
    }


def suggest(entry: str, reg: dict, n: int = 5) -> list[str]:
    """The closest valid names, for error messages."""
    arch, tag = split_name(entry)
    if tag and arch in reg["archs_set"]:
        same_arch = [p for p in reg["pretrained"] if split_name(p)[0] == arch]
        close = difflib.get_close_matches(entry, same_arch, n=n, cutoff=0.0)
        if close:
            return close
    pool = reg["pretrained"] + reg["archs"]
    return difflib.get_close_matches(entry, pool, n=n, cutoff=0.6)


def _resolve_one(entry: str, reg: dict) -> list[str]:
    if entry == ALL_PRETRAINED:
        return list(reg["pretrained"])
    if any(c in entry for c in GLOB_CHARS):
        hits = fnmatch.filter(reg["pretrained"], entry)
        return hits or fnmatch.filter(reg["archs"], entry)
    if entry in reg["pretrained_set"]:
        return [entry]
    if entry in reg["deprecated"]:
        return _resolve_one(reg["deprecated"][entry], reg)
    if entry in reg["archs_set"]:
        if entry in reg["has_pretrained"]:
            return [f"{entry}.{reg['default_tag'](entry)}"]
        return [entry]
    return []


def resolve_models(entries: list[str]) -> list[str]:
    """Exact timm names for the config's entries; raise naming every bad entry."""
    if isinstance(entries, str):
        entries = [entries]
    # timm's registry (it imports torch: seconds) only where an entry is a timm name
    reg = None if all(is_workload(e) for e in entries) else _registry()
    resolved: dict[str, None] = {}
    problems = []
    for entry in entries:
        if entry.strip().startswith("-"):  # a job's command line would read it as an option
            problems.append(f"models: '{entry}' starts with '-': no model name does")
            continue
        if is_workload(entry):
            try:
                resolved[check_entry(entry).name] = None
            except WorkloadError as exc:
                problems.append(f"models: {exc}")
            continue
        names = _resolve_one(entry.strip(), reg)
        if not names:
            kind = "glob matches" if any(c in entry for c in GLOB_CHARS) else "is"
            close = suggest(entry, reg)
            hint = f" Closest valid names: {', '.join(close)}." if close else ""
            problems.append(f"models: '{entry}' {kind} no timm model.{hint}")
        resolved.update(dict.fromkeys(names))
    if problems:
        raise ModelSelectionError("\n".join(problems))
    return list(resolved)


def exact_names(entries: list[str]) -> list[str] | None:
    """The models of `entries` when each is an exact name (`arch.tag`) or a custom workload,
    found without timm's registry (so without torch: `joulebench status`); None when one
    entry needs the registry (a glob, a bare architecture, `all-pretrained`, an old name)."""
    if isinstance(entries, str):
        entries = [entries]
    names: dict[str, None] = {}
    for entry in entries:
        entry = entry.strip()
        if is_workload(entry):
            names[parse_entry(entry).name] = None
        elif entry == ALL_PRETRAINED or any(c in entry for c in GLOB_CHARS):
            return None
        elif all(split_name(entry)):
            names[entry] = None
        else:
            return None
    return list(names)


def chunk(models: list[str], size: int) -> list[list[str]]:
    """Split models into jobs of at most `size`: one process per job amortises imports."""
    if size < 1:
        raise ValueError("models_per_job must be >= 1")
    return [models[i : i + size] for i in range(0, len(models), size)]
