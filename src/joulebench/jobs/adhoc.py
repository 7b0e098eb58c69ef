"""`joulebench profile`: one model measured now, under the same supervisor as a workflow job
(jobs.job_runner), and the short table it prints."""

from __future__ import annotations

import math
import sys

import pandas as pd

from joulebench.core.methods import PRESETS
from joulebench.core.protocol import DEFAULT_PRESET, preset_values
from joulebench.core.quiet import WAIT_S as QUIET_WAIT_S
from joulebench.core.train import TrainSpec
from joulebench.flags import flag_warnings
from joulebench.jobs.job_runner import supervised_job
from joulebench.jobs.job_spec import DEFAULT_ONNX_CACHE, job_spec
from joulebench.jobs.profile import ProfileJob
from joulebench.safe_text import quantity
from joulebench.table_io import write_table
from joulebench.tables import INPUT_KINDS, PROFILE_COLUMNS


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def profile_now(
    entry: str,
    *,
    device: str = "cpu",
    methods: list[str] = ("fp32",),
    batch_sizes: list[int] = (1,),
    protocol: dict | None = None,
    meter: str | None = None,
    tdp_w: float | None = None,
    threads: int | None = None,
    phases: list[str] = ("inference",),
    optimizer: str = TrainSpec.optimizer,
    onnx_cache: str = DEFAULT_ONNX_CACHE,
    input_kind: str = INPUT_KINDS[0],
    allow_emulated: bool = False,
    timeout_s: float | None = None,
    quiet_wait_s: float = QUIET_WAIT_S,
    output=None,
) -> pd.DataFrame:
    """`joulebench profile`: measure one model (a timm name or a workload entry) now, with the
    method presets (methods.PRESETS; `allow_emulated` measures those the device only
    emulates) and the protocol of `adhoc_protocol(**protocol)`, each configuration
    stopped after `timeout_s` without progress (None: the default, jobs.supervise), each
    waiting up to `quiet_wait_s` for the device to be left alone (core.quiet); the rows
    are also written to `output` when given."""
    from joulebench.catalog.models import resolve_models
    from joulebench.catalog.workloads import is_workload
    from joulebench.schedule.devices import require_measurable

    require_measurable(device, device)
    model = resolve_models([entry])[0]
    study = {
        "methods": {m: {**PRESETS[m], "allow_emulated": allow_emulated} for m in methods},
        "batch_sizes": list(batch_sizes),
        "protocol": adhoc_protocol(**(protocol or {})),
        "profile": adhoc_profile(
            meter=meter,
            estimate={"tdp_w": tdp_w},
            onnx_cache=onnx_cache,
            input_kind=input_kind,
            timeout_s=timeout_s,
            quiet_wait_s=quiet_wait_s,
        ),
        "phases": list(phases),
        "train": {"optimizer": optimizer},
    }
    spec = job_spec(device, study, workload=entry if is_workload(entry) else None)
    job = ProfileJob(model, adhoc_label(device), spec, threads=threads)
    rows, _, _ = supervised_job(job, idle=None, log=_warn)
    if output:
        write_table(rows, output, PROFILE_COLUMNS)
    return rows


def adhoc_protocol(
    preset: str = DEFAULT_PRESET, repeats: int | None = None, min_repeat_s: float | None = None
) -> dict:
    """The `protocol:` section of a model measured now: the preset's settings with exactly
    `repeats` windows of at least `min_repeat_s` (each the preset's where None), no CI
    target (a number to look at now, in a time known beforehand)."""
    values = preset_values(preset)  # an unknown preset: ValueError naming the known ones
    repeats = int(values["repeats"] if repeats is None else repeats)
    return {
        "preset": preset,
        "repeats": repeats,
        "min_repeat_s": float(values["min_repeat_s"] if min_repeat_s is None else min_repeat_s),
        "ci_target": None,
        "max_repeats": max(repeats, int(values["max_repeats"])),  # it caps repeats
    }


def adhoc_profile(**keys) -> dict:
    """The `profile:` section of a model measured now, by `joulebench profile` or the Python
    API's `joulebench.profile` (`keys`: any other of its keys): the GPU never checked or
    referenced first (a kept check report of it counts; a board factor is the summary's,
    not one model's)."""
    return {"check_first": "off", "board_reference": "off", **keys}


def adhoc_label(device: str) -> str:
    """The label rows of a model measured now carry: the device without colons (simh100)."""
    return device.replace(":", "")


WIDE_CI = "(!)"  # beside an energy whose 95% CI is wider than the value itself


def format_rows(rows: pd.DataFrame) -> str:
    """The short table `joulebench profile` prints: each energy with its 95% CI (± in mJ,
    marked where the CI is wider than the value: too few windows, or a load that changed),
    each row's flags; under it what a careful reader must know: a wide CI, a line per flag
    that makes a number untrustworthy (flags.flag_warnings), an estimated energy."""
    table = rows[["model", "phase", "method", "batch_size", "status"]].copy()
    energy = rows["energy_per_image_j"].astype("float64") * 1e3
    low = rows["energy_per_image_ci95_low_j"].astype("float64") * 1e3
    high = rows["energy_per_image_ci95_high_j"].astype("float64") * 1e3
    wide = ((high - energy) > energy).fillna(False)
    table["mJ/image ± 95% CI"] = [
        _energy_cell(e, lo, hi, w) for e, lo, hi, w in zip(energy, low, high, wide, strict=True)
    ]
    table["CV %"] = rows["energy_per_image_cv"] * 100
    table["img/s"] = rows["throughput_img_s"]
    table["W"] = rows["power_mean_w"]
    table["meter"] = rows["meter"]
    table["flags"] = rows["flags"].astype("string").fillna("").replace("", "-")
    lines = [table.to_string(index=False, float_format=_figure, na_rep="-")]
    if wide.any():
        lines.append(
            f"{WIDE_CI} the 95% CI is wider than the value ({quantity(int(wide.sum()), 'row')}): "
            "too few windows to pin it down, or the load changed between them; more --repeats "
            "(and a quiet host) narrow it"
        )
    lines += flag_warnings(rows["flags"])
    if rows["is_estimate"].fillna(False).any():
        lines.append("energy is ESTIMATED (no hardware counter readable); see meter_reasons.")
    return "\n".join(lines)


def _figure(value: float) -> str:
    """Three significant digits, never in exponent form (1,350 img/s, not 1.35e+03)."""
    if not math.isfinite(value):
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _energy_cell(energy_mj: float, low_mj: float, high_mj: float, wide: bool) -> str:
    """An energy in mJ with its CI: '144 ± 3.1', '596 ± 750 (!)', '-'; a CI that does not
    hold its value (never a '±' of a negative width) is shown whole: '50 (CI 60-80) (!)'."""
    if not math.isfinite(energy_mj):
        return "-"
    half_mj = high_mj - energy_mj
    if not math.isfinite(half_mj):
        return _figure(energy_mj)
    if half_mj < 0 or (math.isfinite(low_mj) and low_mj > energy_mj):
        return f"{_figure(energy_mj)} (CI {_figure(low_mj)}-{_figure(high_mj)}) {WIDE_CI}"
    return f"{_figure(energy_mj)} ± {_figure(half_mj)}" + (f" {WIDE_CI}" if wide else "")
