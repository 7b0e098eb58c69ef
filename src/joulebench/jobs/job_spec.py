"""A profile job's spec: what a study asks of one job, typed and range-checked (issue 43).

One frozen `JobSpec`, made by one function, `job_spec`, from a study's sections: the
workflow (common.smk's `get_profile_spec`), the ad-hoc `joulebench profile` and the Python
API's `joulebench.profile` all call it, so a key means the same wherever a job comes from.
It travels as JSON (`to_json`): the workflow hands it to `joulebench profile-job`, whose
supervisor reads it once and hands it on to each worker, which reads it once
(`JobSpec.from_json`); a bad spec is one line naming the key. What is not the study's (the
model, the device label, the idle baseline's file, threads) is the job's own option
(jobs.profile.ProfileJob). No torch: the workflow builds specs when it is parsed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType

from joulebench.config_schema import default, maximum
from joulebench.core.methods import Method, parse_methods
from joulebench.core.protocol import DEFAULT_PRESET, ProtocolSettings
from joulebench.core.train import TrainSpec
from joulebench.jobs.first_check import CHECK_FIRST
from joulebench.study import IDLE_PRE_S
from joulebench.tables import INPUT_KINDS, MAX_BATCH_SIZE, PHASES

DEFAULT_ONNX_CACHE = default("profile.onnx_cache")


@dataclass(frozen=True)
class JobSpec:
    """What one profile job is asked to measure, as the study says it: every field typed
    and checked when it is made, so a job never starts on a value no row could hold."""

    torch_device: str
    methods: tuple[Method, ...]  # a list given is kept as a tuple: the spec never changes
    batch_sizes: tuple[int, ...]
    settings: ProtocolSettings = field(default_factory=ProtocolSettings)
    # the study's protocol section: with it, the session sizes `settings` to the job's meter
    # at its start (protocol.METER_SIZED); None keeps `settings` as given
    protocol: Mapping | None = None
    idle_pre_s: float = IDLE_PRE_S  # a short idle read before the model, recorded beside it
    # out of memory -> retry at half the batch (as timm's benchmark)
    oom_retry: bool = default("profile.oom_retry")
    meter: str | None = None  # force "nvml", "rapl" or "estimate"
    meter_options: Mapping = field(default_factory=dict)  # e.g. tdp_w for the estimate
    phases: tuple[str, ...] = ("inference",)  # and/or "train"
    train: TrainSpec = field(default_factory=TrainSpec)  # optimizer etc. of the train phase
    workload: str | None = None  # a custom workload (joulebench.catalog.workloads); None: timm
    onnx_cache_dir: str = DEFAULT_ONNX_CACHE  # exported models of non-PyTorch runtimes
    input_kind: str = default("profile.input_kind")  # the synthetic batch: random or zeros
    check_first: str = default("profile.check_first")  # check the GPU first (first_check)
    # read the GPU's reference levels first where none are kept (jobs.board_reference)
    board_reference: str = default("profile.board_reference")
    quiet_wait_s: float = default("profile.quiet_wait_s")  # wait at most for the device alone
    # how long a configuration may go without progress before it is stopped (a `timeout`
    # row, jobs.supervise); None: TIMEOUT_FACTOR x its estimate, at least the floor
    timeout_s: float | None = None
    gpu: Mapping = field(default_factory=dict)  # the pool's GPU leased: uuid, index, serial
    device_pool: str = ""  # the study's pool label of a replica label (each_model_on)

    def __post_init__(self):
        for name in ("methods", "batch_sizes", "phases"):  # read-only, whatever was given
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("meter_options", "gpu", "protocol"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        _check(self)
        for name in ("idle_pre_s", "quiet_wait_s", "timeout_s"):  # 2 in a study: 2.0 s
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))

    def pinned(self, torch_device: str, gpu: Mapping | None = None) -> JobSpec:
        """The spec on the GPU its job was pinned to or leased (schedule.slots)."""
        return replace(self, torch_device=torch_device, gpu=dict(gpu or self.gpu))

    def to_json(self) -> str:
        """The spec as its job's command and its workers take it (`from_json` reads it back
        equal); methods keep their order."""
        return json.dumps(_plain(self))

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        """The spec `to_json` wrote; a key left out takes its default. A ValueError of one
        line for anything else: not JSON, not an object, an unknown key, a bad value."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as err:
            raise ValueError(f"job spec: not JSON ({err})") from None
        if not isinstance(data, dict):
            raise ValueError(f"job spec: not a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"job spec: unknown key(s) {unknown}")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"job spec: no {', '.join(missing)}")
        try:
            return cls(**_typed(data))
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            raise ValueError("job spec: " + " ".join(str(err).split())) from None


def job_spec(
    torch_device: str,
    study: Mapping,
    *,
    method: str | None = None,
    workload: str | None = None,
    device_pool: str = "",
) -> JobSpec:
    """The one way a job's spec is made: from a study's sections (`methods` and
    `batch_sizes`, and `protocol`, `profile`, `phases`, `train`, whose keys left out or
    null take the schema's defaults) for `torch_device`. `method`: the job measures that
    method of the study's alone (a pool that splits its models by method); `workload`: a
    custom workload's entry; `device_pool`: the pool a replica label measures for."""
    profile = dict(study.get("profile") or {})
    profile.pop("split", None)  # how the workflow makes jobs, not what one measures
    unknown = sorted(set(profile) - set(_PROFILE_FIELDS))
    if unknown:
        raise ValueError(f"profile: unknown key(s) {unknown}; known: {sorted(_PROFILE_FIELDS)}")
    methods = study["methods"] if method is None else {method: study["methods"][method]}
    protocol = {**(study.get("protocol") or {})}
    protocol["preset"] = protocol.get("preset") or DEFAULT_PRESET
    estimate = profile.pop("estimate", None) or {}
    given = {_PROFILE_FIELDS[k]: v for k, v in profile.items() if v is not None and v != ""}
    return JobSpec(
        torch_device=torch_device,
        methods=tuple(parse_methods(methods).values()),
        batch_sizes=tuple(study["batch_sizes"]),
        settings=ProtocolSettings.from_dict(protocol),
        protocol=protocol,
        meter_options={k: v for k, v in estimate.items() if v is not None},
        phases=tuple(study.get("phases") or ("inference",)),
        train=TrainSpec.from_dict(study.get("train")),
        workload=workload or None,
        device_pool=device_pool or "",
        **given,
    )


# the study's `profile:` keys -> JobSpec's fields (estimate: meter_options, read above)
_PROFILE_FIELDS = {
    "idle_pre_s": "idle_pre_s",
    "oom_retry": "oom_retry",
    "meter": "meter",
    "check_first": "check_first",
    "board_reference": "board_reference",
    "quiet_wait_s": "quiet_wait_s",
    "timeout_s": "timeout_s",
    "onnx_cache": "onnx_cache_dir",
    "input_kind": "input_kind",
    "estimate": "meter_options",
}


def _plain(spec: JobSpec) -> dict:
    """The spec's fields as JSON values (methods by name; the protocol's settings only
    where no protocol section says them)."""
    out = {f.name: getattr(spec, f.name) for f in fields(spec)}
    out["methods"] = {m.name: _method_fields(m) for m in spec.methods}
    out["settings"] = None if spec.protocol is not None else _fields(spec.settings)
    out["train"] = _fields(spec.train)
    for name in ("batch_sizes", "phases"):
        out[name] = list(out[name])
    for name in ("protocol", "meter_options", "gpu"):
        out[name] = None if out[name] is None else dict(out[name])
    return out


def _typed(data: dict) -> dict:
    """JobSpec's keyword arguments from `_plain`'s values."""
    typed = dict(data)
    if "methods" in data:
        typed["methods"] = tuple(parse_methods(data["methods"]).values())
    protocol = data.get("protocol")
    settings = data.get("settings")
    if protocol is not None:
        typed["settings"] = ProtocolSettings.from_dict(protocol)
    elif settings is not None:
        typed["settings"] = ProtocolSettings(**settings)
    else:
        typed.pop("settings", None)
    if data.get("train") is not None:
        typed["train"] = TrainSpec.from_dict(data["train"])
    return {k: v for k, v in typed.items() if v is not None or k in _NULLABLE}


_NULLABLE = ("protocol", "meter", "workload", "timeout_s")
_REQUIRED = ("torch_device", "methods", "batch_sizes")


def _fields(value) -> dict:
    """A frozen dataclass's fields, its tuples as lists (JSON)."""
    return {
        f.name: list(v) if isinstance(v := getattr(value, f.name), tuple) else v
        for f in fields(value)
    }


def _method_fields(method: Method) -> dict:
    """A method's settings other than its defaults (a short command line)."""
    return {
        f.name: getattr(method, f.name)
        for f in fields(method)
        if f.name != "name" and getattr(method, f.name) != f.default
    }


def _check(spec: JobSpec) -> None:
    """Each field's type and range, as the schema checks a study's (one line each)."""
    if not isinstance(spec.torch_device, str) or not spec.torch_device:
        raise ValueError(f"torch_device must be a device string, got {spec.torch_device!r}")
    if not all(isinstance(m, Method) for m in spec.methods):
        raise ValueError("methods must be Method objects (core.methods.parse_methods)")
    for batch in spec.batch_sizes:
        if isinstance(batch, bool) or not isinstance(batch, int):
            raise ValueError(f"batch_sizes must be whole numbers, got {batch!r}")
        if not 1 <= batch <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_sizes must be 1 to {MAX_BATCH_SIZE}, got {batch}")
    unknown = [p for p in spec.phases if p not in PHASES]
    if unknown or not spec.phases:
        raise ValueError(f"phases must be a non-empty list of {PHASES}, got {list(spec.phases)}")
    for name in ("check_first", "board_reference"):
        if getattr(spec, name) not in CHECK_FIRST:
            raise ValueError(f"{name} must be one of {CHECK_FIRST}: {getattr(spec, name)!r}")
    if spec.input_kind not in INPUT_KINDS:
        raise ValueError(f"input_kind must be one of {INPUT_KINDS}, got {spec.input_kind!r}")
    _seconds("idle_pre_s", spec.idle_pre_s, "profile.idle_pre_s")
    _seconds("quiet_wait_s", spec.quiet_wait_s, "profile.quiet_wait_s")
    if spec.timeout_s is not None:
        _seconds("timeout_s", spec.timeout_s, "profile.timeout_s", positive=True)
    if not isinstance(spec.oom_retry, bool):
        raise ValueError(f"oom_retry must be true or false, got {spec.oom_retry!r}")
    for name in ("meter", "workload"):
        if getattr(spec, name) is not None and not isinstance(getattr(spec, name), str):
            raise ValueError(f"{name} must be a string or null, got {getattr(spec, name)!r}")
    if not isinstance(spec.onnx_cache_dir, str) or not isinstance(spec.device_pool, str):
        raise ValueError("onnx_cache_dir and device_pool must be strings")


def _seconds(name: str, value, key: str, *, positive: bool = False) -> None:
    """A finite number of seconds, >= 0 (> 0 where `positive`), at most the schema's."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and (value > 0 if positive else value >= 0)):
        word = "positive" if positive else "non-negative"
        raise ValueError(f"{name} must be a {word} finite number of seconds, got {value!r}")
    if value > maximum(key):
        raise ValueError(f"{name} must be at most {maximum(key)} s, got {value!r}")
