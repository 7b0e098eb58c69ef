"""Custom workloads: a user's own model (any architecture from a paper) beside timm's.

A `models:` entry names a function that takes no arguments and returns `(model, spec)`:
a torch.nn.Module and its input spec (a WorkloadSpec, or a dict with the same keys):

    package.module:function            imported from the Python path
    path/to/file.py:function           loaded from a file (relative to the working folder)
    my_net=path/to/file.py:function    the same, with the name results use

The name results use must be known before anything is built (the workflow names files after
it), so it comes from the entry: `name=` when given, else `<file stem or module>.<function>`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import itertools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

# Prefixes timm itself gives model names that contain a colon: never a workload.
TIMM_PREFIXES = ("hf-hub", "hf_hub", "local-dir", "timm")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]+")
FAMILY = "custom"  # the catalog's `family` of every custom workload


class WorkloadError(ValueError):
    """A workload entry that cannot be loaded; the message says what to fix."""


@dataclass(frozen=True)
class WorkloadSpec:
    """What joulebench needs to know about a custom model's input and output."""

    input_size: tuple[int, int, int]  # (C, H, W) of one image
    num_classes: int  # logits per image (training draws labels below this)
    pretrained: bool = False  # True if the function loaded trained weights (`weights` column)

    def __post_init__(self):
        size = tuple(self.input_size)
        if len(size) != 3 or not all(isinstance(v, int) and v > 0 for v in size):
            raise WorkloadError(f"input_size must be 3 positive ints (C, H, W), got {size}")
        if not isinstance(self.num_classes, int) or self.num_classes < 1:
            raise WorkloadError(f"num_classes must be a positive int, got {self.num_classes!r}")
        object.__setattr__(self, "input_size", size)

    @classmethod
    def from_value(cls, value) -> WorkloadSpec:
        """A WorkloadSpec or a dict with its keys (unknown keys are an error)."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise WorkloadError(
                f"the spec must be a WorkloadSpec or a dict, got {type(value).__name__}"
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        missing = sorted({"input_size", "num_classes"} - set(value))
        if unknown or missing:
            raise WorkloadError(
                f"spec keys: unknown {unknown}, missing {missing}; known keys: {sorted(known)}"
            )
        return cls(**value)


@dataclass(frozen=True)
class Entry:
    """A parsed workload entry."""

    name: str
    target: str  # a module name or a file path
    function: str

    @property
    def is_file(self) -> bool:
        return self.target.endswith(".py") or "/" in self.target or "\\" in self.target


def is_workload(entry: str) -> bool:
    """True for `module:function` and `file.py:function` entries (timm names have no colon)."""
    entry = entry.strip()
    if ":" not in entry:
        return False
    prefix = entry.split("=", 1)[-1].split(":", 1)[0]
    return prefix not in TIMM_PREFIXES


def parse_entry(entry: str) -> Entry:
    """Split an entry into (name, target, function); the name defaults from the entry."""
    text = entry.strip()
    name = ""
    if "=" in text.split(":", 1)[0]:
        name, text = (part.strip() for part in text.split("=", 1))
    target, sep, function = text.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise WorkloadError(
            f"workload '{entry}': expected 'module:function' or 'path/to/file.py:function'"
        )
    if not name:
        stem = Path(target).stem if target.endswith(".py") else target.rsplit(".", 1)[-1]
        name = f"{stem}.{function}"
    if name.startswith("-"):  # a job's command line would read it as an option
        raise WorkloadError(f"workload '{entry}': name '{name}' may not start with '-'")
    if not NAME_PATTERN.fullmatch(name):
        raise WorkloadError(
            f"workload '{entry}': name '{name}' may only use letters, digits, '_', '.', '-' "
            "(give one with 'name=' in front of the entry)"
        )
    return Entry(name, target, function)


def workload_name(entry: str) -> str:
    """The name rows, files and figures use for this workload."""
    return parse_entry(entry).name


def named_entry(entry: str) -> str:
    """The entry spelled with its name (`name=target:function`), as jobs receive it."""
    parsed = parse_entry(entry)
    return f"{parsed.name}={parsed.target}:{parsed.function}"


def workload_entries(entries) -> dict[str, str]:
    """name -> entry for the custom workloads among the config's `models:` entries."""
    if isinstance(entries, str):
        entries = [entries]
    return {workload_name(e): e.strip() for e in entries if is_workload(e)}


def check_entry(entry: str) -> Entry:
    """Check, without importing anything, that the file or module exists."""
    parsed = parse_entry(entry)
    if parsed.is_file:
        if not Path(parsed.target).is_file():
            raise WorkloadError(
                f"workload '{entry}': file not found: {parsed.target} (relative to {Path.cwd()})"
            )
    elif importlib.util.find_spec(parsed.target.split(".")[0]) is None:
        raise WorkloadError(f"workload '{entry}': module {parsed.target} not found on sys.path")
    return parsed


_FILE_MODULES: dict[str, object] = {}


def _import_file(path: str):
    """Import a Python file once per process, under a name unique to its path."""
    resolved = str(Path(path).resolve())
    if resolved not in _FILE_MODULES:
        digest = hashlib.sha1(resolved.encode()).hexdigest()[:10]
        module_name = f"joulebench_workload_{Path(path).stem}_{digest}"
        spec = importlib.util.spec_from_file_location(module_name, resolved)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses and pickling look modules up here
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        _FILE_MODULES[resolved] = module
    return _FILE_MODULES[resolved]


# Module objects handed to joulebench.profile (the API), named by entries `name=HELD:<key>`
# while they are measured, so a profile job builds a user's module object as it builds a
# user's model file; each build gets a copy, as each configuration gets a fresh model (a
# method's cast never changes the user's module). In this process only.
HELD = "joulebench.held"
_HELD: dict[str, Callable[[], tuple]] = {}
_HELD_KEYS = itertools.count()


def hold(model, spec) -> str:
    """Hold `model` with its WorkloadSpec; the entry's function part (`HELD:<key>`)."""
    key = f"module_{next(_HELD_KEYS)}"
    _HELD[key] = lambda: (copy.deepcopy(model), spec)
    return key


def release(key: str) -> None:
    _HELD.pop(key, None)


def _import_module(name: str, entry: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise WorkloadError(f"workload '{entry}': module {name} not found on sys.path") from exc
        raise  # the module itself imports something missing: show that, unchanged


def load_workload(entry: str):
    """Call the entry's function; return (torch.nn.Module, WorkloadSpec), checked."""
    import torch

    parsed = check_entry(entry)
    if parsed.target == HELD:
        function = _HELD.get(parsed.function)
    elif parsed.is_file:
        function = getattr(_import_file(parsed.target), parsed.function, None)
    else:
        function = getattr(_import_module(parsed.target, entry), parsed.function, None)
    if not callable(function):
        raise WorkloadError(
            f"workload '{entry}': {parsed.target} has no function {parsed.function}"
        )
    value = function()
    if not (isinstance(value, tuple | list) and len(value) == 2):
        raise WorkloadError(
            f"workload '{entry}': {parsed.function}() returned {type(value).__name__}; "
            "expected (model, spec)"
        )
    model, spec = value
    if not isinstance(model, torch.nn.Module):
        raise WorkloadError(
            f"workload '{entry}': {parsed.function}() returned a {type(model).__name__} "
            "as model; expected a torch.nn.Module"
        )
    try:
        spec = WorkloadSpec.from_value(spec)
    except WorkloadError as exc:
        raise WorkloadError(f"workload '{entry}': {exc}") from None
    return model, spec
