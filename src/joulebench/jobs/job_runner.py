"""A profile job run as a supervisor and its workers (jobs.supervise, issue 35).

`supervised_job` is what `joulebench profile-job` (and the ad-hoc `joulebench profile`)
runs: workers (`joulebench profile-worker`) measure the model's configurations from a
position of the measuring order on, each finished one's tables written to a parts folder
beside the job's outputs; a worker that hangs or dies leaves a row with its status and
reason (`timeout`, `crashed`), and the next worker goes on after it; where none can go on,
the configurations left get `not-measured` rows. After a hang the next workers get the
job's hangs, which make what is left cheap (jobs.hangs: short deadlines, and `not-measured`
rows for what would hang too). The job's tables are then joined from the
parts, in the configurations' own order, and written as before (the rows file last: the
job's done marker). A job that ends for its Snakemake's death writes nothing: a rerun
measures it again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from joulebench.jobs import supervise
from joulebench.jobs.hangs import HangRule
from joulebench.jobs.job_spec import JobSpec
from joulebench.table_io import conform, read_table, write_table
from joulebench.tables import (
    PROFILE_COLUMNS,
    REPEAT_TABLE_COLUMNS,
    TRACE_TABLE_COLUMNS,
    short_reason,
)

STATUS_NOT_MEASURED = supervise.STATUS_NOT_MEASURED
EMPTY_STARTS = 2  # workers in a row that die before their first configuration: the job ends
# measure in this process, without workers: no timeouts, and a crash ends the command (for a
# debugger, and for tests that change this process: a model registered in it, a faked CPU)
IN_PROCESS_ENV = "JOULEBENCH_IN_PROCESS"


class Orphaned(RuntimeError):
    """The job's Snakemake died: it measures nothing more."""


def parts_folder(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".parts")


def fresh_parts(parts: Path) -> Path:
    """The parts folder, made, without what a killed job left there (measured again)."""
    parts.mkdir(parents=True, exist_ok=True)
    for path in parts.glob("*.parquet"):
        path.unlink()
    return parts


def joined_parts(parts: Path, pattern: str, columns) -> pd.DataFrame:
    """The parts matching `pattern`, in their positions' order, as one table of `columns`."""
    found = [read_table(p) for p in sorted(parts.glob(pattern))]
    frame = pd.concat(found, ignore_index=True) if found else pd.DataFrame()
    return conform(frame.reindex(columns=list(columns)), columns)


def worker_argv(job, spec: JobSpec, *, idle, parts, start_at, hangs="") -> list[str]:
    """A worker's command: the job's spec (`spec`: on the GPU it is on now) serialised, the
    one time a worker gets it; `hangs` the job's hangs so far (hangs.HangRule.as_arg)."""
    argv = [*supervise.worker_python(), "profile-worker", f"--device-label={job.device_label}",
            f"--spec={spec.to_json()}", f"--parts={parts}", f"--start-at={start_at}"]  # fmt: skip
    argv += [f"--hangs={hangs}"] if hangs else []
    argv += [f"--idle={idle}"] if idle else []
    argv += [f"--threads={job.threads}"] if job.threads else []
    return [*argv, "--", job.model]


def supervised_job(job, *, idle: str | None, log, outputs=None, failover=None):
    """Every configuration of one job (a profile.ProfileJob) measured by workers, `idle`
    the device's idle baseline's file; the job's three tables (rows, repeats, trace), also
    written to `outputs` (rows, repeats, trace paths) when given. `failover`
    (jobs.gpu_failover): the job's GPU and where it moves when that fails; None (the ad-hoc
    path) ends a failed GPU's configuration as a crash. Raises Orphaned where its Snakemake
    died."""
    parts = fresh_parts(parts_folder(outputs[0]) if outputs else _temp_parts())
    end_orphans(log)
    if os.environ.get(IN_PROCESS_ENV):
        _in_process(job, idle, parts)
    else:
        _workers(job, idle=idle, parts=parts, log=log, failover=failover)
    tables = _joined(parts, job)
    if failover is not None:
        tables = (failover.noted(tables[0]), *tables[1:])
    if outputs:
        for table, path, columns in zip(tables, outputs, _COLUMNS, strict=True):
            write_table(table, path, columns)
    shutil.rmtree(parts, ignore_errors=True)
    return tables


def _workers(job, *, idle, parts, log, failover) -> None:
    """The job's configurations measured by supervised workers, on the failover's GPU."""
    positions = len(job.configs())
    rule = HangRule.for_job(job)

    def spec_now() -> JobSpec:
        return failover.spec if failover is not None else job.spec

    def argv_for(start: int) -> list[str]:
        hangs = rule.as_arg() if rule.hangs else ""
        return worker_argv(job, spec_now(), idle=idle, parts=parts, start_at=start, hangs=hangs)

    def failed(positions_, status: str, reason: str) -> None:
        _failed(job, positions_, status, reason, parts)

    def on_timeout(run, start: int) -> int:
        return _after_hang(rule, run, start, failed, log, job.model)

    why = failover.start_reason() if failover is not None else ""
    if why:
        log(f"{job.model}: not measured: {why}")
        failed(range(positions), STATUS_NOT_MEASURED, why)
        return
    on_fault = None
    if failover is not None:

        def on_fault(run, start: int) -> int:
            return failover.on_fault(run, start, positions, failed, log)

    try:
        supervise_positions(positions, argv_for, failed, log, job.model, on_fault=on_fault,
                            on_timeout=on_timeout)  # fmt: skip
    finally:
        _restore_left(replace(job, spec=spec_now()), log)


def _restore_left(job, log) -> None:
    """What a worker that died left changed on its device (a power limit, a clock), put back
    by the supervisor: where it died in the job's last configuration no worker comes after."""
    from joulebench.jobs.profile import restore_after_workers

    said = restore_after_workers(job)
    if said:
        log(f"{job.model}: {said}")


_COLUMNS = (PROFILE_COLUMNS, REPEAT_TABLE_COLUMNS, TRACE_TABLE_COLUMNS)


def supervise_positions(
    positions: int, argv_for, failed, log, name: str, on_fault=None, on_timeout=None
) -> None:
    """Workers over positions 0..positions-1 (`argv_for(start)` runs one from `start`), each
    that does not finish leaving `failed(positions, status, reason)` rows (module doc); a
    worker whose GPU failed is `on_fault(run, start)`'s, which says where the next starts,
    and after a configuration that hung (its `timeout` row written) `on_timeout(run,
    start)` says where. Raises Orphaned where its Snakemake died."""
    watched = supervise.snakemake_ancestor()
    start, empty = 0, 0
    while start < positions:
        run = supervise.run_worker(argv_for(start), log, watched=watched)
        if run.end == "orphaned":
            raise Orphaned(f"{name}: stopped: {run.reason}")
        if run.fault is not None and on_fault is not None:
            start, empty = on_fault(run, start), 0
            continue
        if run.end == "finished":
            return
        hung = run.end == "timeout" and _started(run, start)
        start, empty = _after(run, start, empty, positions, failed, log, name)
        if hung and on_timeout is not None:
            start = on_timeout(run, start)


def _started(run: supervise.WorkerRun, start: int) -> bool:
    """Did the worker stop inside a configuration (not before its first, nor between)?"""
    return run.position >= start and run.position not in run.done


def _after_hang(rule: HangRule, run, start: int, failed, log, name: str) -> int:
    """After `run`'s configuration hung: the hang recorded (the next workers get it), the
    configurations it rules out from `start` on written as `not-measured` rows up to the
    first still tried, where the next worker starts (hangs.HangRule)."""
    rule.record(run.position, run.deadline_s)
    tried = rule.next_tried(start)
    for position in range(start, tried):
        reason = rule.not_tried(position)
        failed([position], STATUS_NOT_MEASURED, reason)
        log(f"[{position + 1}/{len(rule.configs)}] {name} {rule.label(position)}: "
            f"{STATUS_NOT_MEASURED} {reason}")  # fmt: skip
    return tried


def _after(run: supervise.WorkerRun, start, empty, positions, failed, log, name):
    """(where the next worker starts, workers in a row that did nothing) after one that
    did not finish: its position's row written; where none can go on, every row left."""
    started = _started(run, start)
    if run.end == "stuck":
        why = f"the worker would not stop (a hung device call?) at {run.doing}"
        failed(range(max(run.position, start), positions), STATUS_NOT_MEASURED, why)
        log(f"{name}: {why}: what is left is not done")
        return positions, empty
    if not started and not run.done:
        empty += 1
        if empty >= EMPTY_STARTS:
            why = f"{EMPTY_STARTS} workers in a row ended before their first ({_why(run)})"
            failed(range(start, positions), STATUS_NOT_MEASURED, why)
            log(f"{name}: {why}: what is left is not done")
            return positions, empty
        log(f"{name}: the worker ended at {run.doing} ({_why(run)}); trying again")
        return start, empty
    position = run.position if started else max(run.done) + 1
    status = supervise.STATUS_TIMEOUT if run.end == "timeout" else supervise.STATUS_CRASHED
    if started:
        failed([position], status, f"{_why(run)} ({run.doing})")
        log(f"{name}: {status}: {_why(run)} ({run.doing}); going on with the next")
    return position + 1, 0


def end_orphans(log) -> None:
    """Never measure beside an orphan: end each live measurement on this host whose
    Snakemake is gone (concurrency.orphans), SIGTERM first (it restores what it set)."""
    import signal
    import time

    from joulebench.jobs.concurrency import orphans

    for pid in orphans():
        log(f"ending pid {pid}: it measures for a Snakemake that is gone (an orphan)")
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            for _ in range(int(supervise.KILL_GRACE_S * 10)):
                if not supervise.alive(pid):
                    break
                time.sleep(0.1)
            if not supervise.alive(pid):
                break


def _in_process(job, idle, parts) -> None:
    from joulebench.jobs.profile import run_job

    run_job(job.model, job.device_label, job.spec, idle=idle, threads=job.threads, parts=parts)


def _why(run: supervise.WorkerRun) -> str:
    if run.fault is not None:  # no failover (the ad-hoc path): said, as a crash
        return f"the GPU failed ({run.fault.get('kind')}): {run.fault.get('evidence', '')}"
    if run.end == "timeout" and run.after_hang:
        short = f"the short deadline after {run.after_hang} hung"
        return f"no progress for {run.deadline_s:.0f} s ({short}): stopped"
    if run.end == "timeout":
        return f"no progress for {run.deadline_s:.0f} s: stopped"
    return run.reason or run.end


def _failed(job, positions, status: str, reason: str, parts: Path) -> None:
    """A row for each of `positions` (in the measuring order) saying why it has no numbers."""
    from joulebench.jobs.profile import Outcome, config_row, gpu_fields, write_part

    configs, order = job.configs(), job.measurement_order()
    simulated = job.bind_device().simulated
    for position in positions:
        phase, method, requested = configs[order[position]]
        known = {
            "device_label": job.device_label,
            "device_pool": job.spec.device_pool or job.device_label,
            "torch_device": job.spec.torch_device,
            "model": job.model,
            "method": method.name,
            "batch_size_requested": requested,
            "batch_size": requested,
            "config_order": position + 1,
            "is_simulated": simulated,
            "input_kind": job.spec.input_kind,
            **(gpu_fields(job.spec.gpu, {}) if job.spec.gpu else {}),  # the pool's GPU it was on
        }
        row = config_row(job, known, phase, method, Outcome(status, reason[:500]))
        write_part(parts, position, row, [], [])


def _joined(parts: Path, job) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The job's tables from its parts: rows in the configurations' own order."""
    kinds = ("rows", "repeats", "trace")
    frames = [
        joined_parts(parts, f"*.{kind}.parquet", columns)
        for kind, columns in zip(kinds, _COLUMNS, strict=True)
    ]
    rows = frames[0]
    if len(rows):
        order = {k: i for i, k in enumerate(_config_keys(job))}
        key = list(zip(rows["phase"], rows["method"], rows["batch_size_requested"], strict=True))
        rows = rows.iloc[sorted(range(len(rows)), key=lambda i: order.get(key[i], 1 << 30))]
    return rows.reset_index(drop=True), frames[1], frames[2]


def _config_keys(job) -> list[tuple]:
    return [(phase, method.name, batch) for phase, method, batch in job.configs()]


def _temp_parts() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="joulebench-parts-"))


def main_worker(args) -> int:
    """`joulebench profile-worker`: one worker of a supervised job (its parts, no outputs);
    GPU_FAULT_EXIT where its GPU failed (jobs.gpu_faults), said in an event."""
    from joulebench.jobs.heap import freeze_imports
    from joulebench.jobs.profile import GpuFault, run_job

    spec: JobSpec = args.spec  # read once (cli.measure.job_spec_option)
    freeze_imports(timm_too=not spec.workload)  # a process of its own: collecting is cheap
    try:
        run_job(args.model, args.device_label, spec, idle=args.idle, threads=args.threads,
                parts=args.parts, start_at=args.start_at,
                hangs=args.hangs)  # fmt: skip
    except GpuFault:
        return supervise.GPU_FAULT_EXIT
    except Exception as exc:  # before any configuration: NVML lost the GPU, CUDA's init...
        kind = _gpu_fault_kind(spec.torch_device, exc)
        if kind is None:
            raise
        supervise.emit(supervise.GPU_FAULT, kind=kind, evidence=short_reason(exc),
                       uuid=spec.gpu.get("uuid"))  # fmt: skip
        return supervise.GPU_FAULT_EXIT
    finally:
        sys.stdout.flush()
    return 0


def _gpu_fault_kind(torch_device: str, exc: Exception) -> str | None:
    """The GPU fault `exc` reports where the job's device is a GPU, else None."""
    from joulebench.core.backends import kind_of
    from joulebench.jobs.gpu_faults import fault_kind

    try:
        if kind_of(torch_device).is_host:
            return None
    except Exception:  # a device string no backend serves: no fault of a GPU
        return None
    return fault_kind(short_reason(exc))
