"""The profile stage: energy and time per image of one model, for each phase x method x batch size.

One process measures all configurations of a model (imports cost seconds; measuring a
configuration costs tens of seconds), each under the measurement protocol, with a fresh
model and a fresh meter per configuration. A failing configuration (out of memory, build
or compile error, a runtime that is not installed or disagrees with PyTorch) becomes a row
with a status and a reason; it never ends the job.

Phases: "inference" (a forward pass; energy per image) and "train" (forward, cross-entropy
backward and an optimizer step, joulebench.core.train; energy per training sample). The model is
a timm model, or a custom workload (joulebench.catalog.workloads) when the job names one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from joulebench.core.arithmetic import applied as arithmetic_applied
from joulebench.core.arithmetic import arithmetic_for
from joulebench.core.backends import BoundDevice, KnobControl, KnobRefused, bound_device
from joulebench.core.emulation import method_verdict
from joulebench.core.heat import from_report as heat_from_report
from joulebench.core.host_bound import host_bound_fields
from joulebench.core.knobs import applied, restore_leftover
from joulebench.core.methods import Method
from joulebench.core.protocol import (
    DEFAULT_PRESET,
    BoardState,
    ProtocolSettings,
    measure,
    measure_idle,
    meter_kind,
)
from joulebench.core.provenance import software, utc_now
from joulebench.core.quiet import QuietGate, cpu_busy, meter_busy
from joulebench.core.runtimes import (
    STATUS_ERROR,
    STATUS_SKIPPED,
    NotMeasured,
    check_forward,
    is_oom,
)
from joulebench.core.tail import from_report as tail_from_report
from joulebench.flags import (
    FLAG_SIMULATED,
    FLAG_TRAIN_LOSS_NOT_FINITE,
    join_flags,
)
from joulebench.jobs.board_reference import BOARDS_DIR, reference_for
from joulebench.jobs.config_time import (
    WARMUP_FULL,
    WARMUP_SHORT,
    Eta,
    config_cost,
    warmup_kinds,
)
from joulebench.jobs.first_check import report_for
from joulebench.jobs.gpu_faults import fault_kind
from joulebench.jobs.hangs import HangRule, method_label
from joulebench.jobs.job_spec import JobSpec
from joulebench.jobs.supervise import (
    GPU_FAULT,
    STATUS_NOT_MEASURED,
    TIMEOUT_FLOOR_S,
    deadline_s,
    emit,
    in_worker,
)
from joulebench.safe_text import quantity
from joulebench.table_io import conform, empty_frame, read_table, write_table
from joulebench.tables import (
    PROFILE_COLUMNS,
    REPEAT_TABLE_COLUMNS,
    STATUS_INVALID,
    TRACE_TABLE_COLUMNS,
    fingerprint_of,
    impossible_energy,
    short_reason,
)

SEED = 0  # random weights and batches: every method and runtime of a model sees the same


@dataclass(frozen=True)
class ProfileJob:
    """One profile job: its spec (jobs.job_spec: what the study asks, typed) and what is
    the job's own (the model, the device's label, the idle baseline, torch's threads, where
    checks and boards' readings are kept); frozen, what lives while it runs is its
    JobSession's."""

    model: str
    device_label: str
    spec: JobSpec
    idle_power_w: float = math.nan  # the device's idle baseline (results/idle), else idle_pre's
    threads: int | None = None  # torch CPU threads; None leaves torch's default
    check_dir: str = "results/check"  # where `joulebench check` left its reports
    boards_dir: str = BOARDS_DIR  # where boards' reference readings are kept

    def bind_device(self) -> BoundDevice:
        """The job's device bound to its backend (DeviceError for a string none serves):
        made once, by whoever runs the job (its JobSession holds it); a forced meter picks
        among the kinds sharing its spelling."""
        return bound_device(self.spec.torch_device, self.device_label, prefer=self.spec.meter)

    def configs_ask_knobs(self) -> bool:
        return any(m.knobs for m in self.spec.methods)

    def configs(self) -> list[tuple[str, Method, int]]:
        """(phase, method, batch size) in the order they are measured."""
        spec = self.spec
        out = []
        for phase in spec.phases:
            sizes = spec.batch_sizes
            if phase == "train" and spec.train.batch_sizes is not None:
                sizes = list(spec.train.batch_sizes)
            out += [(phase, m, b) for m in spec.methods for b in sizes]
        return out

    def measurement_order(self) -> list[int]:
        """Indices of `configs()` in the order they are measured: within each phase the
        methods in a shuffled order, and each method's batch sizes back to back in a shuffled
        order of their own, seeded by the model and the device label, so a job repeats its
        own order. A fixed order (bf16 always after fp32, batch 8 after batch 1) would make
        the heat the previous configurations left behind a function of the configuration;
        shuffled, what the thermal state leaves is noise across configurations, not a bias.
        Back to back, a method's following batch sizes need only a short warm-up
        (`JobSession.warmup_for`). Each row records its place (`config_order`)."""
        configs = self.configs()
        rng = random.Random(f"order-{self.model}-{self.device_label}")
        order: list[int] = []
        for phase in self.spec.phases:
            names = [m.name for m in self.spec.methods]
            rng.shuffle(names)
            for name in names:
                same = [i for i, c in enumerate(configs) if c[0] == phase and c[1].name == name]
                rng.shuffle(same)
                order += same
        return order


class JobSession:
    """What lives while one job runs, as a context manager around it: the job's device,
    bound once; its meters (`meter()`, a fresh one per configuration, counted among the
    host's live measurements while the session is open); its knob control, opened once and
    closed on exit; and what the job's start reads (`start`): the protocol sized to its
    meter, the idle baseline, the board's heat and tail calibration and the sensor's refresh
    period. The job itself (a ProfileJob) is its frozen input."""

    def __init__(self, job: ProfileJob, device: BoundDevice):
        from joulebench.jobs.concurrency import NodeMeasurements

        self.job = job
        self.device = device
        self.settings: ProtocolSettings = job.spec.settings  # sized to the meter at the start
        # the idle baseline (else the idle read before the model) and, from the board's check,
        # its heat, the die's idle temperature and its power tail: as the protocol takes them
        self.board = BoardState(job.idle_power_w)
        self.meter_options: dict = dict(job.spec.meter_options)  # and the check's (refresh_s)
        self.refresh_s: float | None = None  # the meter's refresh period (NVML)
        self._node = NodeMeasurements(job.device_label)
        self._knobs: KnobControl | None = None
        self._knobs_opened = False

    def __enter__(self) -> JobSession:
        self._node.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._node.__exit__(*exc)
        finally:
            if self._knobs is not None:
                self._knobs.close()

    def meter(self):
        """(meter, reasons): a fresh meter of the device with the host's beside it."""
        return self.device.node_meter(
            prefer=self.job.spec.meter, concurrent=self._node.count, **self.meter_options
        )

    def knob_control(self) -> KnobControl | None:
        """The device's power limit and clock control, opened once per job; None where its
        kind has none (a CPU); KnobRefused where it has, but they cannot be reached."""
        if not self._knobs_opened:
            self._knobs = self.device.knob_control()
            self._knobs_opened = True
        return self._knobs

    def warmup_for(self, follows: bool) -> tuple[str, ProtocolSettings]:
        """(warm-up kind, settings) of a configuration: `full` (the protocol's), or `short`
        where it follows a batch size of the same phase and method that was measured: the
        model's kernels, the runtime's caches and the clocks are warm, so warmup_min_iters
        steps and the steady check suffice, without the warmup_min_s floor. The steady
        check still holds a changed batch (a new shape's autotune is its first step)."""
        if not follows:
            return WARMUP_FULL, self.settings
        return WARMUP_SHORT, replace(self.settings, warmup_min_s=0.0)

    def start(self, log) -> tuple[dict, object]:
        """The fields every row of the job shares, and the short idle read before the model.
        The device's latest check is found (by the meter's UUID): its meter options, heat,
        idle temperature and tail are the session's from here on; a GPU never referenced
        reads its reference levels once (jobs.board_reference)."""
        job = self.job
        base = self.row_base()
        restored = restore_left_by(job, self.knob_control)
        if restored:
            log(f"{job.model}: {restored}")
        meter, _ = self.meter()
        with meter:
            idle = measure_idle(meter, job.spec.idle_pre_s)
            described = meter.describe()
            refresh_s = getattr(meter, "refresh_s", None)
            kind = meter_kind(meter)
        if job.spec.protocol is not None:  # windows as long as this meter needs (METER_SIZED)
            self.settings = ProtocolSettings.from_dict(job.spec.protocol, kind)
        base.update(gpu_fields(job.spec.gpu, described))
        log(f"{job.model}: idle {idle.power_w:.1f} W before the model ({idle.meter})")
        base.update(self._calibrated(described, refresh_s, log))
        prefixed = lambda line: log(f"{job.model}: {line}")  # noqa: E731
        reference_for(self.device, described, job.boards_dir, job.spec.board_reference, prefixed)
        if not math.isfinite(self.board.idle_power_w) and math.isfinite(idle.power_w):
            # no idle job's baseline (the ad-hoc `joulebench profile`): the read before the
            # model stands in, so the phase shifts' idle time does not add its idle energy
            # to the images' (docs/protocol.md)
            self.board = replace(self.board, idle_power_w=float(idle.power_w))
        return base, idle

    def row_base(self) -> dict:
        """The fields of the job and its device that every row of it shares."""
        import torch

        job = self.job
        return {
            "device_label": job.device_label,
            "device_pool": job.spec.device_pool or job.device_label,
            "torch_device": job.spec.torch_device,
            "device_name": self.device.name(),
            "is_simulated": self.device.simulated,
            "model": job.model,
            "threads": torch.get_num_threads(),
            "weights": "" if job.spec.workload else "random",  # a workload's spec says, once built
            "input_kind": job.spec.input_kind,
            **software(),
        }

    def _calibrated(self, described: dict, refresh_s: float | None, log) -> dict:
        """The device's latest check (first_check.report_for) read into the session: the
        board's heat, as the check measured it (rows stated at the sustained temperature),
        its tail, its meter options; returns the rows' fields of that check."""
        from joulebench.check.report import checked_fields

        job = self.job
        check = report_for(
            self.device, described, job.check_dir, job.spec.check_first,
            lambda line: log(f"{job.model}: {line}"),
        )  # fmt: skip
        heat, idle_temperature_c = heat_from_report(check)
        self.board = replace(
            self.board,
            heat=heat,
            idle_temperature_c=idle_temperature_c,
            tail=tail_from_report(check),
        )
        self.meter_options.update(self.device.meter_options_from_check(check))
        self.refresh_s = self.meter_options.get("refresh_s", refresh_s)
        return checked_fields(check)


@dataclass
class ProfileOutput:
    rows: pd.DataFrame  # PROFILE_COLUMNS: one per (phase, method, batch size)
    repeats: pd.DataFrame  # one per repeat
    trace: pd.DataFrame  # the power trace of every repeat


@dataclass
class Built:
    """A model on the device with its synthetic batch, and what rows need to know of it."""

    model: object
    x: object
    num_classes: int
    weights: str  # "random" or "pretrained"
    reparameterized: bool = False  # in timm's fused deploy form (joulebench.catalog.deploy_form)


def create_model(model_name: str, workload: str | None = None, seed: int = SEED):
    """(model, input size (C, H, W), classes, weights) from timm or the custom workload.

    Seeded, so every configuration (and every runtime) of a model gets the same weights.
    """
    import torch

    torch.manual_seed(seed)
    if workload:
        from joulebench.catalog.workloads import load_workload

        model, spec = load_workload(workload)
        weights = "pretrained" if spec.pretrained else "random"
        return model, spec.input_size, spec.num_classes, weights
    import timm

    model = timm.create_model(model_name, pretrained=False)
    cfg = timm.data.resolve_model_data_config(model)
    return model, tuple(cfg["input_size"]), int(getattr(model, "num_classes", 0)), "random"


def build(
    model_name: str,
    method: Method,
    batch_size: int,
    device: str,
    *,
    workload: str | None = None,
    train: bool = False,
    seed: int = SEED,
    input_kind: str = "random",
) -> Built:
    """A model and a synthetic batch on the torch device `device`, prepared for `method`.

    Inference runs a timm model in its deploy form (fused branches, as deployed) unless the
    method says `reparameterize: false`; training runs the model as built (the branches are
    what training trains), and a custom workload runs as its function returns it.
    Exported runtimes get the fp32 model in eval mode: they export it and check against it.
    """
    import torch

    model, input_size, num_classes, weights = create_model(model_name, workload, seed)
    model = model.train() if train else model.eval()
    reparameterized = False
    if method.reparameterize and not train and not workload:
        from joulebench.catalog.deploy_form import to_deploy_form

        try:
            model, reparameterized = to_deploy_form(model)
        except Exception as exc:
            raise RuntimeError(
                f"timm's reparameterize_model failed ({short_reason(exc)}); set reparameterize: "
                f"false on method {method.name} to measure the model as built"
            ) from exc
    model = model.to(device)
    shape = (batch_size, *input_size)
    if input_kind == "zeros":
        x = torch.zeros(shape, device=device)
    else:
        x = torch.randn(shape, device=device)
    if not method.exported:
        model, x = method.prepare(model, x)
    return Built(model, x, num_classes, weights, reparameterized)


@dataclass
class Runner:
    """What the protocol measures for one configuration."""

    step: Callable[[], object]
    grad: bool  # train: autograd on; inference: under torch.inference_mode
    fields: dict = field(default_factory=dict)  # row fields known before measuring
    finish: Callable[[], dict] = dict  # row fields read after measuring (train losses)


def check_runnable(device: BoundDevice, phase: str, method: Method) -> None:
    """Raise NotMeasured where the method cannot run here at all (a runtime this device or
    install lacks, CUDA graphs without a GPU or in training): asked before emulation, whose
    reason matters only for a method that could run."""
    if method.cuda_graphs:
        _check_graphs(device, phase)
    if method.exported:
        if phase == "train":
            raise NotMeasured(
                STATUS_SKIPPED, f"training runs in PyTorch only, not {method.runtime}"
            )
        reason = _runtime_backend(method).unavailable_reason(method.runtime, device.compute)
        if reason:
            raise NotMeasured(STATUS_SKIPPED, reason)


def _check_graphs(device: BoundDevice, phase: str) -> None:
    """CUDA graphs replay a GPU's captured forward: NotMeasured in training and where the
    model runs on a CPU (a CPU device, a simulated GPU)."""
    if phase == "train":
        raise NotMeasured(STATUS_SKIPPED, "cuda_graphs applies to inference")
    if not device.runs_on_gpu:
        where = "a simulated GPU's model runs on the CPU" if device.simulated else "no GPU"
        raise NotMeasured(STATUS_SKIPPED, f"cuda_graphs needs a CUDA device; {device}: {where}")


def prepare(
    job: ProfileJob, device: BoundDevice, phase: str, method: Method, batch_size: int
) -> Runner:
    """Build the configuration on `device` (the job's); raise NotMeasured for one that is
    reported, not measured."""
    import torch

    check_runnable(device, phase, method)
    train = phase == "train"
    compute = device.compute  # where torch runs the model (a simulated GPU's: the CPU)
    built = build(
        job.model,
        method,
        batch_size,
        compute.tensor_device,
        workload=job.spec.workload,
        train=train,
        input_kind=job.spec.input_kind,
    )
    if not train:
        _check_built(built, method, batch_size, compute)
    if train:
        from joulebench.core.train import make_train_step

        step = make_train_step(
            built.model, built.x, built.num_classes, method, job.spec.train, compute
        )
        fields_ = {"weights": built.weights, "reparameterized": False}
        return Runner(step, grad=True, fields=fields_, finish=step.losses)
    if method.exported:
        step, fields_ = _runtime_backend(method).prepare_exported(
            built.model,
            built.x,
            method,
            model_name=job.model,
            device=compute,
            threads=torch.get_num_threads(),
            cache_dir=job.spec.onnx_cache_dir,
        )
        fields_.update(weights=built.weights, reparameterized=built.reparameterized)
        return Runner(step, grad=False, fields=fields_)  # the PyTorch model is freed here
    model, x = built.model, built.x
    fields_ = {"weights": built.weights, "reparameterized": built.reparameterized}
    if method.cuda_graphs:
        from joulebench.core.cuda_graphs import graph_step

        replay, graph_fields = graph_step(model, x, method, compute)
        return Runner(replay, grad=False, fields={**fields_, **graph_fields})
    context = method.context(compute.torch_type)

    def step():
        with context:
            model(x)

    return Runner(step, grad=False, fields=fields_)


def _check_built(built: Built, method: Method, batch_size: int, device: BoundDevice) -> None:
    """One forward of the built model on the measured batch (in the method's context; an
    exported method's fp32 model as it is exported), checked before warm-up (check_forward)."""
    import torch

    context = contextlib.nullcontext() if method.exported else method.context(device.torch_type)

    def forward():
        with torch.inference_mode(), context:
            return built.model(built.x)

    emit("stage", doing="checking its output")
    check_forward(forward, batch_size)


def _runtime_backend(method: Method):
    """The module that runs a method outside PyTorch: torch-tensorrt's, else ONNX Runtime's."""
    from joulebench.core import runtimes, trt_native

    return trt_native if method.runtime == trt_native.TORCH_TENSORRT else runtimes


@dataclass
class Outcome:
    """One configuration's result: a measurement, or a status and reason."""

    status: str
    reason: str = ""
    result: object = None  # a ProtocolResult when status is "ok"
    meter_info: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)  # extra row fields (runtime check, losses)


def measure_config(
    session: JobSession,
    method: Method,
    batch_size: int,
    phase: str = "inference",
    settings: ProtocolSettings | None = None,
) -> Outcome:
    """Measure one configuration; failures become an Outcome with status and reason. A
    precision the device only emulates is skipped before anything is built (unless forced);
    a method's knobs are set on the device around it, and restored (core.knobs).
    `settings`: the protocol's for this configuration (a short warm-up, `warmup_for`);
    default the session's."""
    settings = settings or session.settings
    try:
        check_runnable(session.device, phase, method)
    except NotMeasured as exc:
        return Outcome(exc.status, exc.reason, fields=exc.fields)
    emulated = method_verdict(session.device, method)
    if emulated.skip_reason:
        return Outcome(STATUS_SKIPPED, emulated.skip_reason)
    if not method.knobs:
        return _measure_built(session, method, batch_size, phase, emulated, settings)
    try:
        control = session.knob_control()
        if control is None:
            asked = ", ".join(method.knobs)
            return Outcome(STATUS_SKIPPED, f"{session.device} has no {asked} to set")
        with applied(control, method, _warn) as readback:
            outcome = _measure_built(session, method, batch_size, phase, emulated, settings)
    except KnobRefused as err:  # nothing was changed, or the change was undone
        return Outcome(STATUS_SKIPPED, str(err))
    outcome.fields.update(method.knob_fields(readback))
    return outcome


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _measure_built(
    session: JobSession, method: Method, batch_size: int, phase: str, emulated, settings
) -> Outcome:
    """Build and measure one configuration (`measure_config` has said it may run) in its
    method's arithmetic: fp32 math and cuDNN autotuning set in torch around the build,
    warm-up and windows, restored after (core.arithmetic); its row says which."""
    arithmetic = arithmetic_for(method, session.device.runs_on_gpu)
    with arithmetic_applied(arithmetic):
        outcome = _build_and_measure(session, method, batch_size, phase, emulated, settings)
    outcome.fields.update(arithmetic.fields())
    return outcome


def _build_and_measure(
    session: JobSession, method: Method, batch_size: int, phase: str, emulated, settings
) -> Outcome:
    """The body of `_measure_built`: build, then the protocol; failures as an Outcome."""
    import torch

    device = session.device
    try:
        runner = prepare(session.job, device, phase, method, batch_size)
    except NotMeasured as exc:
        return Outcome(exc.status, exc.reason, fields=exc.fields)
    except Exception as exc:
        return Outcome("oom" if is_oom(exc) else "build-error", short_reason(exc))
    finally:
        device.free_memory()  # a freed PyTorch model (exported runtimes)

    meter, reasons = session.meter()
    emit("stage", doing="warm-up")
    step = device.wrap_step(runner.step)
    sync = device.sync
    try:
        with torch.enable_grad() if runner.grad else torch.inference_mode():
            result = measure(
                step,
                sync,
                meter,
                images_per_step=batch_size,
                settings=settings,
                board=session.board,
                progress=_stage,
            )
            emit("stage", doing="tracing the GPU's busy share")
            # outside the windows: how much of a step the device spent executing kernels
            busy = device.busy_fraction(step, sync, _step_s(result))
        meter_info = {**meter.describe(), "meter_reasons": reasons}
        host = host_bound_fields(busy)
        flags = join_flags(emulated.fields.get("flags", ""), [host.pop("flags", "")])
        fields_ = {**runner.fields, **runner.finish(), **emulated.fields, **host, "flags": flags}
        return Outcome("ok", "", result, meter_info, fields_)
    except Exception as exc:
        return Outcome("oom" if is_oom(exc) else STATUS_ERROR, short_reason(exc))
    finally:
        meter.close()
        runner = None  # free before the next configuration
        device.free_memory()


def _stage(phase: str, info: dict) -> None:
    """The protocol's progress, as a worker's event (jobs.supervise): after warm-up and
    after each window (never inside one)."""
    done = "warm-up done" if phase == "warmup" else f"window {int(info['repeat']) + 1} done"
    emit("stage", doing=f"{done}, measuring")


def _step_s(result) -> float:
    """A measured configuration's time per batch (its windows' mean), in seconds."""
    return float(result.summary["latency_ms_mean"]) / 1e3


def config_fields(job: ProfileJob, phase: str, method: Method) -> dict:
    """Row fields that describe a configuration, whatever its outcome."""
    train = phase == "train"
    return {
        "phase": phase,
        "runtime": method.runtime,
        "optimizer": job.spec.train.optimizer if train else "",
        "optimizer_lr": job.spec.train.learning_rate if train else math.nan,
        "workload": job.spec.workload or "timm",
        **method.knob_fields(),  # the knobs asked for; read back by the device side (NaN)
    }


def run_profile(
    job: ProfileJob,
    log: Callable[[str], None] | None = None,
    start_at: int = 0,
    parts: str | Path | None = None,
    hangs=(),
) -> ProfileOutput:
    """Measure every (phase, method, batch size) of one model on one device; from position
    `start_at` of the measuring order, each finished one's tables also written to `parts`
    (a worker of a supervised job, jobs.supervise), under what the job's `hangs` so far
    decide (jobs.hangs)."""
    import torch

    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if job.threads:
        torch.set_num_threads(job.threads)
    with JobSession(job, job.bind_device()) as session:
        return measure_configs(session, log, start_at, parts, hangs)


@dataclass
class _Measured:
    """What a job's configurations measured so far: (config index, row), repeats, traces."""

    rows: list = field(default_factory=list)
    repeats: list = field(default_factory=list)
    traces: list = field(default_factory=list)

    def output(self) -> ProfileOutput:
        """The rows in the configurations' own order, whatever order they were measured in."""
        rows = [row for _, row in sorted(self.rows, key=lambda item: item[0])]
        return ProfileOutput(
            rows=pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS)),
            repeats=_concat(self.repeats, REPEAT_TABLE_COLUMNS),
            trace=_concat(self.traces, TRACE_TABLE_COLUMNS),
        )


def measure_configs(
    session: JobSession, log, start_at: int = 0, parts=None, hangs=()
) -> ProfileOutput:
    """The rows of `run_profile`: every configuration in turn, while the job's marker is up.
    A configuration that follows a measured batch size of its method warms up briefly
    (`JobSession.warmup_for`); its row says which warm-up it had (`warmup_kind`). One that
    the job's hangs rule out is a `not-measured` row at once, and after a hang the others
    run under a short deadline (jobs.hangs)."""
    job = session.job
    emit("stage", doing="the job's start (its idle read)", deadline_s=TIMEOUT_FLOOR_S)
    base, idle = session.start(log)
    configs, order = job.configs(), job.measurement_order()
    rule = HangRule.for_job(job, hangs)
    estimates = job_estimates_s(job, session.device, session.settings, session.refresh_s)
    estimates = [0.0 if rule.not_tried(p) else s for p, s in enumerate(estimates)]
    eta = Eta(estimates[start_at:], time.monotonic)
    measured, warm = _Measured(), None  # warm: (phase, method) of the last one measured
    gate = quiet_gate(session, log)
    for i, index in enumerate(order, 1):
        if i <= start_at:  # measured by an earlier worker of this job (jobs.supervise)
            continue
        phase, method, requested = configs[index]
        label = method_label(phase, method.name)
        started, kind = None, ""  # not tried: no start, so no time (as the supervisor's)
        outcome, batch_size = Outcome(STATUS_NOT_MEASURED, rule.not_tried(i - 1)), requested
        if not outcome.reason:
            kind, settings = session.warmup_for(warm == (phase, method.name))
            own_s = job.spec.timeout_s or deadline_s(estimates[i - 1])
            limit_s = rule.deadline_s(own_s, settings.warmup_max_s)
            after = rule.first_hung() if limit_s < own_s else ""
            emit("config", position=i - 1, label=f"{label} bs{requested}", doing="waiting for "
                 "the device to be alone", deadline_s=job.spec.quiet_wait_s + limit_s,
                 after_hang=after)  # fmt: skip
            gate.wait(f"{job.model} {label} bs{requested}")
            emit("stage", doing="build", deadline_s=limit_s)
            started = utc_now(precise=True)
            log(f"config {i}/{len(configs)} {job.model} {label} bs{requested}, "
                f"{eta.line(i - 1 - start_at)}")  # fmt: skip
            outcome, batch_size = measure_with_retry(
                session, phase, method, requested, log, settings
            )
            raise_gpu_fault(session, outcome, base, i - 1, log)
        warm = (phase, method.name) if outcome.result is not None else None
        key = {"method": method.name, "batch_size_requested": requested, "batch_size": batch_size}
        timing = {"idle_power_pre_w": idle.power_w, "start_time_utc": started, "config_order": i}
        timing["warmup_kind"] = kind if outcome.result is not None else ""
        row = config_row(job, {**base, **key, **timing}, phase, method, outcome)
        _keep(measured, parts, i - 1, index, row, outcome.result, base_key(job, key, phase))
        log(f"[{i}/{len(configs)}] {job.model} {label} bs{batch_size}: {outcome_line(outcome)}")
        emit("done", position=i - 1)
    log(f"{job.model}: {quantity(len(configs), 'configuration')} in {eta.elapsed()}")
    return measured.output()


def _keep(measured: _Measured, parts, position: int, index: int, row, result, key) -> None:
    """A finished configuration's row (and a measurement's repeats and trace) kept, and
    written to the worker's parts folder at once where it has one."""
    repeats = [result.repeats.assign(**key)] if result is not None else []
    traces = [result.trace.assign(**key)] if result is not None else []
    measured.rows.append((index, row))
    measured.repeats += repeats
    measured.traces += traces
    if parts is not None:
        write_part(parts, position, row, repeats, traces)


class GpuFault(RuntimeError):
    """The worker's GPU failed: it ends, and its supervisor moves the job (gpu_failover)."""


FAULT_STATUSES = ("error", "build-error")  # outcomes whose reason may be the GPU's fault


def raise_gpu_fault(session: JobSession, outcome, base: dict, position: int, log) -> None:
    """In a worker of a GPU job, a configuration whose error is a fault of the GPU
    (jobs.gpu_faults: NVML, Xid, ECC, a poisoned CUDA context) is no row: the worker
    tells its supervisor (event `gpu-fault`) and ends (GpuFault), and the configuration is
    measured again on a good GPU of the pool (jobs.gpu_failover)."""
    job = session.job
    if session.device.is_host or not in_worker() or outcome.status not in FAULT_STATUSES:
        return
    kind = fault_kind(outcome.reason)
    if kind is None:
        return
    uuid, index = base.get("gpu_uuid") or job.spec.gpu.get("uuid"), base.get("gpu_index")
    emit(GPU_FAULT, position=position, kind=kind, evidence=outcome.reason, uuid=uuid,
         index=None if index is None else int(index))  # fmt: skip
    log(f"{job.model}: the GPU failed ({kind}): {outcome.reason}")
    raise GpuFault(outcome.reason)


def quiet_gate(session: JobSession, log) -> QuietGate:
    """What waits for the device to be left alone before each configuration (core.quiet):
    a CPU's other processes, or those on a GPU."""
    return device_gate(session.device, session.meter, log, session.job.spec.quiet_wait_s)


def device_gate(device: BoundDevice, meter_factory, log, wait_s: float) -> QuietGate:
    """`quiet_gate` of a device: also the Python API's (joulebench.api)."""
    if device.is_host:
        return QuietGate(cpu_busy, log, wait_s=wait_s)
    return QuietGate(functools.partial(meter_busy, meter_factory), log, wait_s=wait_s)


def write_part(parts, position: int, row: dict, repeats: list, traces: list) -> None:
    """One finished configuration's tables in a worker's parts folder (jobs.supervise),
    named by its position in the measuring order; the rows file last, as a job's."""
    folder = Path(parts)
    stem = f"{position:04d}"
    write_table(_concat(traces, TRACE_TABLE_COLUMNS), folder / f"{stem}.trace.parquet",
                TRACE_TABLE_COLUMNS)  # fmt: skip
    write_table(_concat(repeats, REPEAT_TABLE_COLUMNS), folder / f"{stem}.repeats.parquet",
                REPEAT_TABLE_COLUMNS)  # fmt: skip
    frame = pd.DataFrame([row]).reindex(columns=list(PROFILE_COLUMNS))
    write_table(frame, folder / f"{stem}.rows.parquet", PROFILE_COLUMNS)


def outcome_line(outcome) -> str:
    """A configuration's result in its log line: status, energy, CV and throughput."""
    result = outcome.result
    if result is None:
        return f"{outcome.status} {outcome.reason}"
    s = result.summary
    return (
        f"{outcome.status} {s['energy_per_image_j'] * 1e3:.2f} mJ/image "
        f"(CV {s['energy_per_image_cv']:.1%}), {s['throughput_img_s']:.1f} img/s"
    )


def job_estimates_s(
    job: ProfileJob, device: BoundDevice, settings: ProtocolSettings, refresh_s: float | None
) -> list[float]:
    """Each configuration's estimate in measuring order, as the plan counts it
    (config_time.config_cost under `settings`: full or short warm-up, compile; an emulated
    precision that is skipped costs nothing): what the ETA lines start from."""
    configs = [job.configs()[i] for i in job.measurement_order()]
    kinds = warmup_kinds([(phase, method.name) for phase, method, _ in configs])
    out = []
    for (_, method, _), kind in zip(configs, kinds, strict=True):
        if method_verdict(device, method).skip_reason:
            out.append(0.0)
            continue
        cost = config_cost(settings, refresh_s=refresh_s, warmup=kind, compile_=method.compile)
        out.append(cost.total_s)
    return out


def restore_left_by(job: ProfileJob, knob_control: Callable) -> str | None:
    """What a killed job left changed on this GPU, restored before anything is measured;
    `knob_control` opens the device's control (JobSession.knob_control)."""
    try:
        control = knob_control()
        return restore_leftover(control) if control is not None else None
    except KnobRefused as err:  # a kind that sets nothing; a live holder: its rows say so
        return f"device settings not checked: {err}" if job.configs_ask_knobs() else None


def restore_after_workers(job: ProfileJob) -> str | None:
    """`restore_left_by` in a job's supervisor, once its workers are done: the device's
    control opened for it, and closed after."""
    opened = []

    def knob_control():
        opened.append(job.bind_device().knob_control())
        return opened[-1]

    try:
        return restore_left_by(job, knob_control)
    finally:
        for control in opened:
            if control is not None:
                control.close()


def gpu_fields(leased: dict, described: dict) -> dict:
    """Which GPU measured the job's rows: the pool's GPU it leased, else the one its meter
    reads (by UUID and NVML's index; no serial); empty for a device that is no GPU."""
    uuid = leased.get("uuid") or described.get("uuid")
    index = leased.get("index") if leased else described.get("nvml_index")
    return {
        "gpu_uuid": str(uuid) if uuid else "",
        "gpu_index": index,
        "gpu_serial": str(leased.get("serial") or ""),
    }


def measure_with_retry(
    session: JobSession, phase: str, method: Method, requested: int, log, settings=None
):
    """(outcome, batch size measured): out of memory retries at half the batch (oom_retry).
    `settings`: the configuration's protocol (`JobSession.warmup_for`), default the session's."""
    batch_size = requested
    label = method.name if phase == "inference" else f"{method.name} {phase}"
    while True:
        outcome = measure_config(session, method, batch_size, phase, settings)
        if outcome.status == "oom" and session.job.spec.oom_retry and batch_size > 1:
            log(f"  {label} bs{batch_size}: out of memory, retrying at half the batch")
            batch_size //= 2
            continue
        return outcome, batch_size


def config_row(job: ProfileJob, known: dict, phase: str, method: Method, outcome) -> dict:
    """One profile row: the fields `known` before measuring (the job's, the configuration's
    key and start), the method's, and the outcome's."""
    row = {
        **known,
        **config_fields(job, phase, method),
        "precision": method.precision,
        "autocast": method.autocast,
        "channels_last": method.channels_last,
        "compile": method.compile or "",
        "cuda_graphs": method.cuda_graphs,
        "status": outcome.status,
        "reason": outcome.reason,
        "end_time_utc": utc_now(precise=True),
        **outcome.fields,
    }
    if outcome.result is None:
        row.update(meter=outcome.meter_info.get("meter", ""), is_estimate=None)
        return row
    row.update(result_fields(outcome.result, outcome.meter_info))
    extra = [outcome.fields.get("flags", "")]  # set before measuring (emulated)
    if not math.isfinite(row.get("train_loss_last", 0.0)):
        extra.append(FLAG_TRAIN_LOSS_NOT_FINITE)
    if row["is_simulated"]:  # a simulated GPU: never scored (analysis.score)
        extra.append(FLAG_SIMULATED)
    row["flags"] = join_flags(row["flags"], extra)
    row["protocol_preset"] = (job.spec.protocol or {}).get("preset") or DEFAULT_PRESET
    row.update(setup_fields(row, outcome.meter_info))
    row["protocol_fingerprint"] = fingerprint_of(row)
    return row


def setup_fields(row: dict, meter_info: dict) -> dict:
    """The setup a measured row's number depends on, from its meter and runtime (beside
    the columns it has already): the power limit in force, which reading and its refresh,
    the runtime's version."""
    readback = row.get("power_limit_readback_w")
    limit = readback if _finite(readback) else meter_info.get("power_limit_w")
    detail = json.loads(row.get("runtime_detail") or "{}")
    return {
        "power_limit_w": float(limit) if _finite(limit) else math.nan,
        "sensor_reading": str(meter_info.get("power_source") or ""),
        "sensor_refresh_s": _refresh_s(meter_info),
        "runtime_version": str(
            detail.get("ort_version") or detail.get("torch_tensorrt_version") or ""
        ),
    }


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _refresh_s(meter_info: dict) -> float:
    value = meter_info.get("sensor_refresh_s", meter_info.get("refresh_s"))
    return float(value) if _finite(value) else math.nan


def base_key(job: ProfileJob, key: dict, phase: str = "inference") -> dict:
    """Identity of a configuration in the repeats and trace tables.

    `phase` is kept only where those tables declare it (tables.py), so repeats of the
    train and inference phases of one configuration stay apart once they do.
    """
    return {"device_label": job.device_label, "model": job.model, **key, "phase": phase}


def _concat(frames: list[pd.DataFrame], columns: dict) -> pd.DataFrame:
    if not frames:
        return empty_frame(columns)
    return conform(pd.concat(frames, ignore_index=True).reindex(columns=list(columns)), columns)


def result_fields(result, meter_info: dict) -> dict:
    """Row fields of a finished measurement: the protocol's summary (every key of it that is a
    profile column), the first and last window's device state, and the meter's provenance."""
    s = result.summary
    first, last = result.repeats.iloc[0], result.repeats.iloc[-1]
    fields_ = {k: v for k, v in s.items() if k in PROFILE_COLUMNS}
    fields_.update(
        start_temperature_c=first["start_temperature_c"],
        end_temperature_c=last["end_temperature_c"],
        start_sm_clock_mhz=first["start_sm_clock_mhz"],
        end_sm_clock_mhz=last["end_sm_clock_mhz"],
        driver_version=str(meter_info.get("driver_version", "")),
        meter_reasons="; ".join(meter_info.get("meter_reasons", [])),
        meter_detail=json.dumps(
            {k: v for k, v in meter_info.items() if k != "meter_reasons"}, default=str
        ),
    )
    problem = impossible_energy(fields_)
    if problem:  # measured, but no energy a row may state as ok
        fields_.update(status=STATUS_INVALID, reason=problem)
    return fields_


# --- the commands: one workflow job, and one model measured now ------------------------------


def run_job(
    model: str,
    device_label: str,
    spec: JobSpec,
    *,
    idle: str | None,
    threads: int | None,
    parts: str | Path,
    start_at: int = 0,
    hangs=(),
) -> ProfileOutput:
    """One worker of a workflow job (`joulebench profile-worker`, jobs.job_runner): the
    configurations of one model on one device from position `start_at` of the measuring
    order, each finished one's tables written to `parts` as it ends, under the job's
    `hangs` so far (jobs.hangs)."""
    from joulebench.schedule.devices import require_measurable

    require_measurable(device_label, spec.torch_device)
    idle_power_w = math.nan
    if idle:
        idle_power_w = float(read_table(idle)["idle_power_w"].iloc[0])
    job = ProfileJob(model, device_label, spec, idle_power_w=idle_power_w, threads=threads)
    return run_profile(job, start_at=start_at, parts=parts, hangs=hangs)
