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

import contextlib
import difflib
import fnmatch
import json
import os
import sys
from importlib import metadata
from pathlib import Path

from joulebench.catalog.workloads import WorkloadError, check_entry, is_workload, parse_entry

ALL_PRETRAINED = "all-pretrained"
GLOB_CHARS = "*?["


class ModelSelectionError(ValueError):
    """One or more `models:` entries name no timm model."""


def _is_glob(entry: str) -> bool:
    return any(c in entry for c in GLOB_CHARS)


def _selects_many(entry: str) -> bool:
    """A glob or `all-pretrained`: an entry read over the whole of timm's registry."""
    return entry == ALL_PRETRAINED or _is_glob(entry)


def split_name(name: str) -> tuple[str, str]:
    """`resnet50.a1_in1k` -> ("resnet50", "a1_in1k"); a bare name has an empty tag."""
    arch, _, tag = name.partition(".")
    return arch, tag


CACHE_ENV = "JOULEBENCH_CACHE_DIR"  # where timm's names are kept (else ~/.cache/joulebench)
_LISTS = ("pretrained", "archs", "has_pretrained")


def cache_dir() -> Path:
    """The folder of what joulebench keeps between runs ($JOULEBENCH_CACHE_DIR, else
    $XDG_CACHE_HOME/joulebench, else ~/.cache/joulebench)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "joulebench"


def names_cache() -> Path | None:
    """timm's names kept for its installed version (None without timm installed)."""
    try:
        version = metadata.version("timm")
    except metadata.PackageNotFoundError:
        return None
    return cache_dir() / f"timm-{version}-names.json"


def _registry(live: bool = False) -> dict:
    """timm's names: kept for its version (no import of timm, hence of torch: seconds), or
    `live` from timm itself (what this process registered too), kept for the next time
    where timm is imported here first: then they are timm's own, no model a test or a
    plugin registered in this process."""
    path = names_cache()
    if not live and path is not None:
        kept = _read_names(path)
        if kept is not None:
            return _as_registry(kept, kept=True)
    own = "timm" not in sys.modules
    names = _live_names()
    if path is not None and own:
        _write_names(path, names)
    return _as_registry(names, kept=False)


def _live_names() -> dict:
    import timm
    import timm.models._registry as registry

    has = sorted(registry._model_has_pretrained)
    return {
        "pretrained": list(timm.list_pretrained()),
        "archs": list(timm.list_models()),
        "has_pretrained": has,
        "deprecated": dict(registry.get_deprecated_models()),
        "default_tags": {a: registry.get_pretrained_cfg(a).tag for a in has},
    }


def _read_names(path: Path) -> dict | None:
    """The kept names, or None where the file is missing, unreadable or not what it should
    be (then timm is asked, and the file written anew)."""
    try:
        names = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(names, dict) and all(
        isinstance(names.get(k), list) and all(isinstance(n, str) for n in names[k]) for k in _LISTS
    )
    maps = [names.get(k) for k in ("deprecated", "default_tags")] if ok else []
    ok = ok and all(
        isinstance(m, dict) and all(isinstance(v, str) for v in m.values()) for m in maps
    )
    return names if ok else None


def _write_names(path: Path, names: dict) -> None:
    """Kept atomically; a folder that cannot be written only costs the next run timm's import."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(names))
        os.replace(tmp, path)


def _as_registry(names: dict, kept: bool) -> dict:
    return {
        "kept": kept,
        "pretrained": names["pretrained"],
        "pretrained_set": set(names["pretrained"]),
        "archs": names["archs"],
        "archs_set": set(names["archs"]),
        "deprecated": names["deprecated"],
        "has_pretrained": set(names["has_pretrained"]),
        "default_tag": names["default_tags"].get,
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
    if _is_glob(entry):
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
    # timm's names only where an entry is a timm name; a glob or all-pretrained over timm's
    # own registry (it may hold models this process registered), the rest over the kept names
    needs_live = any(_selects_many(e.strip()) for e in entries)
    reg = None if all(is_workload(e) for e in entries) else _registry(live=needs_live)
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
        if not names and reg["kept"]:  # not among the kept names: ask timm itself
            reg = _registry(live=True)
            names = _resolve_one(entry.strip(), reg)
        if not names:
            kind = "glob matches" if _is_glob(entry) else "is"
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
        elif _selects_many(entry):
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
