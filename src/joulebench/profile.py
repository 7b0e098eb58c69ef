"""The profile stage: energy and time per image of one model, for each method x batch size.

One process measures all configurations of a model (imports cost seconds; measuring a
configuration costs tens of seconds), each under the measurement protocol, with a fresh
model and a fresh meter per configuration. A failing configuration (out of memory, build
or compile error) becomes a row with a status and a reason; it never ends the job.
"""

from __future__ import annotations

import gc
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from joulebench.methods import Method
from joulebench.protocol import ProtocolSettings, measure, measure_idle
from joulebench.provenance import device_name, software, utc_now

REASON_MAX_CHARS = 500


@dataclass
class ProfileJob:
    """Everything one profile process needs; built from the config by the CLI."""

    model: str
    device_label: str
    torch_device: str
    methods: list[Method]
    batch_sizes: list[int]
    settings: ProtocolSettings = field(default_factory=ProtocolSettings)
    idle_power_w: float = math.nan  # the device's idle baseline (results/idle)
    idle_pre_s: float = 2.0  # a short idle read before the model, recorded beside it
    threads: int | None = None  # torch CPU threads; None leaves torch's default
    oom_retry: bool = True  # out of memory -> retry at half the batch (as timm's benchmark)
    meter: str | None = None  # force "nvml", "rapl" or "estimate"
    meter_options: dict = field(default_factory=dict)  # e.g. tdp_w for the estimate


@dataclass
class ProfileOutput:
    rows: pd.DataFrame  # PROFILE_COLUMNS: one per (method, batch size)
    repeats: pd.DataFrame  # one per repeat
    trace: pd.DataFrame  # the power trace of every repeat


def is_oom(exc: BaseException) -> bool:
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text or "not enough memory" in text


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:REASON_MAX_CHARS]


def _sync_for(torch_device: str) -> Callable[[], None]:
    import torch

    if torch_device.startswith("cuda"):
        device = torch.device(torch_device)
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _free_memory(torch_device: str) -> None:
    import torch

    gc.collect()
    if torch_device.startswith("cuda"):
        torch.cuda.empty_cache()


def build(model_name: str, method: Method, batch_size: int, torch_device: str):
    """A random-weight model and a synthetic batch, prepared for `method`, on the device."""
    import timm
    import torch

    model = timm.create_model(model_name, pretrained=False).eval().to(torch_device)
    cfg = timm.data.resolve_model_data_config(model)
    x = torch.randn((batch_size, *cfg["input_size"]), device=torch_device)
    model, x = method.prepare(model, x)
    return model, x


def measure_config(job: ProfileJob, method: Method, batch_size: int, meter_factory):
    """Measure one configuration; returns (status, reason, result, meter description)."""
    import torch

    device_type = torch.device(job.torch_device).type
    try:
        model, x = build(job.model, method, batch_size, job.torch_device)
    except Exception as exc:
        status = "oom" if is_oom(exc) else "build-error"
        return status, _short(exc), None, {}

    context = method.context(device_type)

    def step():
        with context:
            model(x)

    meter, reasons = meter_factory()
    try:
        with torch.inference_mode():
            result = measure(
                step,
                _sync_for(job.torch_device),
                meter,
                images_per_step=batch_size,
                settings=job.settings,
                idle_power_w=job.idle_power_w,
            )
        return "ok", "", result, {**meter.describe(), "meter_reasons": reasons}
    except Exception as exc:
        status = "oom" if is_oom(exc) else "error"
        return status, _short(exc), None, {}
    finally:
        meter.close()
        model = x = None  # free before the next configuration
        _free_memory(job.torch_device)


def run_profile(job: ProfileJob, log: Callable[[str], None] | None = None) -> ProfileOutput:
    """Measure every (method, batch size) of one model on one device."""
    import torch

    from joulebench.meters import select_meter
    from joulebench.meters.contention import ContentionGuard

    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    if job.threads:
        torch.set_num_threads(job.threads)

    def meter_factory():
        meter, reasons = select_meter(job.torch_device, prefer=job.meter, **job.meter_options)
        if job.torch_device == "cpu":  # other busy processes share what a CPU meter reads
            meter = ContentionGuard(meter)
        return meter, reasons

    base = {
        "device_label": job.device_label,
        "torch_device": job.torch_device,
        "device_name": device_name(job.torch_device),
        "model": job.model,
        "threads": torch.get_num_threads(),
        "weights": "random",
        **software(),
    }
    meter, reasons = meter_factory()
    with meter:
        idle = measure_idle(meter, job.idle_pre_s)
    log(f"{job.model}: idle {idle.power_w:.1f} W before the model ({idle.meter})")

    rows, repeats, traces = [], [], []
    configs = [(m, b) for m in job.methods for b in job.batch_sizes]
    for i, (method, requested) in enumerate(configs, 1):
        started = utc_now()
        batch_size = requested
        while True:
            status, reason, result, meter_info = measure_config(
                job, method, batch_size, meter_factory
            )
            if status == "oom" and job.oom_retry and batch_size > 1:
                log(f"  {method.name} bs{batch_size}: out of memory, retrying at half the batch")
                batch_size //= 2
                continue
            break
        key = {
            "method": method.name,
            "batch_size_requested": requested,
            "batch_size": batch_size,
        }
        row = {
            **base,
            **key,
            "precision": method.precision,
            "autocast": method.autocast,
            "channels_last": method.channels_last,
            "compile": method.compile or "",
            "status": status,
            "reason": reason,
            "idle_power_pre_w": idle.power_w,
            "start_time_utc": started,
        }
        if result is not None:
            row.update(_summary_fields(result, meter_info))
            repeats.append(result.repeats.assign(**base_key(job, key)))
            traces.append(result.trace.assign(**base_key(job, key)))
            detail = (
                f"{result.summary['energy_per_image_j'] * 1e3:.2f} mJ/image "
                f"(CV {result.summary['energy_per_image_cv']:.1%}), "
                f"{result.summary['throughput_img_s']:.1f} img/s"
            )
        else:
            row.update(meter=meter_info.get("meter", ""), is_estimate=None)
            detail = reason
        rows.append(row)
        log(f"[{i}/{len(configs)}] {job.model} {method.name} bs{batch_size}: {status} {detail}")

    from joulebench.tables import PROFILE_COLUMNS, REPEAT_TABLE_COLUMNS, TRACE_TABLE_COLUMNS

    frame = pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))
    return ProfileOutput(
        rows=frame,
        repeats=_concat(repeats, REPEAT_TABLE_COLUMNS),
        trace=_concat(traces, TRACE_TABLE_COLUMNS),
    )


def base_key(job: ProfileJob, key: dict) -> dict:
    return {"device_label": job.device_label, "model": job.model, **key}


def _concat(frames: list[pd.DataFrame], columns: dict) -> pd.DataFrame:
    from joulebench.tables import conform, empty_frame

    if not frames:
        return empty_frame(columns)
    return conform(pd.concat(frames, ignore_index=True).reindex(columns=list(columns)), columns)


def _summary_fields(result, meter_info: dict) -> dict:
    s = result.summary
    first, last = result.repeats.iloc[0], result.repeats.iloc[-1]
    fields_ = {k: s[k] for k in SUMMARY_KEYS}
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
    return fields_


SUMMARY_KEYS = [
    "meter",
    "is_estimate",
    "repeats",
    "images",
    "measured_s",
    "warmup_iters",
    "warmup_s",
    "warmup_steady",
    "idle_power_w",
    "energy_per_image_j",
    "energy_per_image_std_j",
    "energy_per_image_cv",
    "energy_per_image_ci95_low_j",
    "energy_per_image_ci95_high_j",
    "dynamic_energy_per_image_j",
    "dynamic_energy_per_image_std_j",
    "dynamic_energy_per_image_cv",
    "dynamic_energy_per_image_ci95_low_j",
    "dynamic_energy_per_image_ci95_high_j",
    "throughput_img_s",
    "throughput_img_s_cv",
    "latency_ms_mean",
    "latency_ms_p50",
    "latency_ms_p95",
    "power_mean_w",
    "power_max_w",
    "trace_disagreement_max",
    "flags",
]
