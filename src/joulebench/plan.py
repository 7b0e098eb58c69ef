"""The cost of a study before it runs: configurations, minimum measuring time, wall time.

A configuration is one (device, model, phase, method, batch size) measured under the
protocol; jobs.config_time estimates it by the protocol's own rules, and the plan adds
what every model job also costs (start-up, idle read, catalog, analysis: bench/bench_plan.py
measures them), counts models already measured at the time their rows took and overlaps
devices as the workflow schedules them. What is counted and where the estimate is wrong:
docs/plan.md. The plan sits above `core`, `accuracy` and `analysis` and below the CLI
(docs/design.md, layers); it imports torch only for `--calibrate`.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from joulebench.config_schema import default
from joulebench.core.backends import Libraries, NativePrecisions, kind_of
from joulebench.core.emulation import FORCE_KEY, verdict
from joulebench.core.meters.contention import DEFAULT_THRESHOLD as CONTENTION_THRESHOLD
from joulebench.core.methods import NATIVE_ONLY, config_key, parse_methods
from joulebench.core.protocol import EDGE_STEP_SHARE, ProtocolSettings
from joulebench.core.provenance import seconds_taken
from joulebench.core.quiet import WAIT_S, cpu_others_share
from joulebench.jobs.board_reference import DEFAULT as BOARD_REFERENCE_DEFAULT
from joulebench.jobs.board_reference import first_reference_s
from joulebench.jobs.config_time import (
    config_cost,
    config_min_s,
    format_duration,
    repeats_needed,
    warmup_kinds,
    window_s,
)
from joulebench.jobs.first_check import DEFAULT as CHECK_FIRST_DEFAULT
from joulebench.jobs.first_check import first_check_s
from joulebench.safe_text import quantity
from joulebench.schedule.job_parts import DEFAULT_SPLIT, job_key, job_methods, parse_job_key
from joulebench.study import IDLE_DURATION_S, IDLE_PRE_S, ConfigError, read_yaml
from joulebench.tables import CATALOG, ESTIMATE_METER_PREFIX, PHASES

# Overheads measured by bench/bench_plan.py on the development machine (2-core VM, CPU, no GPU,
# busy with other work: load average 5), docs/benchmarks.md "Plan", 2026-12-03. Medians.
# (Those of one configuration are in joulebench.jobs.config_time.)
JOB_START_S = 6.7  # a profile or idle job's process start: python, torch, timm, the package
CATALOG_JOB_S = 6.7  # a catalog job's imports (as a profile job's)
CATALOG_MODEL_S = 0.26  # counting one model: params, FLOPs, activations (issue 3 benchmark)
# Concatenations, reference accuracy, summary, scores, fits, figures and page of the default
# study: 20 s in its `make run` of 2026-12-03 (machine quiet by then; 55 s was assumed before).
ANALYSIS_S = 20.0
SKIPPED_CONFIG_S = 0.0  # a configuration skipped before anything is built: one row
# How far the measured / estimated time of the models done may scale the models left.
LEARNED_RATIO_RANGE = (0.25, 4.0)
# A warm-up beside a busy neighbour: throughput steadies within steady_tolerance only after
# seconds (the default study's 30 warm-ups beside one busy process on the 2-core VM, median,
# full and short alike; docs/benchmarks.md "The first hour of a new user"). Builds, start-ups
# and the analysis took as long as on the idle host; windows last their time.
BUSY_WARMUP_S = 8.6
PAGE_PATH = "results/webapp/index.html"  # the analysis's last output (rule webapp)
# A GPU meter's refresh period where no check has measured it: NVIDIA's A100/H100/H200 sensors
# (docs/protocol.md); it sets the windows' refreshes, phase shifts and lead-ins.
DEFAULT_REFRESH_S = 0.1


@dataclass(frozen=True)
class HostLoad:
    """Other processes' share of the host's CPUs when the plan is made (quiet.cpu_others_
    share). A CPU device's job then waits for them once (quiet.WAIT_S), runs its windows to
    the cap (a noisy host's CI target is not met sooner) and warms up for BUSY_WARMUP_S."""

    share: float = 0.0
    wait_s: float = WAIT_S  # profile.quiet_wait_s

    @property
    def busy(self) -> bool:
        return self.share > CONTENTION_THRESHOLD

    @property
    def warmup_s(self) -> float:
        """The least a warm-up takes on this host."""
        return BUSY_WARMUP_S if self.busy else 0.0


@dataclass
class DevicePlan:
    label: str
    device: str  # the device string (a pool's first)
    is_host: bool  # the host's CPU: measured after the GPUs, one job at a time
    configurations: int
    measuring_min_s: float  # the protocol's minimum
    estimate_s: float  # the estimated wall time of this device's idle and profile jobs
    skipped: int = 0  # configurations skipped here (an emulated precision), ~0 s each
    model_job_s: float = 0.0  # one model's profile job on this device, estimated
    skipped_why: dict[str, str] = field(default_factory=dict)  # precision -> why emulated
    gpus: int = 1  # the devices of its pool: they share its models
    done: int = 0  # configurations already measured (rows files found), not estimated
    done_s: float = 0.0  # their measured time (each row's start to end)
    calibrated: int = 0  # models whose step times were measured here (--calibrate)
    one_gpu_s: float = 0.0  # estimate_s if one device measured all of it (a pool's one GPU)
    learned_ratio: float | None = None  # measured / estimated of the models done, applied
    jobs_per_model: int = 1  # one job per model, or one per model and method (job_parts)
    job_s: float = 0.0  # one job (a model, or a method of it), estimated
    check_s: float = 0.0  # each GPU's check before its first job (jobs.first_check)
    settings: ProtocolSettings | None = None  # the protocol as sized to its meter

    @property
    def finished(self) -> bool:
        """Every job of the device has its rows: nothing left to measure."""
        return self.done > 0 and self.estimate_s == 0


@dataclass
class SlurmPlan:
    profile_dir: str
    group_size: int
    profile_allocations: int
    idle_allocations: int
    catalog_allocations: int
    dataset_jobs: bool  # prepare + measured accuracy jobs, per distinct input configuration
    group_estimate_s: float  # the longest group's estimated time
    group_runtime_limit_s: float | None  # what the profile asks SLURM for, first attempt

    @property
    def allocations(self) -> int:
        return self.profile_allocations + self.idle_allocations + self.catalog_allocations


@dataclass
class Plan:
    models: int
    methods: int
    batch_sizes: dict[str, int]  # phase -> batch sizes measured in it
    configurations: int
    config_min_s: float  # minimum measuring time of one configuration
    config_estimate_s: float  # estimated wall time of one configuration
    model_job_s: float  # one model's profile job, estimated
    devices: list[DevicePlan]
    catalog_s: float
    analysis_s: float
    slurm: SlurmPlan | None = None
    notes: list[str] = field(default_factory=list)
    calibrated_config_s: float | None = None  # mean configuration from measured step times
    at_cap_s: float | None = None  # total_s if every configuration ran max_repeats windows
    made: frozenset[str] = frozenset()  # stages a run here has made already (made_here)

    @property
    def measuring_min_s(self) -> float:
        return sum(d.measuring_min_s for d in self.devices)

    @property
    def measuring_wall_s(self) -> float:
        """One host: the GPUs at once (the longest), each CPU device on its own."""
        host = sum(d.estimate_s for d in self.devices if d.is_host)
        gpus = [d.estimate_s for d in self.devices if not d.is_host]
        return host + max(gpus, default=0.0)

    @property
    def one_at_a_time_s(self) -> float:
        """What the same study took when every measurement waited for the last."""
        return sum(d.estimate_s for d in self.devices) + self.catalog_s + self.analysis_s

    @property
    def total_s(self) -> float:
        return self.measuring_wall_s + self.catalog_s + self.analysis_s


def _methods(config: dict) -> dict[str, dict]:
    """The study's methods, sweeps expanded as the profile job expands them."""
    from joulebench.core.methods import expand_methods

    return expand_methods(config["methods"])


def _phase_configs(config: dict) -> list[tuple[str, str, dict, int]]:
    """(phase, method, spec, batch size) measured per model, each method's batch sizes
    together as a job measures them (ProfileJob.measurement_order); train runs PyTorch
    only."""
    out = []
    train_sizes = (config.get("train") or {}).get("batch_sizes")
    for phase in config.get("phases") or PHASES[:1]:
        sizes = train_sizes if phase == "train" and train_sizes else config["batch_sizes"]
        for name, method in _methods(config).items():
            exported = (method or {}).get("runtime") not in (None, "pytorch")
            if phase == "train" and exported:
                continue  # a skipped row, not a measurement
            out += [(phase, name, method or {}, int(b)) for b in sizes]
    return out


def slurm_settings(profile_dir: str | Path) -> tuple[int, float | None]:
    """(models per profile allocation, the profile job's runtime in s at attempt 1)."""
    profile = read_yaml(Path(profile_dir) / "config.yaml")  # ConfigError: one line
    group = (profile.get("groups") or {}).get("profile")
    components = profile.get("group-components") or {}
    if isinstance(components, list):  # the command line's form: ["measure=8"]
        components = dict(item.split("=", 1) for item in components)
    size = int(components.get(group, 1)) if group else 1
    runtime = ((profile.get("set-resources") or {}).get("profile") or {}).get("runtime")
    return size, _minutes_at_first_attempt(runtime)


def _minutes_at_first_attempt(value) -> float | None:
    """`60 * attempt`, `60` or `"1h"`-less plain minutes -> seconds at attempt 1."""
    if value is None:
        return None
    text = str(value).replace(" ", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:\*attempt)?", text) or re.fullmatch(
        r"attempt\*(\d+(?:\.\d+)?)", text
    )
    return float(match[1]) * 60 if match else None


def plan_study(
    config: dict,
    models: list[str],
    devices: dict,
    slurm_profile: str | Path | None,
    native: dict[str, NativePrecisions | None] | None = None,
    steps: dict | None = None,
    done: dict | None = None,
    at_cap: bool = False,
    load: HostLoad | None = None,
) -> Plan:
    """The plan of a study whose models and devices are resolved (see the module doc):
    label -> device string, or label -> a pool's devices (devices.resolve_pools);
    `native`: label -> what the device runs natively (emulation.native_by_label);
    `steps`: (label, model) -> {(phase, method, batch size): calibrate.StepTime} measured
    here (`--calibrate`); `done`: (label, model) -> (configurations, seconds) of models
    already measured (measured_rows): counted as done, not estimated."""
    from joulebench.schedule.devices import as_pools

    pools = as_pools(devices)
    raw = config.get("protocol")
    configs = _phase_configs(config)
    idle_pre_s, idle_s, split, check_first, wait_s, reference = _job_keys(config)
    load = replace(load or HostLoad(), wait_s=wait_s)
    n_models = len(models)
    device_plans = [
        _device_plan(
            label,
            members,
            models,
            configs,
            sized_settings(raw, meter_of(label, members[0]), at_cap),
            idle_pre_s,
            idle_s,
            native,
            steps,
            done,
            split,
            first_check_s(check_first, members[0]) + first_reference_s(reference, members[0]),
            load,
        )
        for label, members in pools.items()
    ]
    host_settings = sized_settings(raw, meter_of("", "cpu"), at_cap)
    host = _device_plan(
        "", ["cpu"], ["one"], configs, host_settings, idle_pre_s, idle_s, None, None, None,
        "model", 0.0,
    )  # fmt: skip
    per_job = int(
        (config.get("catalog") or {}).get("models_per_job", default("catalog.models_per_job"))
    )
    catalog_jobs = math.ceil(n_models / per_job)
    plan = Plan(
        models=n_models,
        methods=len(_methods(config)),
        batch_sizes=_batch_counts(configs),
        configurations=sum(d.configurations for d in device_plans),
        config_min_s=config_min_s(device_plans[0].settings if device_plans else host_settings),
        config_estimate_s=_per_config_s(device_plans or [host], len(configs), idle_pre_s),
        model_job_s=max((d.model_job_s for d in device_plans), default=host.model_job_s),
        devices=device_plans,
        catalog_s=catalog_jobs * CATALOG_JOB_S + n_models * CATALOG_MODEL_S,
        analysis_s=ANALYSIS_S,
    )
    if not at_cap and any(d.settings.ci_target is not None for d in device_plans):
        capped = plan_study(config, models, devices, None, native, steps, done, True, load)
        plan.at_cap_s = capped.total_s
    plan.notes += _notes(plan, configs, device_plans)
    if load.busy and any(d.is_host for d in device_plans):
        plan.notes.append(_load_note(load))
    if steps:
        calibrated = [d for d in device_plans if d.calibrated]
        plan.calibrated_config_s = _per_config_s(calibrated, len(configs), idle_pre_s)
    if slurm_profile is not None:
        plan.slurm = _slurm_plan(config, slurm_profile, devices, n_models, catalog_jobs, plan)
    return plan


def _job_keys(config: dict) -> tuple[float, float, str, str, float, str]:
    """The profile and idle keys the plan reads, with the workflow's defaults."""
    profile = config.get("profile") or {}
    return (
        float(profile.get("idle_pre_s", IDLE_PRE_S)),
        float((config.get("idle") or {}).get("duration_s", IDLE_DURATION_S)),
        profile.get("split", DEFAULT_SPLIT),
        profile.get("check_first", CHECK_FIRST_DEFAULT),
        float(profile.get("quiet_wait_s", WAIT_S)),
        profile.get("board_reference", BOARD_REFERENCE_DEFAULT),
    )


def _batch_counts(configs) -> dict[str, int]:
    """How many batch sizes each phase measures."""
    sizes: dict[str, set] = {}
    for phase, _, _, batch in configs:
        sizes.setdefault(phase, set()).add(batch)
    return {phase: len(batches) for phase, batches in sizes.items()}


def _load_note(load: HostLoad) -> str:
    return (
        f"host: other processes used {load.share:.0%} of the CPUs as this plan was made: "
        f"counted for the CPU (a wait of up to {load.wait_s:g} s per job for them to stop, "
        f"windows to the cap, warm-ups of ~{load.warmup_s:g} s: throughput steadies slowly "
        "beside them)"
    )


def _model_job_s(jobs_s, left_models: int, parts: int, guess, ratio, idle_pre_s) -> float:
    """One model's profile job: the mean of those left; where none is (a finished run), one
    as this device would run it now: its configurations' estimates, scaled by what the
    measured ones took (so "per model job" and a SLURM group's time never read 0 s)."""
    if left_models:
        return sum(jobs_s) / left_models
    return parts * (JOB_START_S + idle_pre_s) + (ratio or 1.0) * sum(guess)


def _per_config_s(device_plans, n_configs: int, idle_pre_s: float) -> float | None:
    """One configuration's wall time in a model job (its start-up and idle read out), the
    mean over `device_plans` (a GPU's windows follow its sensor's refreshes); None for
    none."""
    per = [
        (d.model_job_s - d.jobs_per_model * (JOB_START_S + idle_pre_s)) / max(n_configs, 1)
        for d in device_plans
    ]
    return sum(per) / len(per) if per else None


def _device_plan(
    label, members, models, configs, settings, idle_pre_s, idle_s, native, steps, done, split,
    check_s=0.0, load=HostLoad(),
):  # fmt: skip
    """One device (or pool): each job (a model, or a method of it: job_parts) from its
    configurations' estimates (calibrated where `steps` has the model), jobs already
    measured counted as done; a pool's GPUs take the jobs left as they come free (list
    scheduling, as Snakemake hands them out), each GPU's first job checking it first
    (`check_s`, jobs.first_check: the GPUs at once, so once on the wall; not where the
    device has measured rows already)."""
    device, gpus = members[0], len(members)
    is_host = _is_host(device)
    skip, why = _emulated(configs, (native or {}).get(label))
    refresh_s = None if is_host else DEFAULT_REFRESH_S
    load = load if is_host else HostLoad()  # a GPU's windows need no host
    if load.busy and settings.ci_target is not None:  # a noisy host runs to the cap
        settings = replace(settings, ci_target=None, repeats=settings.max_repeats)
    parts = _parts(configs, split, len(models), gpus)
    guess = _config_costs(settings, configs, skip, refresh_s, None, load.warmup_s)
    done = done or {}
    done_n, done_s, guess_done_s, pending = 0, 0.0, 0.0, []
    for model in models:
        for method, indices in parts:
            if (label, job_key(model, method)) not in done:
                pending.append((model, indices))
                continue
            configs_n, seconds = done[(label, job_key(model, method))]
            done_n, done_s = done_n + configs_n, done_s + seconds
            guess_done_s += sum(guess[i] for i in indices)
    ratio = _learned_ratio(done_s, guess_done_s)
    timed = {m: (steps or {}).get((label, m)) for m, _ in pending}  # calibrated, or None
    costs = {
        m: guess
        if t is None
        else _config_costs(settings, configs, skip, refresh_s, t, load.warmup_s)
        for m, t in timed.items()
    }
    jobs_s = []
    for model, indices in pending:
        scale = ratio if ratio is not None and timed[model] is None else 1.0
        start_s = JOB_START_S + idle_pre_s + (load.wait_s if load.busy else 0.0)
        jobs_s.append(start_s + scale * sum(costs[model][i] for i in indices))
    left_models, calibrated = len(timed), sum(t is not None for t in timed.values())
    started = any(key[0] == label for key in done)
    idle_job_s = 0.0 if started else JOB_START_S + idle_s
    check_s = 0.0 if started or not jobs_s else check_s
    measured = sum(not skip[i] for _, indices in pending for i in indices)  # left to measure
    return DevicePlan(
        label,
        device,
        is_host,
        configurations=len(models) * len(configs),
        measuring_min_s=measured * config_min_s(settings),
        estimate_s=idle_job_s + check_s + _makespan_s(jobs_s, gpus),
        skipped=len(models) * sum(skip),
        model_job_s=_model_job_s(jobs_s, left_models, len(parts), guess, ratio, idle_pre_s),
        skipped_why=why,
        gpus=gpus,
        done=done_n,
        done_s=done_s,
        calibrated=calibrated,
        one_gpu_s=idle_job_s + check_s + sum(jobs_s),
        check_s=check_s,
        settings=settings,
        learned_ratio=ratio,
        jobs_per_model=len(parts),
        job_s=sum(jobs_s) / len(jobs_s) if jobs_s else 0.0,
    )


def _parts(configs, split: str, models: int, gpus: int) -> list[tuple[str | None, list[int]]]:
    """The jobs of one model: (method key or None for the whole model, the indices of its
    configurations), as job_parts.job_methods splits it."""
    keys = [config_key(name) for _, name, _, _ in configs]
    parts = job_methods(split, models, gpus, list(dict.fromkeys(keys)))
    return [(m, [i for i, k in enumerate(keys) if m in (None, k)]) for m in parts]


def _learned_ratio(done_s: float, estimated_s: float) -> float | None:
    """Measured / estimated seconds of the models done (None when none is), kept within
    LEARNED_RATIO_RANGE: one slow model must not make the plan of a thousand absurd."""
    if not (estimated_s > 0 and done_s > 0):
        return None
    low, high = LEARNED_RATIO_RANGE
    return min(max(done_s / estimated_s, low), high)


def _config_costs(
    settings: ProtocolSettings, configs, skip, refresh_s, steps: dict | None, warmup_s=0.0
) -> list[float]:
    """Each configuration's estimate (config_time.config_cost): a method's first batch size
    with the full warm-up, the ones after it the short one; its step time and build time
    where calibrated; a skipped one SKIPPED_CONFIG_S; each warm-up at least `warmup_s` (a
    busy host: HostLoad)."""
    kinds = warmup_kinds([(phase, name) for phase, name, _, _ in configs])
    out = []
    for (phase, name, spec, batch), skipped, kind in zip(configs, skip, kinds, strict=True):
        if skipped:
            out.append(SKIPPED_CONFIG_S)
            continue
        timed = (steps or {}).get((phase, name, batch))
        cost = config_cost(
            settings,
            step_s=timed.step_s if timed else None,
            build_s=timed.build_s if timed else None,
            refresh_s=refresh_s,
            warmup=kind,
            compile_=bool(spec.get("compile")),
        )
        out.append(cost.total_s + max(warmup_s - cost.warmup_s, 0.0))
    return out


def _makespan_s(jobs_s: list[float], gpus: int) -> float:
    """When the last of `jobs_s` ends on `gpus` devices, each taking the next job in turn as
    it comes free; equal jobs: ceil(jobs / gpus) of them in a row."""
    free = [0.0] * max(gpus, 1)
    for seconds in jobs_s:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def sized_settings(protocol: dict | None, meter: str, at_cap: bool = False) -> ProtocolSettings:
    """The study's protocol on a kind of meter (protocol.METER_SIZED), as a device's job
    sizes it; `at_cap`: every configuration running max_repeats windows (a CI target
    counts windows at a typical CV; a noisy host, a shared VM's CPU or a host-bound GPU
    load, runs to the cap)."""
    settings = ProtocolSettings.from_dict(protocol, meter)
    if at_cap and settings.ci_target is not None:
        settings = replace(settings, ci_target=None, repeats=settings.max_repeats)
    return settings


def meter_of(label: str, device: str) -> str:
    """The kind of meter a device's jobs will read (protocol.METER_KINDS): a GPU's sensor;
    on the host's CPU RAPL where readable (a counter), else the estimate."""
    backend = kind_of(device)
    if not backend.is_host:
        return "sensor"
    try:
        info = backend.describe(label, device, Libraries())
    except Exception:  # a CPU that cannot be described: the estimate, the likelier
        return "estimate"
    return "estimate" if str(info.meter or "").startswith(ESTIMATE_METER_PREFIX) else "counter"


def _notes(plan: Plan, configs, device_plans) -> list[str]:
    notes = []
    targeted = [d for d in device_plans if d.settings.ci_target is not None]
    if targeted:
        counted, unknown = [], None
        for host in sorted({d.is_host for d in targeted}, reverse=True):
            settings = next(d.settings for d in targeted if d.is_host == host)
            refresh_s = None if host else DEFAULT_REFRESH_S
            window = window_s(settings, None, refresh_s)
            n = repeats_needed(settings, refresh_s, window)
            if host:
                counted.append(f"{n} for a CPU's meter at a typical CV")
                continue
            slow = repeats_needed(settings, refresh_s, window, step_s=refresh_s)
            counted.append(f"{n} for a GPU's sensor at its expected CV")
            if slow != n:
                counted[-1] += (
                    f" where a batch is short, {slow} where it is over "
                    f"{EDGE_STEP_SHARE:g} of a refresh"
                )
                if any(not d.is_host and not d.calibrated for d in device_plans):
                    unknown = (
                        f"step times: unknown, so every GPU batch is counted as short ({n} "
                        f"windows); a batch over {EDGE_STEP_SHARE:g} of a refresh takes "
                        f"about {slow}, and makes the study longer (`--calibrate` on the "
                        "GPU times them)"
                    )
        caps = "/".join(str(c) for c in sorted({d.settings.max_repeats for d in targeted}))
        notes.append(
            f"ci_target: counted the windows the target needs ({', '.join(counted)}; at "
            f"least 3); up to {caps} may run (if every configuration ran them, as on a noisy "
            f"host: ~{format_duration(plan.at_cap_s)} in all)"
        )
        notes += [unknown] if unknown else []
    notes += [_skipped_note(d) for d in device_plans if d.skipped]
    checked = [d for d in device_plans if d.check_s]
    if checked:
        each = ", ".join(f"{d.label} ~{format_duration(d.check_s)}" for d in checked)
        notes.append(
            f"check_first, board_reference: each GPU is checked once before its first job "
            f"(its heat and power tail) and reads its reference levels once ({each}; the GPUs "
            "of a pool at once), counted in its estimate; a GPU with a kept check or reading "
            "skips them (profile.check_first, profile.board_reference: off never does)"
        )
    if plan.configurations > 1000:
        notes.append("analysis: measured on a small study; a large summary takes longer")
    if any(spec.get("runtime") not in (None, "pytorch") for _, _, spec, _ in configs):
        notes.append("exported runtimes: ONNX export and TensorRT engine builds not counted")
    return notes


def _slurm_plan(config, slurm_profile, devices, n_models, catalog_jobs, plan) -> SlurmPlan:
    size, limit_s = slurm_settings(slurm_profile)
    return SlurmPlan(
        profile_dir=str(slurm_profile),
        group_size=size,
        profile_allocations=len(devices) * math.ceil(n_models / size),
        idle_allocations=len(devices),
        catalog_allocations=catalog_jobs,
        dataset_jobs=(config.get("dataset") or {}).get("kind") not in (None, "synthetic"),
        group_estimate_s=min(size, n_models) * plan.model_job_s,
        group_runtime_limit_s=None if limit_s is None else limit_s * min(size, n_models),
    )


def _emulated(configs, native: NativePrecisions | None) -> tuple[list[bool], dict[str, str]]:
    """Which configurations are skipped where `native` was read, and why (by precision)."""
    skip, why = [], {}
    for _, _, spec, _ in configs:
        method = parse_methods({"method": spec})["method"]
        skip.append(bool(verdict(method, native).skip_reason))
        if skip[-1]:
            why[method.precision] = native.why_not.get(method.precision, native.basis)
    return skip, why


def _skipped_note(device: DevicePlan) -> str:
    """The plan's note on a device's skipped configurations: which precisions and why (tf32,
    which nothing forces, apart from those only emulated)."""
    parts = []
    for absent in (False, True):
        why = {p: t for p, t in device.skipped_why.items() if (p in NATIVE_ONLY) == absent}
        if not why:
            continue
        reasons = [text if len(why) == 1 else f"{p}: {text}" for p, text in why.items()]
        verb = "does not run" if len(why) == 1 else "do not run"
        if not absent:
            verb = f"{'is' if len(why) == 1 else 'are'} only emulated"
        force = (
            "nothing forces it" if absent else f"{FORCE_KEY}: true on a method measures it anyway"
        )
        parts.append(f"{' and '.join(why)} {verb} here ({'; '.join(reasons)}); {force}")
    return f"{device.label}: {quantity(device.skipped, 'configuration')} skipped (~0 s each): " + (
        "; ".join(parts)
    )


def _count_line(plan: Plan) -> str:
    phases = plan.batch_sizes
    if len(set(phases.values())) <= 1:
        sizes = next(iter(phases.values()), 0)
        batch = f"{quantity(sizes, 'batch size')} x {quantity(len(phases), 'phase')}"
    else:
        batch = "(" + " + ".join(f"{n} {p}" for p, n in phases.items()) + " batch sizes)"
    skipped = sum(d.skipped for d in plan.devices)
    return (
        f"{quantity(plan.configurations, 'configuration')} = "
        f"{quantity(len(plan.devices), 'device')} x {quantity(plan.models, 'model')} x "
        f"{quantity(plan.methods, 'method')} x {batch}"
        + (f" ({skipped:,} skipped: emulated here)" if skipped else "")
    )


def one_line(plan: Plan) -> str:
    """The workflow's first line: what this run will cost at most (a resumed run: what is
    left, its measured configurations counted as done)."""
    done = sum(d.done for d in plan.devices)
    left = f" left ({quantity(done, 'configuration')} measured already)" if done else " in all"
    if all(d.finished for d in plan.devices):
        return f"{_count_line(plan)}; all measured already (`joulebench plan` explains)"
    return (
        f"{_count_line(plan)}; measuring >= {format_duration(plan.measuring_min_s)}, "
        f"estimated {format_duration(plan.total_s)}{left} (`joulebench plan` explains)"
    )


def format_plan(plan: Plan) -> str:
    """The table `joulebench plan` prints."""
    lines = [
        _count_line(plan),
        f"per configuration: >= {format_duration(plan.config_min_s)} measuring (the protocol), "
        f"~{format_duration(plan.config_estimate_s)} with build, warm-up and pauses"
        + (
            f" (~{format_duration(plan.calibrated_config_s)} at the step times measured here)"
            if plan.calibrated_config_s is not None
            else ""
        ),
        f"per model job: ~{format_duration(plan.model_job_s)} with start-up and idle read",
        "",
        f"{'device':<12} {'torch':<8} {'configurations':>14} {'measuring >=':>13} "
        f"{'estimated':>12}",
    ]
    for d in plan.devices:
        torch = d.device if d.gpus == 1 else f"{d.gpus} GPUs"
        lines.append(
            f"{d.label:<12} {torch:<8} {d.configurations:>14,} "
            f"{_time(d.measuring_min_s, d.finished, '-'):>13} {_time(d.estimate_s, d.finished):>12}"
        )
    for stage, seconds in (("catalog", plan.catalog_s), ("analysis", plan.analysis_s)):
        lines.append(
            f"{stage:<12} {'':<8} {'':>14} {'':>13} {_time(seconds, stage in plan.made):>12}"
        )
    finished = _finished(plan)
    lines.append(
        f"{'total':<12} {'':<8} {plan.configurations:>14,} "
        f"{_time(plan.measuring_min_s, finished, '-'):>13} {_time(plan.total_s, finished):>12}"
    )
    lines += [_pool_line(plan, d) for d in plan.devices if d.gpus > 1]
    gpus = sum(1 for d in plan.devices if not d.is_host)
    pooled = any(d.gpus > 1 for d in plan.devices)
    if gpus > 1:
        lines.append(
            f"(one host: the {gpus} GPU devices measure at once, each every model; one at a "
            f"time would take {format_duration(plan.one_at_a_time_s)})"
        )
    elif not pooled and gpus < len(plan.devices):  # a pool's own line says how it shares
        lines.append("(one host: a CPU device measures alone; GPUs would measure at once)")
    if plan.slurm:
        s = plan.slurm
        dataset = " + dataset jobs (2 per input configuration)" if s.dataset_jobs else ""
        lines += [
            "",
            f"SLURM ({s.profile_dir}): {s.allocations:,} allocations = "
            f"{quantity(s.profile_allocations, 'profile group')} of up to "
            f"{quantity(s.group_size, 'model')} + "
            f"{s.idle_allocations} idle + {s.catalog_allocations} catalog{dataset}",
            f"  a group takes ~{format_duration(s.group_estimate_s)}"
            + (
                f" of the {format_duration(s.group_runtime_limit_s)} it asks for"
                if s.group_runtime_limit_s
                else ""
            ),
        ]
        check_s = max((d.check_s for d in plan.devices), default=0.0)
        if check_s:
            lines.append(
                f"  plus ~{format_duration(check_s)} where a group is the first on a GPU (its "
                "check and reference readings, once per GPU: profile.check_first, "
                "profile.board_reference)"
            )
        if s.group_runtime_limit_s and s.group_estimate_s > s.group_runtime_limit_s:
            lines.append(
                "  WARNING: longer than its runtime limit: raise set-resources.profile.runtime"
            )
    lines += [_done_line(d) for d in plan.devices if d.done]
    lines += ["", _basis_line(plan)]
    lines += [f"Note: {note}" for note in plan.notes]
    return "\n".join(lines)


def _time(seconds: float, done: bool, said: str = "done") -> str:
    """A time of the plan's table, or `said` for what a run here has made already (never a
    bare 0 s beside a total that is not)."""
    return said if done else format_duration(seconds)


def _finished(plan: Plan) -> bool:
    """Nothing left: every device measured, the catalog and the analysis made (less_made)."""
    return plan.made >= {"catalog", "analysis"} and all(d.finished for d in plan.devices)


def _done_line(d: DevicePlan) -> str:
    """What a resumed run has already measured on a device: not in its estimate."""
    ratio = "" if d.learned_ratio is None else f", {d.learned_ratio:.2f}x their estimate"
    measured = f"{quantity(d.done, 'configuration')} already measured (results/profile)"
    if d.finished:
        return f"({d.label}: done: {measured}, in {format_duration(d.done_s)}{ratio})"
    scaled = ", so what is left is scaled by it" if ratio else ""
    return (
        f"({d.label}: {measured}, in {format_duration(d.done_s)}{ratio}{scaled}; `estimated` "
        "is what is left)"
    )


def _basis_line(plan: Plan) -> str:
    """What the estimate stands on: the protocol's rules, and step times if calibrated."""
    calibrated = sum(d.calibrated for d in plan.devices)
    if not calibrated:
        return (
            "Estimated from the protocol's rules (windows bounded by time: step times unknown; "
            "`--calibrate` measures them) and overheads measured on a CPU (docs/plan.md)."
        )
    return (
        f"Estimated from the protocol's rules with step and build times measured here "
        f"(--calibrate: {quantity(calibrated, 'model job')}) and overheads measured on a CPU "
        f"(docs/plan.md)."
    )


def _pool_line(plan: Plan, d: DevicePlan) -> str:
    """How a pool divides its work: each model once, its jobs (a model's, or one per model
    and method) shared by its GPUs."""
    jobs = f"the {quantity(plan.models, 'model')}"
    if d.jobs_per_model > 1:
        owner = "the model's" if plan.models == 1 else f"the {plan.models:,} models'"
        jobs = (
            f"{owner} {plan.models * d.jobs_per_model:,} jobs (one per model and method: "
            "profile split)"
        )
    return (
        f"(pool {d.label}: its {d.gpus} GPUs share {jobs}, each measured once by whichever "
        f"GPU is free, one job at a time each (~{format_duration(d.job_s)} a job): "
        f"{format_duration(d.estimate_s)} where one GPU would take "
        f"{format_duration(d.one_gpu_s)}; `measuring >=` is all its GPUs' time together)"
    )


def _is_host(device: str) -> bool:
    """The host's CPU measures alone (it takes every measuring slot); GPUs measure at once."""
    return kind_of(device).is_host


def with_gpus(devices: dict, gpus: int) -> dict[str, list[str]]:
    """The study's devices on a node with `gpus` GPUs like its first one, as `auto` would
    pick them: one pool of `gpus` under the first GPU's label; its CPU device, if any,
    stays."""
    from joulebench.schedule.devices import as_pools

    if gpus < 1:
        raise ConfigError(f"--gpus must be >= 1, got {gpus}")
    pools = as_pools(devices)
    first = next((label for label, m in pools.items() if not _is_host(m[0])), None)
    if first is None:
        raise ConfigError("--gpus needs a study with a GPU device (its devices: are all cpu)")
    kind = pools[first][0]
    out = {label: m for label, m in pools.items() if _is_host(m[0])}
    out[first] = [kind_of(kind).sibling(kind, i) for i in range(gpus)]
    return out


def measured_rows(directory: Path, labels) -> dict[tuple[str, str], tuple[int, float]]:
    """(label, job key) -> (configurations, seconds) of the jobs a run in `directory` has
    measured (a job key is its rows file's name: the model, or model+method, job_parts): a
    profile job writes its rows file last, so a job with one is done. Its seconds are its
    rows' own (start to end of each configuration), so a resumed run's plan says what is
    done as it took and estimates only what is left."""
    import pandas as pd

    out = {}
    for label in labels:
        for path in sorted((directory / "results" / "profile" / label / "rows").glob("*.parquet")):
            try:
                rows = pd.read_parquet(path, columns=["start_time_utc", "end_time_utc"])
            except Exception:  # a file being written, or of an older layout: not counted
                continue
            if rows.empty:
                continue
            out[(label, path.stem)] = (len(rows), float(seconds_taken(rows).sum()))
    return out


def made_here(directory: Path, models: list[str]) -> frozenset[str]:
    """What a run in `directory` has made that a rerun of the study would not make again:
    "catalog" where its table lists every model; "page" where its web page exists (the
    analysis is made again while anything is left, or when a score, fits or figure setting
    changed, which the plan cannot see)."""
    import pandas as pd

    made = set()
    try:
        listed = set(pd.read_parquet(directory / CATALOG.path, columns=["model"])["model"])
    except Exception:  # none yet, or being written: the catalog is left to make
        listed = set()
    if models and listed >= set(models):
        made.add("catalog")
    if (directory / PAGE_PATH).is_file():
        made.add("page")
    return frozenset(made)


def less_made(plan: Plan, made: frozenset[str]) -> Plan:
    """`plan` less what a run here has made already (`made_here`): its catalog, and its
    analysis where every device is finished and the catalog and page are made."""
    catalog = "catalog" in made
    analysis = catalog and "page" in made and all(d.finished for d in plan.devices)
    done = frozenset({"catalog"} if catalog else set()) | ({"analysis"} if analysis else set())
    return replace(
        plan,
        catalog_s=0.0 if catalog else plan.catalog_s,
        analysis_s=0.0 if analysis else plan.analysis_s,
        made=done,
    )


def calibrate(config: dict, models: list[str], pools: dict, done: dict, log) -> dict:
    """(label, model) -> step times (calibrate.calibrate_model) of every model not measured
    yet, on each device's first member; `log` prints one line per model."""
    import time

    from joulebench.catalog.workloads import is_workload
    from joulebench.jobs.calibrate import calibrate_model

    sizes: dict[str, list[int]] = {}
    for phase, _, _, batch in _phase_configs(config):
        sizes.setdefault(phase, [])
        if batch not in sizes[phase]:
            sizes[phase].append(batch)
    out = {}
    for label, members in pools.items():
        measured = {parse_job_key(key)[0] for lab, key in done if lab == label}
        left = [m for m in models if m not in measured]
        for i, model in enumerate(left, 1):
            start = time.perf_counter()
            workload = model if is_workload(model) else None
            steps = calibrate_model(
                model, label, members[0], _methods(config), sizes, workload=workload
            )
            out[(label, model)] = steps
            timed = ", ".join(
                f"{m} bs{b} {t.step_s * 1e3:.0f} ms" for (_, m, b), t in steps.items()
            )
            build_s = sum(t.build_s for t in steps.values())
            log(
                f"calibrate {i}/{len(left)} {model} on {label}: {timed or 'nothing runs'} "
                f"({time.perf_counter() - start:.1f} s, {build_s:.1f} s of it building)"
            )
    return out


def plan_for(
    configfile: str | None = None,
    profile: str | None = None,
    gpus: int | None = None,
    calibrated: bool = False,
    log=None,
    budget_h: float | None = None,
) -> str:
    """`joulebench plan`: what the study (config.yaml, or a study file over it) costs, with
    its SLURM allocations from `profile` (default profiles/slurm); `gpus`: as if on a node
    with that many GPUs like the study's first (see with_gpus); `calibrated`: each
    configuration run for a moment on its device first (`calibrate`, progress to `log`);
    `budget_h`: the study's budget in device-hours (joulebench.selection), said what it buys.
    Models already measured in this directory's results/ are counted as done."""
    import time

    from joulebench.catalog.models import resolve_models
    from joulebench.core.emulation import native_by_label
    from joulebench.prerun import load_study
    from joulebench.schedule.devices import as_pools, representatives, resolve_pools
    from joulebench.study import workflow_root

    config = load_study(configfile)
    if config.get("from_summary"):
        return "from_summary: nothing is measured (scores, fits, figures and the page only)"
    models = resolve_models(config["models"])
    devices = resolve_pools(config["devices"])
    if gpus is not None:
        devices = with_gpus(devices, gpus)
    budget = ""
    if budget_h is not None or (config.get("budget") or {}).get("gpu_h") is not None:
        models, budget = _budgeted(config, models, as_pools(devices), budget_h)
    native = native_by_label(representatives(devices))
    slurm = Path(profile or workflow_root() / "profiles" / "slurm")
    if slurm.resolve().is_relative_to(Path.cwd()):
        slurm = slurm.resolve().relative_to(Path.cwd())
    done = measured_rows(Path.cwd(), as_pools(devices))
    steps, took = None, ""
    if calibrated:
        start = time.perf_counter()
        steps = calibrate(config, models, as_pools(devices), done, log or print)
        took = f"calibration: {format_duration(time.perf_counter() - start)}\n"
    study = configfile or "config.yaml (the default study)"
    load = HostLoad(cpu_others_share())  # the host as it is now
    plan = plan_study(config, models, devices, slurm, native, steps, done, load=load)
    plan = less_made(plan, made_here(Path.cwd(), models))
    if budget:  # the catalog covers every model: the predicted ones are predicted from it
        plan.catalog_s = catalog_s(config, len(resolve_models(config["models"])))
    return f"study: {study}\n{took}{budget}" + format_plan(plan)


def _budgeted(config: dict, models: list[str], pools: dict, budget_h) -> tuple[list[str], str]:
    """The models a budget buys (joulebench.selection), and the lines saying so."""
    from joulebench.selection import budget_lines, select

    if budget_h is not None:
        config = {**config, "budget": {"gpu_h": budget_h}}
    chosen = select(config, models, pools, Path.cwd() / "results", model_costs_s)
    return chosen.models, "\n".join(budget_lines(chosen, config, len(models))) + "\n"


def model_costs_s(config: dict, models: list[str], pools: dict) -> tuple[float, float]:
    """(one model's planned cost, the study's one-offs) in device-seconds: a model's job on
    every device of the study; each GPU's check and reference readings, once."""
    plan = plan_study(config, models[:1] or ["one"], pools, None)
    return (
        sum(d.model_job_s for d in plan.devices),
        sum(d.check_s * d.gpus for d in plan.devices),
    )


def catalog_s(config: dict, n_models: int) -> float:
    """The catalog stage's estimate: every model of the study, measured or predicted."""
    per_job = int(
        (config.get("catalog") or {}).get("models_per_job", default("catalog.models_per_job"))
    )
    return math.ceil(n_models / per_job) * CATALOG_JOB_S + n_models * CATALOG_MODEL_S
