"""The study's plan as status needs it: which models and devices, what a configuration and
a model job are expected to take. The one place status imports the plan from.

Models come from the study without timm when every entry is an exact name or a workload;
otherwise `joulebench resolve` runs in a child process (timm's registry needs torch, which
this process never imports). Devices are the study's; `devices: auto` is the labels the run
has started on (the workflow resolves `auto` on the run's host, which may not be this one).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from joulebench.catalog.models import exact_names
from joulebench.core.backends import DeviceError, kind_of
from joulebench.core.methods import expand_methods

# The plan's home today; issue 24 moves it next to study.py: fix this one line then.
from joulebench.jobs.config_time import format_duration, method_config_s
from joulebench.plan import DEFAULT_REFRESH_S, meter_of, plan_study
from joulebench.prerun import load_study
from joulebench.schedule.devices import AUTO, RESOLVED_ENV, pool_members

RESOLVE_TIMEOUT_S = 600.0
__all__ = ["StudyPlan", "format_duration", "parse_duration", "study_plan"]


@dataclass
class StudyPlan:
    study: str  # the study file, or config.yaml
    models: list[str] | None  # None: could not be resolved
    models_source: str
    devices: dict[str, str]  # label -> torch device
    devices_source: str
    configs_per_model: int
    config_estimate_s: float  # one configuration, the plan's average
    job_overhead_s: float  # one model job beyond its configurations: start-up, idle read
    method_estimate_s: dict[str, float] = field(default_factory=dict)  # by method, on a CPU
    gpu_method_estimate_s: dict[str, float] = field(default_factory=dict)  # on a GPU's NVML
    measuring: bool = True  # False: from_summary, nothing is measured
    auto: bool = False  # devices: auto, seen on disk: status adds labels as they appear

    def method_estimates(self, entry) -> dict[str, float]:
        """Each method's planned configuration on a device (a `devices:` value: a device
        string or a pool): a GPU's windows follow its sensor's refreshes, a CPU's meter has
        none (an unknown device: as a CPU)."""
        device = _device_of(entry)
        gpu = device is not None and not kind_of(device).is_host
        return self.gpu_method_estimate_s if gpu else self.method_estimate_s

    def planned(self, label: str) -> int | None:
        """Configurations the study plans on `label` (None: its models are unknown)."""
        if self.models is None:
            return None
        return len(self.models) * self.configs_per_model if label in self.devices else 0


def resolve_in_child(entries: list[str], directory: Path) -> list[str]:
    """`joulebench resolve` in a child process (it imports timm, so torch)."""
    res = subprocess.run(
        [sys.executable, "-m", "joulebench", "resolve", "--", *entries],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=RESOLVE_TIMEOUT_S,
    )
    if res.returncode != 0:
        lines = (res.stderr or res.stdout).strip().splitlines()
        raise ValueError(lines[-1] if lines else f"exit status {res.returncode}")
    return res.stdout.split()


def _models(entries, directory: Path, resolve) -> tuple[list[str] | None, str]:
    names = exact_names(entries)
    if names is not None:
        return names, "the study's names"
    try:
        return resolve(entries, directory), "resolved by timm (joulebench resolve)"
    except (OSError, ValueError, subprocess.SubprocessError) as err:
        return None, f"unknown: the study's models: entries did not resolve ({err})"


def _devices(spec, seen: dict[str, str]) -> tuple[dict[str, str], str, bool]:
    """label -> torch device, where from, and whether more may appear on disk; `seen`:
    labels on disk with the torch device their rows say."""
    if spec != AUTO:
        return dict(spec), "the study's devices", False
    if os.environ.get(RESOLVED_ENV):
        return json.loads(os.environ[RESOLVED_ENV]), f"devices: auto (${RESOLVED_ENV})", False
    return dict(seen), "devices: auto: the labels this run has started on", True


def _configfile(configfile: str | None, directory: Path) -> str | None:
    """The study file as given, else inside the run's directory (where tests write it)."""
    if configfile is None or Path(configfile).exists():
        return configfile
    inside = directory / configfile
    return str(inside) if inside.exists() else configfile


def _device_of(entry) -> str | None:
    """One device of a `devices:` value (a pool's first): what a configuration takes
    depends on the device's kind, not on its pool's size. None where it names no device
    joulebench knows (a label seen on disk may not say its device yet: "?")."""
    try:
        device = pool_members(entry)[0]
        kind_of(device)
    except (KeyError, IndexError, TypeError, DeviceError):
        return None
    return device


def _one_of_each(devices: dict) -> dict[str, str]:
    """label -> one device of it (_device_of); a CPU where the study names none yet
    (`devices: auto` before the run starts)."""
    found = {label: _device_of(entry) for label, entry in devices.items()}
    return {label: d for label, d in found.items() if d} or {"one device": "cpu"}


def _method_estimates(config: dict, refresh_s: float | None, meter: str) -> dict[str, float]:
    """Each method's planned configuration on a meter refreshing every `refresh_s` (None:
    RAPL and the estimate) of a kind (`meter`: protocol.METER_KINDS)."""
    return {
        name: method_config_s(
            config.get("protocol"),
            len(config["batch_sizes"]),
            bool((spec or {}).get("compile")),
            refresh_s,
            meter,
        )
        for name, spec in expand_methods(config["methods"]).items()
    }


def study_plan(
    directory: Path, configfile: str | None, seen: dict[str, str], resolve=resolve_in_child
) -> StudyPlan:
    """The plan of the study a run in `directory` measures (see the module doc)."""
    configfile = _configfile(configfile, directory)
    config = load_study(configfile)
    study = configfile or "config.yaml (the default study)"
    if config.get("from_summary"):
        return StudyPlan(study, [], "from_summary", {}, "none", 0, 0.0, 0.0, measuring=False)
    models, models_source = _models(config["models"], directory, resolve)
    devices, devices_source, auto = _devices(config["devices"], seen)
    one = plan_study(config, ["one model"], _one_of_each(devices), None)
    per_model = one.devices[0].configurations
    return StudyPlan(
        study,
        models,
        models_source,
        devices,
        devices_source,
        configs_per_model=per_model,
        config_estimate_s=one.config_estimate_s,
        job_overhead_s=max(one.model_job_s - per_model * one.config_estimate_s, 0.0),
        method_estimate_s=_method_estimates(config, None, meter_of("", "cpu")),
        gpu_method_estimate_s=_method_estimates(config, DEFAULT_REFRESH_S, "sensor"),
        auto=auto,
    )


_UNITS_S = {"s": 1, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float | None:
    """format_duration's text back in seconds ("2 h 05 min" -> 7500); None if not one."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(min|s|h|d)\b", text or "")
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*(min|s|h|d)\b", "", text).strip():
        return None
    return sum(float(n) * _UNITS_S[unit] for n, unit in parts)
