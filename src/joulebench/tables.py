"""The data contract: every output table's columns, declared once.

Each table is a `Table` of `Column`s: name (unit in the name), pandas dtype, unit, one-line
meaning and producer, the function that computes the value, so grep finds where a number
comes from. A later table that carries an earlier one's column reuses its declaration, or
says so under a new name (`renamed_from`). docs/columns.md is generated from here
(`joulebench columns --markdown`); adding a column is one entry in a table below. Every stage
reads and writes tables through `joulebench.table_io`; `concat_tables` joins a table's
per-job parts. This module imports no measuring code (and no torch), and of joulebench only
`table_io` and `flags` (whose section of docs/columns.md it renders). The map of the
package: docs/design.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shlex
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from joulebench import table_io
from joulebench.flags import flags_markdown

# Values that several stages check or write, kept here once.
PHASES = ("inference", "train")  # `phase`: inference (per image) or train (per sample)
INPUT_KINDS = ("random", "zeros")  # `input_kind`: what the synthetic batches hold
# `runtime`: what runs a method's model. TensorRT comes two ways: through ONNX Runtime's
# TensorRT execution provider (`ort-tensorrt`) or natively through torch-tensorrt.
RUNTIMES = ("pytorch", "onnxruntime", "ort-tensorrt", "torch-tensorrt")
# Older names, still accepted in configs and read in published summaries as the runtime they
# name: `tensorrt` was ONNX Runtime's TensorRT provider before torch-tensorrt came.
RUNTIME_ALIASES = {"tensorrt": "ort-tensorrt"}
# Device settings a method may ask for (core.methods; docs/power.md): a power limit in
# watts or as a fraction of the board's default limit, a locked SM clock in MHz or by name.
# The bounds catch a unit slip (60 for 0.6, NVML's milliwatts, Hz); the board's own allowed
# range is checked when its backend sets the value.
POWER_LIMIT_FRACTION_MAX = 1.5
POWER_LIMIT_W_MAX = 3000.0
SM_CLOCK_MHZ_MAX = 5000
SM_CLOCK_PRESETS = ("max", "base")
# The largest batch a study or command may ask for: 64 Ki images is past any GPU's memory
# for an ImageNet model, and each out-of-memory retry halves it (16 halvings to 1 at most).
MAX_BATCH_SIZE = 65536
# The longest name a row's model, device label or method may have (timm's longest is 62).
MAX_NAME_CHARS = 200
REASON_MAX_CHARS = 500  # `reason` and `note` columns: one readable line, never a traceback
ESTIMATE_METER_PREFIX = "estimate:"  # meters that model energy rather than read a counter

# The catalog counts the deploy form; these columns keep the counts of the model as built.
UNFUSED = {
    "params": "params_unfused",
    "flops_per_image": "flops_per_image_unfused",
    "macs_per_image": "macs_per_image_unfused",
    "activations_per_image": "activations_per_image_unfused",
}

DTYPES = ("string", "Int64", "float64", "boolean", "object")


# --- the registry's building blocks -------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column: pandas dtype, unit ("" for text and flags), meaning, producer."""

    name: str
    dtype: str
    unit: str
    meaning: str
    producer: str  # dotted path of the function (or method) that computes the value
    origin: str = ""  # the table that declares it first (set by Table)
    renamed_from: str = ""  # "table.column": that column's value under this name

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"column {self.name}: dtype {self.dtype!r} is none of {DTYPES}")


@dataclass(frozen=True)
class Table:
    """An output table: where the workflow writes it, what one row is, and its columns."""

    name: str
    path: str
    row: str  # what one row is: "model: its static properties ..."
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()  # columns that identify a row, where there is such a key

    def __post_init__(self):
        names = [c.name for c in self.columns]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"table {self.name}: columns declared twice: {twice}")
        unknown = [k for k in self.key if k not in names]
        if unknown:
            raise ValueError(f"table {self.name}: key columns {unknown} are not columns")
        own = tuple(c if c.origin else replace(c, origin=self.name) for c in self.columns)
        object.__setattr__(self, "columns", own)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def dtypes(self) -> dict[str, str]:
        """name -> pandas dtype, in order: what `conform` and `write_table` take."""
        return {c.name: c.dtype for c in self.columns}

    def __getitem__(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.name} has no column {name!r}")

    def renamed(self, origin: str) -> dict[str, str]:
        """{old: new} for the columns this table takes from `origin` under a new name."""
        out = {}
        for c in self.columns:
            table, _, old = c.renamed_from.partition(".")
            if table == origin:
                out[old] = c.name
        return out


def _declare(block: str) -> tuple[Column, ...]:
    """Columns from a text block: a line `name dtype unit producer` (unit `-`: none;
    producer relative to the joulebench package), then its meaning on indented lines."""
    columns: list[Column] = []
    head: list[str] = []
    meaning: list[str] = []

    def flush():
        if head:
            name, dtype, unit, producer = head
            unit = "" if unit == "-" else unit
            text = " ".join(meaning)
            columns.append(Column(name, dtype, unit, text, f"joulebench.{producer}"))

    for line in textwrap.dedent(block).splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            meaning.append(line.strip())
            continue
        flush()
        head, meaning = line.split(), []
        if len(head) != 4:
            raise ValueError(f"column line needs name, dtype, unit, producer: {line!r}")
    flush()
    return tuple(columns)


def _same(table: Table, *names: str) -> tuple[Column, ...]:
    """Columns of an earlier table, carried with the same value, meaning and producer."""
    return tuple(table[name] for name in names)


def _renamed(table: Table, old: str, new: str, producer: str, meaning: str = "") -> Column:
    """`table.old`'s value under the name `new`: a declared rename, so grep finds both."""
    src = table[old]
    return Column(
        new,
        src.dtype,
        src.unit,
        meaning or src.meaning,
        f"joulebench.{producer}",
        renamed_from=f"{table.name}.{old}",
    )


# --- stage 1: the catalog ------------------------------------------------------------------

CATALOG = Table(
    "catalog",
    "results/catalog.parquet",
    "model: its static properties at its input size (random weights, nothing downloaded)",
    _declare(
        """
        model                 string   -      catalog.build.blank_row
            timm name as resolved (arch.tag), or a custom workload's name
        architecture          string   -      catalog.build.blank_row
            timm architecture (the name before the tag)
        pretrained_tag        string   -      catalog.build.blank_row
            timm pretrained tag (empty for an untagged architecture)
        family                string   -      catalog.build.catalog_row
            the timm module that defines the architecture; custom for a workload
        status                string   -      catalog.build.catalog_row
            ok or failed
        reason                string   -      catalog.build.catalog_row
            why a row failed (or a note on an ok row); empty when none
        count_device          string   -      catalog.build.catalog_row
            meta or cpu: where FLOPs and activations were counted
        num_classes           Int64    count  catalog.build.catalog_row
            logits per image
        params                Int64    count  catalog.build.counted
            parameters (of the deploy form where reparameterized; in the summary, of the
            form the row measured)
        input_channels        Int64    count  catalog.build.catalog_row
            channels of one input image
        input_height          Int64    px     catalog.build.catalog_row
            input height (timm's data config)
        input_width           Int64    px     catalog.build.catalog_row
            input width (timm's data config)
        crop_pct              float64  ratio  catalog.build.catalog_row
            centre-crop fraction of timm's eval transform
        crop_mode             string   -      catalog.build.catalog_row
            timm's crop mode (center, squash, border)
        interpolation         string   -      catalog.build.catalog_row
            resize interpolation of timm's eval transform
        mean                  object   -      catalog.build.catalog_row
            per-channel normalisation mean (a list of 3 floats)
        std                   object   -      catalog.build.catalog_row
            per-channel normalisation std (a list of 3 floats)
        flops_per_image       float64  FLOP   catalog.build.counted
            FLOPs of one forward pass of one image (a multiply-add is 2), as params
        macs_per_image        float64  MAC    catalog.build.counted
            multiply-adds of one forward pass of one image (FLOPs / 2), as params
        activations_per_image float64  count  catalog.build.counted
            output elements of convolutions and matrix products for one image, as params
        reparameterized       boolean  -      catalog.build.catalog_row
            True: the counts above are of timm's fused deploy form, which differs from the
            model as built
        params_unfused        Int64    count  catalog.build.catalog_row
            params of the model as built (equal to params when not reparameterized)
        flops_per_image_unfused float64 FLOP  catalog.build.catalog_row
            flops_per_image of the model as built
        macs_per_image_unfused float64 MAC    catalog.build.catalog_row
            macs_per_image of the model as built
        activations_per_image_unfused float64 count catalog.build.catalog_row
            activations_per_image of the model as built
        count_duration_s      float64  s      catalog.build.catalog_row
            time to build and count the model
        timm_version          string   -      catalog.build.blank_row
            timm that built the model
        torch_version         string   -      catalog.build.blank_row
            torch that counted the model
        """
    ),
    key=("model",),
)

# --- stages 3-5: idle, profile rows, their repeats and power traces ---------------------------

IDLE = Table(
    "idle",
    "results/idle/<device>.parquet",
    "device: its idle power baseline (nothing running)",
    _declare(
        """
        device_label          string   -      jobs.idle.idle_row
            the config's name for the device or pool (cpu, h200)
        torch_device          string   -      jobs.idle.idle_row
            cpu, cuda or cuda:N
        device_name           string   -      jobs.idle.idle_row
            the GPU's or CPU's product name
        gpu_uuid              string   -      jobs.idle.idle_row
            the UUID of the GPU whose idle power this is (of a pool: the one its idle job
            leased; the pool's profile rows each read a short idle on their own GPU,
            idle_power_pre_w); empty for the CPU
        meter                 string   -      jobs.idle.idle_row
            what read the energy: nvml, rapl, estimate:<model>
        is_estimate           boolean  -      jobs.idle.idle_row
            True: the power is modelled (an estimate), not read from a counter
        meter_reasons         string   -      jobs.idle.idle_row
            why a better meter was not used
        idle_power_w          float64  W      jobs.idle.idle_row
            mean power over the idle window
        duration_s            float64  s      jobs.idle.idle_row
            length of the idle window (the meter's own where it has one)
        energy_j              float64  J      jobs.idle.idle_row
            energy read over the idle window
        flags                 string   -      jobs.idle.idle_row
            ;-joined flags of the window (other-process, other-load, ...); empty when none
        host                  string   -      core.provenance.software
            the machine's host name
        start_time_utc        string   -      jobs.idle.idle_row
            when the idle read started, ISO 8601 UTC
        """
    ),
    key=("device_label",),
)

# What a configuration's row may say it came to (the profile's `status`), declared once: the
# code's status names are these keys (core.runtimes, jobs.supervise, jobs.profile).
PROFILE_STATUSES: dict[str, str] = {
    "ok": "measured",
    "oom": "out of memory, also at the halved batches down to 1",
    "build-error": "the model could not be built or prepared for its method",
    "error": "failed while running, or its output is no answer (NaN, inf, the wrong shape)",
    "skipped": "not run here, with the reason: an emulated precision, a runtime not "
    "installed, a knob the device refused, ...",
    "mismatch": "a runtime's outputs disagree with PyTorch's beyond the method's tolerance",
    "timeout": "no progress past its deadline: stopped, with what it was doing",
    "crashed": "its process died: an exit, a signal, an out-of-memory kill",
    "not-measured": "never run: its job could not go on (a worker that would not die, a GPU "
    "that failed with no good one left)",
    "invalid": "measured, but a value cannot be (an energy per image that is not positive "
    "and finite): its numbers kept, the reason names the value",
}
STATUS_INVALID = "invalid"
# Statuses a later table gives rows that no profile row has.
STATUS_NOT_PROFILED = "not-profiled"
STATUS_PREDICTED = "predicted"
LATER_STATUSES: dict[str, str] = {
    STATUS_NOT_PROFILED: "the summary's row of a catalogued model no profile row mentions",
    STATUS_PREDICTED: "the page's row of a model not measured in its group: a prediction with "
    "its interval (the predicted table), never graded (a grade range instead)",
}
_STATUSES = ", ".join(PROFILE_STATUSES)
_ROW = "jobs.profile.config_row"
_JOB = "jobs.profile.JobSession.row_base"
_LOOP = "jobs.profile.measure_configs"
_KNOB = "core.methods.Method.knob_fields"
_SUMMARY = "core.protocol.summarize"

PROFILE = Table(
    "profile",
    "results/profile.parquet (and results/profile/<device>/rows/<job>.parquet: a model, or "
    "model+method)",
    "configuration (device, model, phase, method, batch size), measured under the protocol",
    _declare(
        f"""
        device_label          string   -      {_JOB}
            the config's name for the device or pool (cpu, h200): in every row and in paths
        model                 string   -      {_JOB}
            timm name (arch.tag) or custom workload name
        method                string   -      {_LOOP}
            the config's name for the method (methods:)
        batch_size_requested  Int64    images {_LOOP}
            the batch size the study asked for
        batch_size            Int64    images {_LOOP}
            the batch size run: smaller than requested after an out-of-memory retry
        torch_device          string   -      {_JOB}
            cpu, cuda or cuda:N
        device_name           string   -      {_JOB}
            the GPU's or CPU's product name
        device_pool           string   -      {_JOB}
            the study's label of the pool the device belongs to: the device_label itself,
            or for a pool measured on k GPUs per model (each_model_on) the pool's label
            (h200 for h200-0 .. h200-3); empty in rows written before pools
        gpu_uuid              string   -      jobs.profile.gpu_fields
            the UUID of the GPU that measured the row (of a pool: the one the job leased);
            empty for the CPU
        gpu_index             Int64    -      jobs.profile.gpu_fields
            NVML's index of that GPU (not torch's); empty where not known
        gpu_serial            string   -      jobs.profile.gpu_fields
            that GPU's serial number, where NVML gives it (a pool's GPUs); else empty
        gpu_failed            string   -      jobs.gpu_failover.Failover.noted
            the GPU that failed under this row's job before the row was measured (on another
            GPU of the pool) or given up: its UUID, index, fault and evidence
            (docs/profiling.md); empty where none did
        precision             string   -      {_ROW}
            fp32 (IEEE), tf32 (fp32 tensors, TF32 math), fp16 or bf16
        autocast              boolean  -      {_ROW}
            True: fp16/bf16 by autocast (mixed precision); False: weights and inputs cast
        channels_last         boolean  -      {_ROW}
            True: channels-last memory format
        compile               string   -      {_ROW}
            the torch.compile mode; empty for eager
        fp32_math             string   -      core.arithmetic.Arithmetic.fields
            what torch ran fp32 matmuls and convolutions in: ieee, or tf32 (method tf32 on a
            GPU with TF32, Ampere or newer); ieee also for fp16 / bf16 (the ops autocast
            leaves in fp32) and on a CPU or a simulated GPU (its model runs on the CPU);
            empty for exported runtimes (their engine decides) and where nothing was built
        cudnn_autotune        boolean  -      core.arithmetic.Arithmetic.fields
            True: cuDNN (MIOpen on ROCm) autotuned the convolutions (a PyTorch method on a
            GPU, unless cudnn_autotune: false; its search in warm-up); False on a CPU, a
            simulated GPU and for exported runtimes; empty where nothing was built
        cuda_graphs           boolean  -      {_ROW}
            True: each step replayed a CUDA graph of the forward (cuda_graphs: true)
        cuda_graph_capture_s  float64  s      core.cuda_graphs.graph_step
            seconds to warm up, capture and check the CUDA graph, before the protocol's
            warm-up (never in a window); NaN without cuda_graphs
        power_limit_requested_w float64 W     {_KNOB}
            the power limit the method asks for in watts (power_limit_w); empty when it asks
            none, or asks a fraction
        power_limit_requested_fraction float64 ratio {_KNOB}
            the power limit the method asks for as a fraction of the board's default limit
            (power_limit); empty when it asks none, or asks watts
        power_limit_readback_w float64 W      {_KNOB}
            the power limit in force while measuring, as the device's backend read it back
            after setting it; empty when the method sets none (docs/power.md)
        sm_clock_requested_mhz float64 MHz    {_KNOB}
            the SM clock the method asks to lock, in MHz (sm_clock_mhz); empty when it asks
            none, or asks max or base
        sm_clock_requested_preset string -    {_KNOB}
            max or base: the SM clock the method asks to lock, by name; empty otherwise
        sm_clock_readback_mhz float64 MHz     {_KNOB}
            the locked SM clock in force while measuring, as the device's backend read it
            back after locking it; empty when the method locks none (docs/power.md)
        reparameterized       boolean  -      jobs.profile.prepare
            True: measured in timm's fused deploy form; empty when nothing was built
        threads               Int64    count  {_JOB}
            torch CPU threads
        status                string   -      {_ROW}
            one of {_STATUSES} (what each means: docs/columns.md#statuses)
        reason                string   -      {_ROW}
            why a configuration was not measured; empty when ok
        meter                 string   -      {_SUMMARY}
            what read the energy: nvml, nvml:power-integration, rapl, estimate:<model>
        is_estimate           boolean  -      {_SUMMARY}
            True: the energy is modelled (an estimate), not read from a counter
        meter_reasons         string   -      jobs.profile.result_fields
            why a better meter was not used
        meter_detail          string   -      jobs.profile.result_fields
            JSON: the meter's own description (zones, TDP, uuid, ...)
        energy_per_image_j    float64  J      {_SUMMARY}
            energy per image (per training sample in phase train), mean of the repeats:
            each window's energy, less idle power during its phase shifts, over its images
        energy_per_image_std_j float64 J      {_SUMMARY}
            sample standard deviation of energy_per_image_j over the repeats
        energy_per_image_cv   float64  ratio  {_SUMMARY}
            coefficient of variation (std / mean) of energy_per_image_j over the repeats
        energy_per_image_ci95_low_j float64 J {_SUMMARY}
            lower end of the Student-t 95% CI of the mean (the summary raises it to 0 where
            below, flagged ci-clipped)
        energy_per_image_ci95_high_j float64 J {_SUMMARY}
            upper end of the Student-t 95% CI of the mean
        ci_covers             string   -      {_SUMMARY}
            what the 95% CIs cover: measurement (the meter's reading and the timing, window
            to window) or timing (an estimate's: its power model's own error is not in it,
            docs/measurement.md); the windows are sized to it (docs/protocol.md, presets)
        dynamic_energy_per_image_j float64 J  {_SUMMARY}
            energy per image above the idle baseline (idle_power_w x window time
            subtracted), mean of the repeats
        dynamic_energy_per_image_std_j float64 J {_SUMMARY}
            sample standard deviation of dynamic_energy_per_image_j over the repeats
        dynamic_energy_per_image_cv float64 ratio {_SUMMARY}
            coefficient of variation of dynamic_energy_per_image_j over the repeats
        dynamic_energy_per_image_ci95_low_j float64 J {_SUMMARY}
            lower end of its Student-t 95% CI (raised to 0 in the summary, as above)
        dynamic_energy_per_image_ci95_high_j float64 J {_SUMMARY}
            upper end of its Student-t 95% CI
        throughput_img_s      float64  img/s  {_SUMMARY}
            images per second of work (phase-shift delays left out), mean of the repeats
        throughput_img_s_cv   float64  ratio  {_SUMMARY}
            coefficient of variation of the throughput over the repeats
        gpu_busy_fraction     float64  ratio  core.host_bound.host_bound_fields
            the share of a step during which the GPU executed kernels, traced after the
            windows (CUDA: torch's profiler; a simulated GPU: its host model); below 0.5 the
            row is flagged host-bound; empty on a CPU (docs/profiling.md, the host)
        latency_ms_mean       float64  ms     {_SUMMARY}
            time per batch, mean
        latency_ms_p50        float64  ms     {_SUMMARY}
            median time per batch (with protocol.per_step_timing only, else empty)
        latency_ms_p95        float64  ms     {_SUMMARY}
            95th percentile of the time per batch (per_step_timing only)
        power_mean_w          float64  W      {_SUMMARY}
            mean power in the windows (from the trace, else energy / time)
        power_max_w           float64  W      {_SUMMARY}
            highest power sample in any window
        idle_power_w          float64  W      {_SUMMARY}
            the device's idle baseline (results/idle), which dynamic energy subtracts
        idle_power_pre_w      float64  W      {_LOOP}
            a short idle read just before this model
        trace_disagreement_max float64 ratio  {_SUMMARY}
            |counter - integrated trace| / counter, worst repeat
        repeats               Int64    count  {_SUMMARY}
            measurement windows
        images                Int64    count  {_SUMMARY}
            images in all windows
        measured_s            float64  s      {_SUMMARY}
            time inside measurement windows
        warmup_iters          Int64    count  {_SUMMARY}
            batches run in warm-up
        warmup_s              float64  s      {_SUMMARY}
            warm-up time
        warmup_steady         boolean  -      {_SUMMARY}
            True: throughput was steady when warm-up ended (else flag warmup-not-steady)
        warmup_kind           string   -      {_LOOP}
            full: the protocol's warm-up (a method's first batch size in its job); short: a
            following batch size of the same method, measured right after it, warmed up
            for warmup_min_iters steps and a steady check without the warmup_min_s floor
            (docs/protocol.md, warm-up); empty where nothing was measured
        start_temperature_c   float64  °C     jobs.profile.result_fields
            device temperature when the first window opened (NVML; empty elsewhere)
        end_temperature_c     float64  °C     jobs.profile.result_fields
            device temperature when the last window closed
        thermal_state         string   -      core.protocol.thermal_summary
            the die temperature the energies are stated at: sustained (every window brought
            to the temperature this configuration settles at when run for ever; the board's
            heat from `joulebench check`) or as-run (start/end_temperature_c, uncorrected)
        sustained_temperature_c float64 °C    core.protocol.thermal_summary
            the configuration's sustained die temperature (mean over windows; sustained only)
        thermal_correction    float64  ratio  core.protocol.thermal_summary
            mean over windows of energy at the stated state / energy as measured, minus 1;
            0 as run; no time is spent reaching the state
        tail_source           string   -      core.protocol.tail_summary
            what took the board's power tail out of the phase shifts (docs/protocol.md,
            the power tail): check (its measured tail; the CI widened by what may remain) or
            assumed (no tail measured: nothing taken out, the CI's low end lowered by the
            largest tail assumed); empty where the windows had no phase shifts
        tail_correction       float64  ratio  core.protocol.tail_summary
            the share of the energy the tail's excess in the phase shifts took out
            (negative; 0 where nothing was)
        start_sm_clock_mhz    float64  MHz    jobs.profile.result_fields
            SM clock when the first window opened
        end_sm_clock_mhz      float64  MHz    jobs.profile.result_fields
            SM clock when the last window closed
        flags                 string   -      {_SUMMARY}
            ;-joined names of the Flags below (other-process, mig, other-load,
            warmup-not-steady, emulated, ...); empty when none
        weights               string   -      {_JOB}
            random or pretrained
        input_kind            string   -      {_JOB}
            random (default) or zeros: what the measured batches held
        check_id              string   -      check.report.checked_fields
            the latest `joulebench check` of the device; empty when none
        check_verdict         string   -      check.report.checked_fields
            that check's verdict: pass, warn or fail; empty when none
        driver_version        string   -      jobs.profile.result_fields
            the NVIDIA driver (empty off NVML)
        cuda_version          string   -      core.provenance.software
            the CUDA torch was built with (empty without CUDA)
        torch_version         string   -      core.provenance.software
            torch that ran the model
        timm_version          string   -      core.provenance.software
            timm that built the model
        host                  string   -      core.provenance.software
            the machine's host name
        protocol_preset       string   -      {_ROW}
            the protocol preset the row was measured under (default, strict, fast, smoke;
            docs/protocol.md#presets); empty where nothing was measured
        power_limit_w         float64  W      jobs.profile.setup_fields
            the board's power limit in force while measuring (a method's, read back, else
            the board's own as its meter read it); empty off a GPU
        sensor_reading        string   -      jobs.profile.setup_fields
            which power reading the meter took (NVML's instant field, its 1 s average, the
            energy counter...; the meter's power_source); empty off NVML
        sensor_refresh_s      float64  s      jobs.profile.setup_fields
            the sensor's refresh period the windows were sized to (the check's, else the
            generation's published one); empty where the meter has none
        runtime_version       string   -      jobs.profile.setup_fields
            the exported runtime's version (onnxruntime, torch-tensorrt); empty for PyTorch
            (torch_version is its version)
        protocol_fingerprint  string   -      tables.protocol_fingerprint
            a short hash of the fields that change a number (FINGERPRINT_FIELDS:
            docs/columns.md#protocol-fingerprint): rows with the same one were measured under
            the same setup; the summary's adds how its energy was made comparable across
            boards (board_factor_source)
        start_time_utc        string   -      {_LOOP}
            when the configuration started, ISO 8601 UTC
        config_order          Int64    count  {_LOOP}
            its place (1-based) in the order its job measured its configurations: within
            each phase the methods shuffled and each method's batch sizes back to back,
            shuffled too, seeded by model and device label (so heat left by earlier
            configurations is noise, not a bias of one method or batch size)
        end_time_utc          string   -      {_ROW}
            when the configuration ended, ISO 8601 UTC (with microseconds)
        concurrent_measurements Int64  count  {_SUMMARY}
            most measurements running on this host at once during the configuration's
            windows (this one included; jobs.concurrency)
        is_simulated          boolean  -      {_JOB}
            True: a simulated GPU (`sim:` device; the model ran on the CPU, the power is the
            sensor simulator's): never scored, never published; ranked by best_configs and
            recommend only when asked (decisions.include_simulated), beside each other only
        energy_gpu_per_image_j float64 J      {_SUMMARY}
            the job's GPU's energy per image (NVML); NaN on a CPU device (see
            gpu_reason)
        energy_cpu_per_image_j float64 J      {_SUMMARY}
            the host's CPU packages' energy per image (RAPL, or the estimate when
            host_is_estimate), read in the same windows; this job's share when host-shared
        energy_dram_per_image_j float64 J     {_SUMMARY}
            the host's DRAM energy per image (RAPL dram zones); NaN where not read
        energy_node_per_image_j float64 J     {_SUMMARY}
            gpu + cpu + dram per image, of the parts that were read (node_reason
            names those that were not)
        gpu_reason     string   -      core.protocol.node_reasons
            why energy_gpu_per_image_j is empty; empty when read
        cpu_reason     string   -      core.protocol.node_reasons
            why energy_cpu_per_image_j is empty or an estimate; empty when read by RAPL
        dram_reason    string   -      core.protocol.node_reasons
            why energy_dram_per_image_j is empty; empty when read
        node_reason    string   -      core.protocol.node_reasons
            the parts the node total lacks ("without gpu"); empty when complete
        host_meter            string   -      core.protocol.node_reasons
            what read the CPU and DRAM parts: rapl or estimate:<model>
        host_is_estimate      boolean  -      core.protocol.node_reasons
            True: the CPU part (and so the node total) is an estimate
        host_cpu_share        float64  ratio  {_SUMMARY}
            this job's share of the host's busy CPU time by which host energy was attributed
            (mean of the windows; 1 when alone)
        phase                 string   -      jobs.profile.config_fields
            inference, or train: energy_per_image_j is then per training sample
        runtime               string   -      jobs.profile.config_fields
            pytorch, onnxruntime, ort-tensorrt (ONNX Runtime's TensorRT provider; published
            as tensorrt before there were two) or torch-tensorrt (TensorRT natively)
        runtime_provider      string   -      core.runtimes.check_output
            what ran the graph: the ONNX Runtime execution provider, TensorRT
            (torch-tensorrt), or cuda-graph (a PyTorch method replaying a CUDA graph)
        runtime_check_rel_err float64  ratio  core.runtimes.check_output
            max |runtime - PyTorch| / max |PyTorch| on the same batch (cuda-graph: the
            replay against the eager forward)
        runtime_detail        string   -      core.runtimes.check_output
            JSON: cached file (onnx or engine), cache hit, tolerance, versions
        engine_build_s        float64  s      core.trt_native.build_engine
            torch-tensorrt: seconds TensorRT took to build this configuration's engine,
            apart from the measurement (a cached engine keeps its build's time;
            runtime_detail says cached); NaN for other runtimes
        optimizer             string   -      jobs.profile.config_fields
            train: sgd or adamw
        optimizer_lr          float64  -      jobs.profile.config_fields
            train: the learning rate
        train_loss_first      float64  -      core.train.TrainStep.losses
            cross-entropy of the first step measured (train)
        train_loss_last       float64  -      core.train.TrainStep.losses
            cross-entropy of the last step measured (train)
        workload              string   -      jobs.profile.config_fields
            timm, or the custom workload entry (module:function)
        """
    ),
    key=("device_label", "model", "phase", "method", "batch_size_requested"),
)

# A configuration's identity in the repeats and trace tables.
_CONFIG = _same(
    PROFILE, "device_label", "model", "method", "batch_size_requested", "batch_size", "phase"
)
_WINDOW = "core.protocol.repeat_row"

# One measurement window's columns, as the protocol reports them (protocol.REPEAT_COLUMNS).
WINDOW = _declare(
    f"""
    repeat                Int64    count  {_WINDOW}
        0-based index of the window
    batches               Int64    count  {_WINDOW}
        batches run in the window
    images                Int64    count  {_WINDOW}
        images run in the window
    duration_s            float64  s      {_WINDOW}
        protocol clock from the sync before the first batch to the last sync (phase shifts
        included)
    meter_duration_s      float64  s      {_WINDOW}
        the meter's own window, which the energy covers
    energy_j              float64  J      {_WINDOW}
        the meter's reading over the window (counter or estimate)
    energy_trace_j        float64  J      {_WINDOW}
        the power trace integrated over the window: a cross-check
    energy_counter_j      float64  J      {_WINDOW}
        the counter's difference between the window's two ends, as read; energy_j differs
        where the counter moves once a sensor refresh and a batch takes at most 0.6 of a
        refresh: the refreshes inside the window, scaled to its own time (docs/protocol.md,
        window edges); NaN without a counter
    idle_power_w          float64  W      {_WINDOW}
        the device's idle baseline used for this window
    energy_per_image_j    float64  J      {_WINDOW}
        (energy_j - idle_power_w x phase_shift_s - tail_excess_j) / images, at the stated
        thermal state
    dynamic_energy_per_image_j float64 J  {_WINDOW}
        (energy_j - idle_power_w x window time) / images
    throughput_img_s      float64  img/s  {_WINDOW}
        images / (duration_s - phase_shift_s)
    latency_ms_mean       float64  ms     {_WINDOW}
        (duration_s - phase_shift_s) / batches
    latency_ms_p50        float64  ms     {_WINDOW}
        this window's median time per batch (with per_step_timing; else empty)
    latency_ms_p95        float64  ms     {_WINDOW}
        this window's 95th-percentile time per batch (with per_step_timing)
    power_mean_w          float64  W      {_WINDOW}
        the window's mean power: its trace's mean, or energy_j / meter_duration_s
    power_max_w           float64  W      {_WINDOW}
        the window's highest power sample
    trace_disagreement    float64  ratio  {_WINDOW}
        |energy_j - energy_trace_j| / energy_j
    start_temperature_c   float64  °C     {_WINDOW}
        device temperature when the window opened
    end_temperature_c     float64  °C     {_WINDOW}
        device temperature when the window closed
    start_sm_clock_mhz    float64  MHz    {_WINDOW}
        SM clock when the window opened
    end_sm_clock_mhz      float64  MHz    {_WINDOW}
        SM clock when the window closed
    pause_before_s        float64  s      {_WINDOW}
        random pause before this window
    phase_shift_s         float64  s      {_WINDOW}
        idle delays inside the window that shift the workload's phase against the sensor
    thermal_state         string   -      {_WINDOW}
        the die temperature the energy is stated at: sustained (brought to the temperature
        this configuration settles at when run for ever, with the board's heat from
        `joulebench check`) or as-run (the window's own, uncorrected)
    sustained_temperature_c float64 °C    {_WINDOW}
        the configuration's sustained die temperature, from the window's power (sustained
        only)
    thermal_correction    float64  ratio  {_WINDOW}
        energy at the stated state / energy as measured, minus 1 (0 as run)
    tail_excess_j         float64  J      {_WINDOW}
        the board's excess after work in the window's phase shifts, taken out of the
        images' energy (core.tail; 0 where no tail was measured)
    tail_bound_j          float64  J      {_WINDOW}
        how far tail_excess_j may be off (at the stated state): added to the CI
    tail_below_j          float64  J      {_WINDOW}
        where no tail was measured, the largest assumed tail's excess in the shifts: the
        CI's low end reaches this much lower
    tail_source           string   -      {_WINDOW}
        check, assumed, or empty without phase shifts
    flags                 string   -      {_WINDOW}
        ;-joined flags the meter raised in this window
    energy_gpu_per_image_j float64 J      core.protocol.node_per_image
        the job's GPU's energy in the window per image; NaN on a CPU device
    energy_cpu_per_image_j float64 J      core.protocol.node_per_image
        the CPU packages' energy (RAPL, else the estimate) in the window per image, this
        job's share when measurements overlapped (host-shared)
    energy_dram_per_image_j float64 J     core.protocol.node_per_image
        the DRAM's energy (RAPL dram zones) per image; NaN where not read
    energy_node_per_image_j float64 J     core.protocol.node_per_image
        gpu + cpu + dram per image, of the parts that were read
    host_cpu_share        float64  ratio  core.meters.node.NodeMeter.end
        this job's share of the host's busy CPU time, by which the host's energy was
        attributed when measurements overlapped (1 when alone)
    concurrent_measurements float64 count core.meters.node.NodeMeter.end
        measurements running on this host in the window (this one included)
    """
)

# A method's knobs as row columns (asked for, and read back by the device's backend), in the
# profile's order: every later table that names a configuration carries them.
KNOB_COLUMNS = tuple(c.name for c in PROFILE.columns if c.producer == f"joulebench.{_KNOB}")

REPEATS = Table(
    "repeats",
    "results/profile/<device>/repeats/<model>.parquet",
    "measurement window (repeat) of a configuration",
    (*_CONFIG, *WINDOW),
)

# A power trace's columns, as a meter samples them (meters.base.TRACE_COLUMNS); missing: NaN.
TRACE_SAMPLE = _declare(
    """
    t_s                   float64  s      core.meters.sampler.Sampler.sample
        seconds since the window began (monotonic clock)
    power_w               float64  W      core.meters.nvml.NvmlMeter._read_sample
        instantaneous power (RAPL: over the last sampling interval)
    power_avg_w           float64  W      core.meters.nvml.NvmlMeter._read_sample
        the device's own averaged power field, where it has one
    sm_clock_mhz          float64  MHz    core.meters.nvml.NvmlMeter._read_sample
        SM clock
    mem_clock_mhz         float64  MHz    core.meters.nvml.NvmlMeter._read_sample
        memory clock
    temperature_c         float64  °C     core.meters.nvml.NvmlMeter._read_sample
        device temperature
    utilization_pct       float64  %      core.meters.nvml.NvmlMeter._read_sample
        device utilisation as NVML reports it
    """
)

TRACE = Table(
    "trace",
    "results/profile/<device>/trace/<job>.parquet",
    "power sample inside a measurement window",
    (
        *_CONFIG,
        *_declare(
            """
            repeat                Int64    count  core.protocol.stack_traces
                0-based index of the window the sample belongs to
            """
        ),
        *TRACE_SAMPLE,
    ),
)

# --- stages 2 and 6: accuracy -----------------------------------------------------------------

_REFERENCE = "accuracy.reference.reference_row"

ACCURACY = Table(
    "accuracy",
    "results/accuracy.parquet",
    "model: its accuracy and where it comes from",
    _declare(
        f"""
        model                 string   -      {_REFERENCE}
            timm name (arch.tag)
        img_size              Int64    px     {_REFERENCE}
            the resolution the accuracy belongs to (the model's input size)
        top1                  float64  %      {_REFERENCE}
            top-1 accuracy on ImageNet-1k val
        top5                  float64  %      {_REFERENCE}
            top-5 accuracy on ImageNet-1k val
        accuracy_source       string   -      {_REFERENCE}
            measured, reference or none (in a summary from elsewhere also unknown)
        accuracy_dataset      string   -      {_REFERENCE}
            e.g. imagenet-val (50000 images), or timm results-imagenet.csv at its commit
        accuracy_images       Int64    count  accuracy.measured.measure_one
            images evaluated (measured only)
        top1_real             float64  %      {_REFERENCE}
            timm's reference top-1 on ImageNet-ReaL labels, where published
        top1_v2               float64  %      {_REFERENCE}
            timm's reference top-1 on ImageNetV2 matched-frequency, where published
        accuracy_note         string   -      {_REFERENCE}
            why a value is missing (no weights, offline, not published), or its origin
        """
    ),
    key=("model",),
)

# --- stage 7: the summary ---------------------------------------------------------------------

_PROFILE_NOT_SUMMARISED = ("phase", "meter_detail", "runtime_detail")  # phase goes first
_BUILD = "analysis.summary.build_summary"

SUMMARY = Table(
    "summary",
    "results/summary.parquet (+ .csv)",
    "configuration, with its catalog and accuracy columns (a catalogued model without a "
    "profile row is a row with status not-profiled)",
    (
        *_same(PROFILE, "phase"),
        *(
            _renamed(
                PROFILE,
                "is_estimate",
                "energy_is_estimate",
                "tables.energy_is_estimate",
                "True: the energy is modelled (an estimate), not read from a counter; from "
                "the meter's name where the profile does not say",
            )
            if c.name == "is_estimate"
            else c
            for c in PROFILE.columns
            if c.name not in _PROFILE_NOT_SUMMARISED
        ),
        *_same(
            CATALOG,
            "architecture",
            "pretrained_tag",
            "family",
            "params",
            "num_classes",
            "input_height",
            "input_width",
            "flops_per_image",
            "macs_per_image",
            "activations_per_image",
        ),
        _renamed(
            CATALOG,
            "status",
            "catalog_status",
            _BUILD,
            "the catalog row's status: ok, failed, or missing (no catalog row)",
        ),
        _renamed(CATALOG, "reason", "catalog_reason", _BUILD, "the catalog row's reason"),
        *(
            _renamed(ACCURACY, "img_size", "accuracy_img_size", _BUILD)
            if c.name == "img_size"
            else c
            for c in ACCURACY.columns
            if c.name != "model"
        ),
        *_declare(
            """
            gpu_spread_fraction   float64  ratio  analysis.summary._stated
                (max - min) / mean of energy_per_image_j between the GPUs of one pool that
                measured the same configuration (each_model_on: k labels, one GPU each
                time): GPU-to-GPU variation, after the board factors; empty where one GPU
                measured it
            energy_per_image_as_read_j float64 J  analysis.boards.apply_board_factors
                energy_per_image_j as the row's own board read it, before its board factor
                (the same where no factor applies)
            board_factor          float64  ratio  analysis.boards.apply_board_factors
                the row's board's reading of the reference levels per its pool's reference
                board's (the slope of the line between them; 1 for the reference board):
                energy_per_image_j is stated as the reference board reads it
                (docs/measurement.md#boards-that-disagree); empty off a GPU, or where the
                board read no reference levels
            board_offset_w        float64  W      analysis.boards.apply_board_factors
                the line's offset: the board reads board_factor x the reference board's
                power + this
            board_factor_ci95_rel float64  ratio  analysis.boards._restated
                what the line may be off at the row's power (95 %), relative to its energy:
                the energy's CI is widened by it; empty where no factor applies
            board_factor_source   string   -      analysis.boards.apply_board_factors
                reference (the pool's reference board: as read), fitted (stated as the
                reference board reads it), calibrated (the reference board was calibrated
                against an external meter: true watts), none (a GPU whose board read no
                reference levels: as read, and not comparable across the pool); empty off
                a GPU
            board_reference_uuid  string   -      analysis.boards.apply_board_factors
                the UUID of the pool's reference board; empty where none
            pool_board_spread_fraction float64 ratio analysis.boards.apply_board_factors
                how far the pool's boards disagree before any factor: (max - min) / mean of
                their readings of the standard load; empty for a pool of one
            sensor_uncertainty_rel float64 ratio  analysis.summary.absolute_ci
                the sensor's own calibration uncertainty against true power (relative, 95 %:
                what no CI here covers; published figures, sensor_uncertainty_source says
                which); empty where none is known
            sensor_uncertainty_source string -    analysis.summary.absolute_ci
                where sensor_uncertainty_rel comes from, or why none is known
            energy_per_image_abs_ci95_low_j float64 J analysis.summary.absolute_ci
                lower end of the energy's interval against true power: its CI (the
                measurement, and the board factor) widened by sensor_uncertainty_rel; empty
                where that is not known
            energy_per_image_abs_ci95_high_j float64 J analysis.summary.absolute_ci
                upper end of that interval
            run                   string   -      analysis.merge.join
                the run (or release) that measured the row, in a merged table (joulebench
                merge); empty in a run's own summary
            run_factor            float64  ratio  analysis.merge.run_factors
                in a merged table, the slope of the line from this row's run's reference
                board to the first run's (its energies are stated as that board reads them;
                docs/releases.md#merge); empty for the first run, and where no factor applies
            """
        ),
    ),
    key=("phase", "device_label", "method", "model", "batch_size_requested"),
)

# --- stage 7b: predictions for the models not measured (issue 42) ----------------------------

_PREDICT = "analysis.predict._group"
SOURCES = ("measured", "predicted")  # `source`: how a row's numbers were got

PREDICTED = Table(
    "predicted",
    "results/predicted.parquet",
    "(phase, device, method, batch size, estimated or not) measured, x catalog model not "
    "measured there: its energy and throughput predicted, with intervals (docs/predictions.md)",
    (
        *_same(SUMMARY, "phase", "device_label", "method", "batch_size_requested"),
        *_same(SUMMARY, "energy_is_estimate", "model"),
        *_declare(
            f"""
            source                string   -      {_PREDICT}
                predicted: a prediction from the catalog and the rows measured, not a
                measurement (measured rows are the summary's)
            energy_per_image_j    float64  J      analysis.predict._fill
                the predicted energy per image (per sample in train); empty with a note
                where nothing is predicted
            energy_per_image_j_pi_low float64 J   analysis.predict._fill
                lower end of its prediction interval at pi_level
            energy_per_image_j_pi_high float64 J  analysis.predict._fill
                upper end of its prediction interval
            energy_pi_factor      float64  ratio  analysis.predict._fill
                the interval as a factor: sqrt(high / low) (x/÷ this factor)
            throughput_img_s      float64  img/s  analysis.predict._fill
                the predicted images (samples) per second
            throughput_img_s_pi_low float64 img/s analysis.predict._fill
                lower end of its prediction interval at pi_level
            throughput_img_s_pi_high float64 img/s analysis.predict._fill
                upper end of its prediction interval
            throughput_pi_factor  float64  ratio  analysis.predict._fill
                the interval as a factor: sqrt(high / low)
            pi_level              float64  ratio  {_PREDICT}
                the intervals' stated level (0.9: 90 % of models like this inside)
            pi_method             string   -      {_PREDICT}
                how the interval was made (CV+ over the group's measured models)
            kin                   string   -      {_PREDICT}
                its closest kin among the measured: arch (the same architecture and input
                size), stem, family or none; its interval is calibrated on models alike
            n_measured            Int64    count  {_PREDICT}
                models measured in the group the prediction learnt from
            energy_cv_coverage    float64  ratio  analysis.predict._fill
                the group's own check: the share of its measured models inside the
                interval made without them (5-fold); near pi_level where the level holds
            throughput_cv_coverage float64 ratio  analysis.predict._fill
                the same for throughput
            note                  string   -      {_PREDICT}
                why nothing is predicted (too few measured, no catalog size); else empty
            """
        ),
    ),
    key=("phase", "device_label", "method", "batch_size_requested", "energy_is_estimate", "model"),
)

# --- stage 8: scores and fits -----------------------------------------------------------------

_SCORE = "analysis.score.score_summary"

SCORES = Table(
    "scores",
    "results/scores.parquet",
    "summary row, scored within its group (phase, device, method, batch, estimated or not)",
    (
        *_same(
            SUMMARY,
            "phase",
            "device_label",
            "method",
            "batch_size_requested",
            "batch_size",
            "model",
            "family",
            "status",
        ),
        *_declare(
            """
            flags                 string   -      analysis.score.row_flags
                the summary's flags, plus high-spread where the energy CV is too high
            """
        ),
        *_same(SUMMARY, "meter", "energy_is_estimate"),
        *_declare(
            f"""
            energy_kind           string   -      {_SCORE}
                total or dynamic (above idle): which energy was scored
            energy_scope          string   -      {_SCORE}
                device (the device's meter) or node (GPU + CPU packages + DRAM): the
                config's energy_scope, named on every figure axis and on the page
            energy_per_image_j    float64  J      {_SCORE}
                the scored energy: the summary's energy_per_image_j, or
                dynamic_energy_per_image_j when energy_kind is dynamic, or
                energy_node_per_image_j when energy_scope is node
            energy_per_1k_images_wh float64 Wh   analysis.carbon.carbon_columns
                the scored energy of 1,000 images, in watt-hours
            co2e_per_1k_images_g  float64  g      analysis.carbon.carbon_columns
                estimated grams of CO2-equivalent per 1,000 images: Wh x PUE x the
                config's carbon.grid_gco2e_per_kwh; empty when that is not set
            cost_per_1m_images    float64  currency analysis.carbon.carbon_columns
                estimated cost of 1,000,000 images: kWh x PUE x carbon.price_per_kwh (in
                its currency); empty when that is not set
            carbon_note           string   -      analysis.carbon.carbon_columns
                the grid intensity, price and PUE the CO2e and cost assume; empty when none
            """
        ),
        *_same(SUMMARY, "top1", "accuracy_source"),
        *_declare(
            f"""
            scored                boolean  -      {_SCORE}
                True: took part in the front (ok, energy and top-1, no invalidating flag)
            on_front              boolean  -      {_SCORE}
                True: no model in the group is as accurate for less energy
            front_energy_per_image_j float64 J    {_SCORE}
                least energy in the group reaching this top-1
            efficiency_index      float64  ratio  {_SCORE}
                front_energy_per_image_j / energy_per_image_j, in (0, 1]
            grade                 string   -      {_SCORE}
                A..G from the efficiency index; empty where there is no index
            top1_gap_pct          float64  %      {_SCORE}
                best top-1 in the group for at most this energy, minus this top-1
            group_models          Int64    count  {_SCORE}
                scored models in the group
            front_models          Int64    count  {_SCORE}
                models on the group's front
            reference_model       string   -      {_SCORE}
                the model whose energy index is 1.0 (score.reference_model)
            reference_energy_per_image_j float64 J analysis.score.energy_index
                the reference model's energy in the group
            energy_index          float64  ratio  analysis.score.energy_index
                energy_per_image_j / the reference model's, in the group
            score_note            string   -      {_SCORE}
                why something is empty (not scored, no top-1, no reference)
            """
        ),
    ),
    key=SUMMARY.key,
)

_FIT_GROUP = (*_same(SUMMARY, "phase", "device_label", "method", "batch_size_requested"),)
_FIT_GROUP += (*_same(SUMMARY, "energy_is_estimate"), *_same(SCORES, "energy_kind"))
_FACTOR = "analysis.fits.factor_fits"
_ACC = "analysis.fits.accuracy_fits"

FACTOR_FITS = Table(
    "factor_fits",
    "results/fits/factor_fits.parquet",
    "fit log10(E) = intercept + slope x log10(factor), per group, factor and family",
    (
        *_FIT_GROUP,
        *_declare(
            f"""
            factor                string   -      {_FACTOR}
                flops_per_image, params or activations_per_image
            family                string   -      {_FACTOR}
                the family fitted, or all for the overall fit
            n                     Int64    count  analysis.fits.linear_fit
                models in the fit
            n_host_bound          Int64    count  {_FACTOR}
                of them, rows flagged host-bound (the GPU waited on the host: their energy
                follows launches more than size); score.invalid_flags: [host-bound] leaves them
                out
            slope                 float64  ratio  analysis.fits.linear_fit
                d log10(E) / d log10(factor)
            slope_se              float64  ratio  analysis.fits.linear_fit
                standard error of the slope (empty for n < 3)
            intercept_log10       float64  -      {_FACTOR}
                intercept in log10 space
            prefactor_j           float64  J      {_FACTOR}
                10 ** intercept_log10: E = prefactor_j x factor ** slope
            r2                    float64  ratio  analysis.fits.linear_fit
                coefficient of determination, in log space
            """
        ),
    ),
)

ACCURACY_FITS = Table(
    "accuracy_fits",
    "results/fits/accuracy_fits.parquet",
    "fit of top-1 against energy per image, per group, subset and form",
    (
        *_FIT_GROUP,
        *_declare(
            f"""
            subset                string   -      {_ACC}
                all (every scored model) or front (the Pareto front only)
            form                  string   -      {_ACC}
                log-linear or saturating
            n                     Int64    count  {_ACC}
                models in the fit
            intercept_pct         float64  %      {_ACC}
                log-linear: top1 = intercept_pct + slope_pct_per_decade x log10(E)
            slope_pct_per_decade  float64  %      {_ACC}
                log-linear: points of top-1 per decade of energy
            ceiling_pct           float64  %      {_ACC}
                saturating: top1 = ceiling_pct - amplitude_pct x (E / energy_scale_j) **
                (-exponent); the accuracy ceiling
            amplitude_pct         float64  %      {_ACC}
                saturating: the amplitude
            exponent              float64  ratio  {_ACC}
                saturating: how fast returns diminish
            energy_scale_j        float64  J      {_ACC}
                saturating: the geometric mean energy of the fit
            r2                    float64  ratio  {_ACC}
                coefficient of determination
            rmse_pct              float64  %      {_ACC}
                root mean square error of top-1
            note                  string   -      {_ACC}
                why a fit is empty or doubtful
            """
        ),
    ),
)

_LAW = "analysis.fits.compare_laws"

ACCURACY_LAW = Table(
    "accuracy_law",
    "results/fits/accuracy_law.parquet",
    "(group, subset, form): the form fitted to top-1 against energy per image, and how it "
    "compares with the other forms",
    (
        *_FIT_GROUP,
        *_declare(
            f"""
            subset                string   -      analysis.fits.accuracy_law
                all (every scored model) or front (the Pareto front only)
            form                  string   -      {_LAW}
                log-linear: top1 = a + b log10(E); power-law: top1 = a - b (E/E0)^(-c), E0 the
                geometric mean energy; double-exponential: top1 = a + b ln(ln(E/c)), i.e.
                E = c exp(exp((top1 - a) / b))
            n                     Int64    count  {_LAW}
                models in the fit
            params                Int64    count  {_LAW}
                the form's fitted parameters (2 or 3)
            coef_a                float64  %      {_LAW}
                a: intercept (log-linear, double-exponential) or the ceiling (power-law)
            coef_b                float64  %      {_LAW}
                b: points per decade (log-linear), amplitude (power-law), or points per unit
                of ln ln E (double-exponential)
            coef_c                float64  -      {_LAW}
                c: exponent (power-law, ratio) or the energy scale E_s in J
                (double-exponential); empty for log-linear
            rmse_pct              float64  %      {_LAW}
                root mean square error of top-1 over the fitted models
            aic                   float64  -      {_LAW}
                Akaike's criterion, n ln(RSS/n) + 2 (params + 1): lower is better
            bic                   float64  -      {_LAW}
                Bayesian criterion, n ln(RSS/n) + (params + 1) ln n: lower is better
            delta_bic             float64  -      {_LAW}
                bic minus the lowest bic of the forms (0: the winner; above 6: strongly worse)
            cv_rmse_pct           float64  %      {_LAW}
                k-fold (5, or n if fewer) held-out root mean square error of top-1
            best_by_aic           boolean  -      {_LAW}
                True: the lowest aic of the forms
            best_by_bic           boolean  -      {_LAW}
                True: the lowest bic: the form the figure draws
            best_by_cv            boolean  -      {_LAW}
                True: the lowest held-out error
            note                  string   -      analysis.fits.accuracy_law
                why a fit is empty or doubtful (too few models, a parameter at its bound)
            """
        ),
    ),
)

_SAVE = "analysis.fits.method_savings"

METHOD_SAVINGS = Table(
    "method_savings",
    "results/fits/method_savings.parquet",
    "(model, batch size, method other than the baseline): its saving against the baseline",
    (
        *_same(SUMMARY, "phase", "device_label", "model", "family", "batch_size_requested"),
        *_same(SUMMARY, "method"),
        *_declare(
            f"""
            baseline_method       string   -      {_SAVE}
                the method savings are computed against (fits.baseline_method)
            """
        ),
        *_same(SUMMARY, "batch_size"),
        *_declare(
            f"""
            baseline_batch_size   Int64    images {_SAVE}
                the batch size the baseline ran
            """
        ),
        *_same(SCORES, "energy_kind"),
        *_declare(
            f"""
            energy_per_image_j    float64  J      {_SAVE}
                the method's compared energy (total or dynamic, per energy_kind)
            baseline_energy_per_image_j float64 J {_SAVE}
                the baseline's compared energy
            saving                float64  ratio  {_SAVE}
                1 - energy_per_image_j / baseline_energy_per_image_j (0.3: 30 % less)
            """
        ),
        *_same(SUMMARY, "energy_is_estimate"),
        *_declare(
            f"""
            note                  string   -      {_SAVE}
                why a saving is empty
            """
        ),
    ),
)

_BATCH = "analysis.fits.batch_scaling"

BATCH_SCALING = Table(
    "batch_scaling",
    "results/fits/batch_scaling.parquet",
    "comparable configuration: its energy against its model's smallest batch",
    (
        *_same(SUMMARY, "phase", "device_label", "method", "model", "family"),
        *_same(SUMMARY, "batch_size_requested", "batch_size"),
        *_same(SCORES, "energy_kind"),
        *_declare(
            f"""
            energy_per_image_j    float64  J      {_BATCH}
                the compared energy (total or dynamic, per energy_kind)
            """
        ),
        *_same(SUMMARY, "throughput_img_s", "energy_is_estimate"),
        *_declare(
            f"""
            energy_vs_smallest_batch float64 ratio {_BATCH}
                energy_per_image_j / the same at this model's smallest batch size run
            """
        ),
    ),
)

FIT_TABLES = (FACTOR_FITS, ACCURACY_FITS, ACCURACY_LAW, METHOD_SAVINGS, BATCH_SCALING)

# --- decisions: the energy-optimal configuration of each model ---------------------------------

_BEST_ROW = "analysis.best_configs._best_row"

BEST_CONFIGS = Table(
    "best_configs",
    "results/best_configs.parquet",
    "(phase, device, model, estimated or not, simulated or not, constraint): the "
    "least-energy configuration meeting the constraint",
    (
        *_same(SUMMARY, "phase", "device_label", "model", "energy_is_estimate", "is_simulated"),
        *_declare(
            f"""
            constraint            string   -      {_BEST_ROW}
                none (overall), or e.g. latency_ms<=50, throughput_img_s>=100, batch_size<=1
            constraint_kind       string   -      {_BEST_ROW}
                none, max_latency_ms, min_throughput_img_s or max_batch_size (decisions:)
            constraint_value      float64  -      {_BEST_ROW}
                the limit (ms, img/s or images); empty for none
            met                   boolean  -      {_BEST_ROW}
                True: some comparable configuration meets the constraint
            """
        ),
        *_same(SUMMARY, "family", "top1"),
        *_same(SCORES, "energy_kind"),
        *_same(SUMMARY, "method", "runtime", "batch_size_requested", "batch_size", "meter"),
        *_same(SUMMARY, *KNOB_COLUMNS),
        *_declare(
            """
            configuration         string   -      analysis.best_configs.best_configs
                what to run, in words: the method with its power limit and locked clock, and
                the batch size (fp16@0.6 (power limit 60 % of default = 420 W), batch 64),
                ending in (simulated) for a simulated GPU's (decisions.include_simulated);
                empty where nothing meets the constraint
            """
        ),
        *_declare(
            f"""
            energy_per_image_j    float64  J      {_BEST_ROW}
                the least compared energy (total or dynamic, per energy_kind) meeting it
            energy_per_image_ci95_low_j float64 J {_BEST_ROW}
                lower end of that configuration's 95% CI (of the compared energy)
            energy_per_image_ci95_high_j float64 J {_BEST_ROW}
                upper end of that configuration's 95% CI
            latency_ms            float64  ms     analysis.best_configs.comparable
                time per batch compared: the p95 where measured, else the mean
            latency_kind          string   -      analysis.best_configs.comparable
                p95, mean, or derived (batch_size / throughput_img_s, for a summary without
                latency columns): which latency_ms is
            """
        ),
        *_same(SUMMARY, "throughput_img_s"),
        *_declare(
            f"""
            configurations        Int64    count  {_BEST_ROW}
                comparable configurations of this model (score's rules: ok, not flagged)
            configurations_meeting Int64   count  {_BEST_ROW}
                of those, the ones meeting the constraint
            ties_within_ci        Int64    count  {_BEST_ROW}
                other configurations meeting it whose 95% CI reaches the best one's: the best
                is not told apart from these
            note                  string   -      {_BEST_ROW}
                why a row is empty: nothing comparable, or what the closest configuration misses
            """
        ),
    ),
    key=("phase", "device_label", "model", "energy_is_estimate", "is_simulated", "constraint"),
)

# --- stage 10: the web page's rows (embedded JSON and its CSV download) -----------------------

PAGE = Table(
    "page",
    "results/webapp/index.html (embedded; also the page's CSV download)",
    "summary row, with its score",
    (
        *_same(SUMMARY, *SUMMARY.key),
        *_same(
            SUMMARY,
            "batch_size",
            "family",
            "architecture",
            "pretrained_tag",
            "status",
            "reason",
        ),
        *_same(SCORES, "flags"),
        *_same(
            SUMMARY,
            "energy_per_image_j",
            "energy_per_image_std_j",
            "energy_per_image_cv",
            "energy_per_image_ci95_low_j",
            "energy_per_image_ci95_high_j",
            "dynamic_energy_per_image_j",
            "dynamic_energy_per_image_cv",
            "dynamic_energy_per_image_ci95_low_j",
            "dynamic_energy_per_image_ci95_high_j",
            "throughput_img_s",
            "latency_ms_mean",
            "latency_ms_p95",
            "gpu_busy_fraction",
            "power_mean_w",
            "idle_power_w",
            "top1",
            "top5",
            "accuracy_source",
            "accuracy_dataset",
            "params",
            "flops_per_image",
            "macs_per_image",
            "activations_per_image",
            "input_height",
            "input_width",
            "repeats",
            "images",
            "meter",
            "energy_is_estimate",
            "meter_reasons",
            "device_name",
            "torch_device",
            "host",
            "weights",
            "driver_version",
            "cuda_version",
            "torch_version",
            "timm_version",
            "start_time_utc",
        ),
        *_same(
            SUMMARY,
            "energy_gpu_per_image_j",
            "energy_cpu_per_image_j",
            "energy_dram_per_image_j",
            "energy_node_per_image_j",
            "host_is_estimate",
            "is_simulated",
            "concurrent_measurements",
        ),
        *_same(
            SCORES,
            "energy_scope",
            "energy_per_1k_images_wh",
            "co2e_per_1k_images_g",
            "cost_per_1m_images",
            "carbon_note",
        ),
        *_same(SCORES, "energy_kind"),
        _renamed(
            SCORES,
            "energy_per_image_j",
            "scored_energy_per_image_j",
            "report.webapp.page_table",
            "the scored energy (the scores' energy_per_image_j): with energy_kind dynamic, "
            "the energy above idle, so it is never mistaken for the summary's total",
        ),
        *_same(
            SCORES,
            "scored",
            "on_front",
            "front_energy_per_image_j",
            "efficiency_index",
            "grade",
            "top1_gap_pct",
            "group_models",
            "reference_model",
            "energy_index",
            "score_note",
        ),
        *_declare(
            """
            source                string   -      report.webapp.page_table
                measured (a summary row) or predicted (a row of the predicted table, status
                predicted: energy_per_image_j, scored_energy_per_image_j and throughput_img_s
                hold the predictions, the catalog and accuracy columns are the summary's for
                that model, and no measurement column is filled)
            """
        ),
        *_same(
            PREDICTED,
            "energy_per_image_j_pi_low",
            "energy_per_image_j_pi_high",
            "energy_pi_factor",
            "throughput_img_s_pi_low",
            "throughput_img_s_pi_high",
            "pi_level",
            "kin",
            "n_measured",
            "energy_cv_coverage",
        ),
        *_declare(
            """
            grade_range           string   -      analysis.grade_ranges.grade_ranges
                a predicted row's grades, from its interval's low energy to its high one,
                against the measured front of its score group ("B–D"; one letter where both
                agree); never a grade. Empty for measured rows and where no range can be
                said (score_note says why)
            """
        ),
    ),
    key=SUMMARY.key,
)

# --- the check report (results/check/<device>.json) -------------------------------------------

_REPORT = "check.report.CheckReport.as_dict"

CHECK = Table(
    "check",
    "results/check/<device>.json (JSON, validated against check.report.report_schema)",
    "`joulebench check` of a device",
    _declare(
        f"""
        schema_version        Int64    -      {_REPORT}
            the report layout's version
        check_id              string   -      {_REPORT}
            <device>-<UTC time>-<random>: what profile rows record in check_id
        device                string   -      {_REPORT}
            cpu, cuda:N or sim:<gpu> (a simulated GPU)
        device_name           string   -      {_REPORT}
            the GPU's or CPU's product name
        uuid                  string   -      {_REPORT}
            the GPU's UUID (null on a CPU): a report counts only for this very GPU
        verdict               string   -      {_REPORT}
            pass, warn or fail: the worst status of the results
        start_time_utc        string   -      {_REPORT}
            when the check started, ISO 8601 UTC
        duration_s            float64  s      {_REPORT}
            how long the check ran
        meter                 string   -      {_REPORT}
            the meter the check read
        is_estimate           boolean  -      {_REPORT}
            True: the meter models energy (an estimate)
        meter_detail          object   -      {_REPORT}
            the meter's own description
        sensor                object   -      {_REPORT}
            fitted refresh period and averaging window, and the published values (GPU)
        protocol              object   -      {_REPORT}
            what the profile will use: sensor_refresh_s, min_window_s
        software              object   -      {_REPORT}
            versions of joulebench, python, numpy (and torch, CUDA where loaded), host
        results               object   -      {_REPORT}
            the check's rows (check_results)
        """
    ),
)

CHECK_RESULTS = Table(
    "check_results",
    "results/check/<device>.json, under results",
    "check: what, how it came out, and what that means for the numbers",
    _declare(
        """
        group                 string   -      check.report.Row
            environment, idle, sensor, counter, repeat, input, cross-check or rapl
        name                  string   -      check.report.Row
            what was checked
        status                string   -      check.report.Row
            pass, warn, fail or skip
        value                 object   -      check.report.Row
            the measured value (number, text, yes/no; null when none)
        unit                  string   -      check.report.Row
            the value's unit ("" for ratios)
        target                string   -      check.report.Row
            what passes
        detail                string   -      check.report.Row
            a sentence on what the value means for the numbers
        """
    ),
)

# Every output table, by name, in the order the workflow makes them.
TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        CATALOG,
        IDLE,
        PROFILE,
        REPEATS,
        TRACE,
        ACCURACY,
        SUMMARY,
        PREDICTED,
        SCORES,
        *FIT_TABLES,
        BEST_CONFIGS,
        PAGE,
        CHECK,
        CHECK_RESULTS,
    )
}

# The dtype maps every stage conforms to (name -> pandas dtype).
CATALOG_COLUMNS = CATALOG.dtypes
IDLE_COLUMNS = IDLE.dtypes
PROFILE_COLUMNS = PROFILE.dtypes
REPEAT_TABLE_COLUMNS = REPEATS.dtypes
TRACE_TABLE_COLUMNS = TRACE.dtypes
ACCURACY_COLUMNS = ACCURACY.dtypes
SUMMARY_COLUMNS = SUMMARY.dtypes
SCORE_COLUMNS = SCORES.dtypes
FIT_TABLE_COLUMNS = {t.name: t.dtypes for t in FIT_TABLES}


def columns_markdown() -> str:
    """docs/columns.md: every table with its columns, units, meanings and producers, then
    the flags (joulebench.flags)."""
    lines = [
        "# Columns",
        "",
        "Every column of every table joulebench writes, with its dtype, unit, meaning and the",
        "function that computes it. Generated from `joulebench.tables` (the registry) by",
        "`joulebench columns --markdown > docs/columns.md`; a test fails when this file is",
        "stale. Units are also in the names (`_j` joules, `_w` watts, `_s` seconds, `_ms`,",
        "`_pct` percent, `_img_s` images per second); *ratio* is dimensionless.",
        "",
        "Tables: "
        + ", ".join(f"[{t.name}](#{t.name})" for t in TABLES.values())  # GitHub keeps _
        + "; the [statuses](#statuses) of a profile row; the [protocol fingerprint]"
        "(#protocol-fingerprint); and the [flags](#flags) of the `flags` columns.",
        "",
    ]
    for table in TABLES.values():
        lines += [f"## {table.name}", "", f"`{table.path}`: one row per {table.row}."]
        if table.key:
            lines[-1] += " Key: " + ", ".join(f"`{k}`" for k in table.key) + "."
        lines += ["", "| column | dtype | unit | meaning | producer |", "|---|---|---|---|---|"]
        for c in table.columns:
            producer = f"`{c.producer.removeprefix('joulebench.')}`"
            if c.renamed_from and c.origin == table.name:
                producer += f" (renamed from `{c.renamed_from}`)"
            elif c.origin != table.name:
                producer += f" (as in {c.origin})"
            meaning = c.meaning.replace("|", "\\|")
            lines.append(f"| `{c.name}` | {c.dtype} | {c.unit} | {meaning} | {producer} |")
        lines.append("")
    return "\n".join(lines + _statuses_markdown() + _fingerprint_markdown() + flags_markdown())


def _fingerprint_markdown() -> list[str]:
    """What the protocol fingerprint hashes (FINGERPRINT_FIELDS)."""
    return [
        "## Protocol fingerprint",
        "",
        "`protocol_fingerprint` is 12 hex digits of the SHA-256 of these fields of a measured",
        "row (JSON, keys sorted; numbers rounded to 3 decimals, empty ones null): the fields",
        "that change a number beyond the configuration itself. Rows with the same fingerprint",
        "were measured under the same setup; `joulebench merge` keeps rows whose fingerprints",
        "differ apart. A board's own identity (UUID, serial, check id) is not hashed: a",
        "pool's boards are made comparable by their factors (`board_factor`), not kept apart.",
        "The profile's fingerprint has no `board_factor_source` (no factor is applied there);",
        "the summary's has it, `fitted` hashed as `reference` (both are the pool's reference",
        "board's reading).",
        "",
        ", ".join(f"`{name}`" for name in FINGERPRINT_FIELDS),
        "",
    ]


def _statuses_markdown() -> list[str]:
    """What each profile `status` means (PROFILE_STATUSES)."""
    lines = [
        "## Statuses",
        "",
        "A profile row's `status`:",
        "",
        "| status | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in PROFILE_STATUSES.items()]
    lines += ["", "Later tables add:", "", "| status | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in LATER_STATUSES.items()]
    return [*lines, ""]


def columns_text(table: str | None = None) -> str:
    """What `joulebench columns` prints: each table's path, then its columns, one a line."""
    lines = []
    for t in TABLES.values():
        if table and t.name != table:
            continue
        lines.append(f"{t.name}: {t.path}")
        for c in t.columns:
            unit = f" [{c.unit}]" if c.unit else ""
            lines.append(f"  {c.name} ({c.dtype}){unit}: {c.meaning}")
    return "\n".join(lines) + "\n"


# --- values that several stages decide the same way --------------------------------------------


def is_estimate_meter(meter) -> bool:
    """True for a meter that models energy (`estimate:<model>`) rather than reads a counter."""
    return isinstance(meter, str) and meter.startswith(ESTIMATE_METER_PREFIX)


# The fields that change a number, beyond the configuration itself (docs/columns.md#protocol-
# fingerprint): the GPU product and driver, which reading and its refresh, the power limit and
# locked clock, the arithmetic, CUDA graphs, the runtime and its version, torch, timm, the
# preset, how heat and the tail were handled, and how the energy was made comparable across
# boards. A board's own identity (UUID, serial, check id) is not among them: a pool's boards
# are made comparable by their factors (board_factor), not kept apart.
FINGERPRINT_FIELDS = (
    "device_name",
    "driver_version",
    "meter",
    "sensor_reading",
    "sensor_refresh_s",
    "power_limit_w",
    "sm_clock_readback_mhz",
    "fp32_math",
    "cudnn_autotune",
    "cuda_graphs",
    "runtime",
    "runtime_version",
    "torch_version",
    "timm_version",
    "protocol_preset",
    "thermal_state",
    "tail_source",
    "board_factor_source",
)


# Values of a field that state a number alike: a pool's reference board's rows (as read) and
# its other boards' (through their factors) are both as the reference board reads them.
FINGERPRINT_SAME = {"board_factor_source": {"fitted": "reference"}}


def _plain(value):
    """A field as the fingerprint hashes it: empty for NA, whole watts and megahertz, a
    refresh in ms; text as is."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or hasattr(value, "item") and isinstance(value.item(), bool):
        return bool(value)
    if isinstance(value, int | float) or hasattr(value, "item"):
        return round(float(value), 3)
    return str(value)


def fingerprint_of(row) -> str:
    """The protocol fingerprint of one row (a mapping): 12 hex digits of the SHA-256 of its
    FINGERPRINT_FIELDS (absent ones empty); empty for a row that measured nothing."""
    if row.get("status") not in ("ok", STATUS_INVALID):
        return ""
    fields = {name: _plain(row.get(name)) for name in FINGERPRINT_FIELDS}
    for name, same in FINGERPRINT_SAME.items():
        fields[name] = same.get(fields[name], fields[name])
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def protocol_fingerprint(df: pd.DataFrame) -> pd.Series:
    """Each row's protocol_fingerprint (fingerprint_of), as a string column. Hashed once per
    distinct set of its fields: a study's rows share a few protocols, and hashing each of
    300,000 rows took 40 s of a summary."""
    if df.empty:
        return pd.Series([], index=df.index, dtype="string")
    fields = [c for c in ("status", *FINGERPRINT_FIELDS) if c in df.columns]
    group = df.groupby(fields, dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(group, return_index=True)  # first is in group order
    prints = [fingerprint_of(row) for row in df.iloc[first][fields].to_dict("records")]
    return pd.Series(np.asarray(prints, dtype=object)[group], index=df.index, dtype="string")


# The sensor's own calibration uncertainty against true power (relative, 95 %), by meter
# kind, with where the figure comes from: what a CI of repeats can never cover.
SENSOR_UNCERTAINTY = {
    "nvml": (
        0.05,
        "NVIDIA states no accuracy after Kepler (NVML: +-5 % of draw on Fermi and Kepler); "
        "boards of one product differ by about +-5 % in gain (SC'24, arXiv 2312.02741)",
    ),
    "amdsmi": (math.nan, "AMD states no accuracy for its power reading"),
    "rapl": (
        math.nan,
        "Intel and AMD state no accuracy for RAPL (reported close to external meters on "
        "Intel since Haswell)",
    ),
    "estimate": (math.nan, "an estimate: its power model's error is not known"),
    "sim": (0.05, "a simulated sensor, drawn with the gain spread real boards show (sim.boards)"),
}


def sensor_uncertainty(meter: str) -> tuple[float, str]:
    """(sensor_uncertainty_rel, sensor_uncertainty_source) of a row's meter."""
    if not isinstance(meter, str) or not meter:
        return math.nan, ""
    kind = "sim" if meter.endswith(":sim") else meter.split(":")[0]
    return SENSOR_UNCERTAINTY.get(kind, (math.nan, f"no figure known for meter {meter}"))


# A board's reference readings (results/boards/<uuid>.json, jobs.board_reference), read by
# the summary's board factors (analysis.boards): its levels, in the order they are read.
BOARD_LEVELS = ("random", "zeros", "idle")
BOARD_RECORD_VERSION = 1


def check_board_record(record: dict) -> None:
    """ValueError (or KeyError, TypeError) where a board's record is not one this version
    writes, or holds what no board reads (a level's power not in (0, 3000] W)."""
    if record.get("schema_version") != BOARD_RECORD_VERSION:
        raise ValueError(f"schema_version {record.get('schema_version')!r}")
    if not isinstance(record["uuid"], str) or not record["uuid"]:
        raise ValueError("no uuid")
    for level in BOARD_LEVELS:
        values = record["levels"][level]
        power, half = float(values["power_w"]), float(values["ci95_half_w"])
        if not (0 < power <= POWER_LIMIT_W_MAX and (math.isnan(half) or half >= 0)):
            raise ValueError(f"level {level}: {power} W +- {half}")
    calibration = record.get("calibration")
    if calibration is not None:  # jobs.calibration: a sensor within a factor 2 of the truth
        gain, offset = float(calibration["gain"]), float(calibration["offset_w"])
        rel = float(calibration["rel_uncertainty"])
        if not (0.5 <= gain <= 2 and abs(offset) <= POWER_LIMIT_W_MAX and 0 <= rel <= 1):
            raise ValueError(f"calibration: gain {gain}, offset {offset} W, +- {rel}")


def impossible_energy(fields: dict) -> str:
    """Why a measured row's energy per image cannot be ('' where it can): not a positive,
    finite number of joules. Such a row is never `ok` (a check report's implausible tail
    once made `ok` rows of negative energy)."""
    value = fields.get("energy_per_image_j")
    try:
        value = float(value)
    except (TypeError, ValueError):
        return f"energy_per_image_j = {value!r} is not a number"
    if math.isfinite(value) and value > 0:
        return ""
    return f"energy_per_image_j = {value:.4g} J is not positive and finite"


def energy_is_estimate(df: pd.DataFrame) -> pd.Series:
    """Per row: is the energy an estimate? The one rule the summary, figures and page use.

    True where the row says so (`energy_is_estimate`, or a profile's `is_estimate`) or its
    meter is an estimating one; False where it says not and the meter agrees; NA where
    neither is known (e.g. a failed row without a meter).
    """
    said = pd.Series(pd.NA, index=df.index, dtype="boolean")
    for column in ("energy_is_estimate", "is_estimate"):
        if column in df.columns:
            said = df[column].astype("boolean")
            break
    if "meter" not in df.columns:
        return said
    meter = df["meter"].astype("string")
    by_meter = meter.str.startswith(ESTIMATE_METER_PREFIX).astype("boolean")
    by_meter = by_meter.where(meter.fillna("") != "", pd.NA)
    return (said.fillna(by_meter) | by_meter.fillna(False)).astype("boolean")


def short_reason(reason: BaseException | str, max_chars: int = REASON_MAX_CHARS) -> str:
    """A reason column's text: one line (an exception as `Type: message`), no terminal
    colours, at most `max_chars` characters."""
    if isinstance(reason, BaseException):
        reason = f"{type(reason).__name__}: {reason}"
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(reason)).replace("\n", " ").strip()
    return text[:max_chars]


def concat_tables(table: str, parts: Sequence[str | os.PathLike], output) -> pd.DataFrame:
    """The per-job tables of `table` (catalog, profile, or one trace: the figures') as one,
    written to `output`.

    Every damaged part is named at once, with the command that removes them so the next
    run redoes those models (table_io.TableError); nothing is written then.
    """
    frames, damaged = [], []
    for path in parts:
        try:
            frames.append(table_io.read_table(path))
        except table_io.TableError as exc:
            damaged.append((path, exc))
    if damaged:
        redo = "counts" if table == "catalog" else "measures"
        lines = [str(exc) for _, exc in damaged]
        lines.append(
            f"Delete the damaged file(s), and the next run {redo} those models again:\n  rm "
            + " ".join(shlex.quote(str(path)) for path, _ in damaged)
        )
        raise table_io.TableError("\n".join(lines))
    df = pd.concat(frames, ignore_index=True)
    table_io.write_table(df, output, TABLES[table].dtypes)
    return df
