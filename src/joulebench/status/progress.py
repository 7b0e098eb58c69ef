"""A run's progress against its plan, as one dict (`joulebench status --json` prints it).

Per device: configurations done (status ok), not ok (by status) and left of the study's
plan; the measured time of the configurations done beside what the plan expected for
them; an ETA for what is left, from the measured time per configuration where there are
rows, else from the plan (`eta_source` says which), divided among the jobs a device runs at
once (a pool's GPUs, SLURM allocations). Which models are measured now and why status
thinks so (`evidence`), jobs that stopped without rows, the last failures, the GPUs
that failed in this run (schedule.bad_gpus: never given a model again), and whether the
run's Snakemake runs (a lock left by a killed one is stale: nothing of it runs).
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pandas as pd

from joulebench.analysis.boards import read_records, records_line
from joulebench.analysis.score import left_out_of_grades
from joulebench.core.backends import DeviceError, host_backend, kind_of
from joulebench.core.provenance import seconds_taken
from joulebench.core.runtimes import STATUS_SKIPPED
from joulebench.jobs.board_reference import BOARDS_DIR
from joulebench.jobs.concurrency import live_markers
from joulebench.jobs.supervise import SNAKEMAKE_GONE
from joulebench.safe_text import file_name, printable
from joulebench.schedule.bad_gpus import bad_gpus
from joulebench.schedule.job_parts import parse_job_key
from joulebench.status import observe
from joulebench.status.plan_view import StudyPlan, format_duration, parse_duration, study_plan

MIN_ACTIVE_S = 600.0  # a log written this recently is a running job's (a config's lines
# come at its start and end, so a healthy job is silent for one configuration at most)
FAILURES_SHOWN = 5
SQUEUE_RUNNING = "running"
IDLE_JOB = "(idle baseline)"  # the model of an idle job in `running` (it has no log)


def _active_s(plan: StudyPlan, durations: pd.Series) -> float:
    longest = float(durations.max()) if durations.notna().any() else 0.0
    return max(MIN_ACTIVE_S, 2 * longest, 2 * plan.config_estimate_s)


def rows_path(device: str, model: str) -> str:
    """A profile job's rows output (workflow/rules/profile.smk), as its command names it."""
    return f"results/profile/{device}/rows/{model}.parquet"


def snakemake_state(marks, here: list[int] | None, logs, slurm, now: float) -> dict:
    """Is the run's Snakemake running? `here`: the Snakemakes running in the directory on
    this host (observe.snakemake_processes; None: not known). A lock whose Snakemake is
    gone is stale (kill -9 leaves it until `snakemake --unlock`): so say a job's log ending
    "stopped: its Snakemake (pid N) is gone" written after the lock was taken, or, in a
    local run, no Snakemake in this directory on this host. On SLURM (its Snakemake may run
    on another login node, its jobs' Snakemake in their allocation) only a live one counts."""
    out = {"locked": marks.locked, "incomplete": len(marks.incomplete), "pids": here or []}
    out.update(running=marks.locked or bool(here), stale_lock=False, evidence="")
    if here:
        pids = ", ".join(str(pid) for pid in here)
        out["evidence"] = f"Snakemake pid {pids} runs in this directory"
    if not marks.locked or here:
        return out
    gone = [log for log in logs if log.snakemake_gone is not None]
    after_lock = [log for log in gone if now - log.age_s >= (marks.lock_mtime or 0.0)]
    if slurm is None and after_lock:
        log = min(after_lock, key=lambda item: item.age_s)
        why = SNAKEMAKE_GONE.format(pid=log.snakemake_gone)
        out.update(running=False, stale_lock=True, evidence=f"{log.path} ends: {why}")
    elif slurm is None and here is not None:
        why = "no Snakemake runs in this directory on this host"
        out.update(running=False, stale_lock=True, evidence=why)
    return out


def _snakemake(directory: Path, here, marks, logs, slurm, now: float):
    """(snakemake_state, the marks as jobs are classified by): a stale lock is no Snakemake
    running here, so no job of it runs. `here` None: the Snakemakes read from /proc."""
    here = observe.snakemake_processes(directory) if here is None else here
    state = snakemake_state(marks, here, logs, slurm, now)
    return state, replace(marks, locked=False) if state["stale_lock"] else marks


def _evidence(log: observe.JobLog, process, unread: int, marks, slurm, active_s) -> str:
    """Why `log`'s job is thought running ("" when it is not): `process` is the measuring
    process writing its rows, if one is; `unread` how many of its device's live markers
    have a process status cannot read (it counts them for its newest logs). A recent log
    alone counts only while a Snakemake runs here (its lock, not stale): a job whose log
    stopped, whose process is gone and whose Snakemake is gone is stopped, not measuring;
    so is one whose log says it stopped for its Snakemake's death."""
    if process is not None:
        return f"process {process.pid} is measuring it"
    if unread > 0:
        return "a live measuring marker on this host"
    jobid = marks.incomplete.get(rows_path(log.device, log.model))
    if jobid and slurm and slurm.get("states", {}).get(jobid) == SQUEUE_RUNNING:
        return f"SLURM job {jobid} is running"
    if log.crashed or log.snakemake_gone is not None or not marks.locked:
        return ""  # no Snakemake here (or its job says it stopped): a dead job's log
    if log.age_s < active_s:
        return f"its log was written {format_duration(max(log.age_s, 0.0))} ago"
    return ""


def classify_jobs(logs, processes, marks, slurm, active_s: float):
    """(running, stopped): (log, evidence) of each model without rows yet, and the idle
    baselines being measured, by the evidence for each (see _evidence; `marks.locked`:
    a Snakemake runs here, a stale lock not counted)."""
    ours = {p.output: p for p in processes if p.here}
    unread = Counter(p.label for p in processes if p.here is None)
    running, stopped = [], []
    for log in sorted(logs, key=lambda item: (item.device, item.age_s)):
        process = ours.get(rows_path(log.device, log.model))
        label = file_name(log.device)
        evidence = _evidence(log, process, unread[label], marks, slurm, active_s)
        if process is None and unread[label] > 0:
            unread[label] -= 1
        (running if evidence else stopped).append((log, evidence))
    for output, process in sorted(ours.items()):
        if output.startswith("results/idle/"):
            idle = observe.JobLog(Path(output).stem, IDLE_JOB, "", 0.0)
            running.append((idle, f"process {process.pid} is measuring it"))
    return running, stopped


def _gpu_breakdown(rows: pd.DataFrame) -> list[dict]:
    """ok / not ok per GPU of a pool, where the rows say which GPU measured them."""
    named = {
        c: rows[c].astype("string").str.strip().replace("", pd.NA)
        for c in observe.GPU_COLUMNS
        if c in rows
    }
    column = next((c for c in observe.GPU_COLUMNS if c in named and named[c].notna().any()), None)
    if column is None:  # a CPU's rows, or a GPU's before pools: the GPU columns are empty
        return []
    out = []
    for gpu, group in rows.groupby(named[column].fillna("?"), sort=True):
        ok = int((group["status"] == "ok").sum())
        out.append({"gpu": str(gpu), "ok": ok, "not_ok": len(group) - ok})
    return out


def _status_counts(rows: pd.DataFrame) -> tuple[int, dict[str, int]]:
    status = rows["status"].astype("string").fillna("?")
    counts = status[status != "ok"].value_counts()
    return int((status == "ok").sum()), {str(k): int(v) for k, v in counts.sort_index().items()}


def device_status(label: str, rows: pd.DataFrame, jobs: list, plan: StudyPlan) -> dict:
    """One device's (or pool's) counts, times and ETA (see the module doc)."""
    ours = rows if plan.models is None else rows[rows["model"].isin(plan.models)]
    ok, not_ok = _status_counts(ours)
    planned = plan.planned(label)
    in_jobs = sum(log.finished for log, _ in jobs)
    model_jobs = [log for log, _ in jobs if log.model != IDLE_JOB]
    left = None if planned is None else max(planned - len(ours) - in_jobs, 0)
    durations = seconds_taken(ours)
    timed = durations.notna()
    measured_s = float(durations[timed].sum())
    device = plan.devices.get(label) or _torch_device(rows, label)
    expected = ours.loc[timed, "method"].map(plan.method_estimates(device))
    planned_s = float(expected.astype("float64").fillna(plan.config_estimate_s).sum())
    is_host = _is_host(device)
    parallel = 1 if is_host else _jobs_at_once(jobs, rows)
    out = {
        "label": label,
        "torch_device": device,
        "is_host": is_host,
        "planned": planned,
        "ok": ok,
        "not_ok": sum(not_ok.values()),
        "not_ok_by_status": not_ok,
        "in_running_jobs": in_jobs,
        "running_jobs": len(model_jobs),
        "left": left,
        "outside_study": len(rows) - len(ours),
        "measured_s": measured_s,
        "planned_s": planned_s,
        "eta_source": "measured" if timed.any() else "plan",
        "eta_s": None,
        "jobs_at_once": parallel,
        "gpus": _gpu_breakdown(rows),
    }
    if left is not None:
        rate_s = measured_s / int(timed.sum()) if timed.any() else plan.config_estimate_s
        running = {parse_job_key(log.model)[0] for log in model_jobs}  # a job: model(+method)
        started = len(set(ours["model"].astype(str)) | running)
        unstarted = max(len(plan.models) - started, 0)
        out["eta_s"] = (left * rate_s + unstarted * plan.job_overhead_s) / parallel
    return out


def _jobs_at_once(jobs: list, rows: pd.DataFrame) -> int:
    """How many jobs a GPU device measures at once: a pool as many as its GPUs or the jobs
    seen running (the host's CPU measures one: it takes every slot)."""
    return max(1, len(jobs), len(_gpu_breakdown(rows)))


def _torch_device(rows: pd.DataFrame, label: str) -> str:
    known = rows["torch_device"].dropna()
    host = host_backend()  # the host's label is its device string: cpu
    return str(known.iloc[0]) if len(known) else (host.kind if label == host.kind else "?")


def _is_host(device: str) -> bool:
    """The host's CPU measures after the others (it takes every slot); "?" is not it."""
    try:
        return kind_of(device).is_host
    except DeviceError:
        return False


def total_status(devices: list[dict]) -> dict:
    """The run as a whole; its ETA as the plan counts one host: GPU devices at once (the
    longest), each CPU device after the others (it takes every slot)."""
    keys = ("planned", "ok", "not_ok", "in_running_jobs", "running_jobs", "left")
    keys += ("measured_s", "planned_s")
    out: dict = {
        key: None if any(d[key] is None for d in devices) else sum(d[key] for d in devices)
        for key in keys
    }
    etas = [d for d in devices if d["eta_s"] is not None]
    cpu = sum(d["eta_s"] for d in etas if d["is_host"])
    gpu = max((d["eta_s"] for d in etas if not d["is_host"]), default=0.0)
    out["eta_s"] = cpu + gpu if etas and len(etas) == len(devices) else None
    sources = {d["eta_source"] for d in devices}
    out["eta_source"] = (
        sources.pop() if len(sources) == 1 else "measured where rows exist, else plan"
    )
    return out


def _as_of_now(log: observe.JobLog) -> tuple[float | None, float | None]:
    """The job's elapsed time and ETA now (s): its last line's, moved on by the log's age (a
    job writes a line as a configuration starts, so "elapsed 0 s" may be minutes old);
    None where the line says no duration."""
    age = max(log.age_s, 0.0)
    elapsed, eta = parse_duration(log.elapsed), parse_duration(log.eta)
    return (
        None if elapsed is None else elapsed + age,
        None if eta is None else max(eta - age, 0.0),
    )


def _job_dict(log: observe.JobLog, evidence: str) -> dict:
    elapsed_s, eta_s = _as_of_now(log)
    return {
        "device": log.device,
        "gpu": None,  # which GPU of a pool (issue 24 item 1): not in the log yet
        "model": log.model,
        "config": log.config,
        "configs": log.configs,
        "current": log.current,
        "finished": log.finished,
        "elapsed": log.elapsed if elapsed_s is None else format_duration(elapsed_s),
        "elapsed_s": elapsed_s,
        "eta": log.eta if eta_s is None else format_duration(eta_s),
        "eta_s": eta_s,
        "log_age_s": round(log.age_s, 1),
        "evidence": evidence,
        "last_line": log.last_line,
        "log": log.path,
    }


def last_failures(rows: pd.DataFrame, n: int) -> list[dict]:
    """The newest `n` rows that failed (status neither ok nor skipped: a skip, such as a
    precision the device only emulates, is a decision the device line counts, not a
    failure), with their reasons (from data: printable)."""
    status = rows["status"].astype("string").fillna("?")
    bad = rows[~status.isin(["ok", STATUS_SKIPPED])]
    bad = bad.assign(_end=bad["end_time_utc"].astype("string")).sort_values(
        "_end", ascending=False, na_position="last", kind="stable"
    )
    keys = ("device_label", "model", "phase", "method", "batch_size_requested", "status")
    return [
        {
            **{key: None if pd.isna(row[key]) else _plain(row[key]) for key in keys},
            "reason": printable("" if pd.isna(row["reason"]) else row["reason"]),
            "time_utc": None if pd.isna(row["end_time_utc"]) else str(row["end_time_utc"]),
        }
        for _, row in bad.head(n).iterrows()
    ]


def _plain(value):
    return int(value) if isinstance(value, int) or hasattr(value, "__index__") else str(value)


def status_of(
    directory: str | Path = ".",
    configfile: str | None = None,
    *,
    plan: StudyPlan | None = None,
    failures: int = FAILURES_SHOWN,
    now: float | None = None,
    markers: list[tuple[int, str]] | None = None,
    snakemakes: list[int] | None = None,
    slurm_run=None,
    cache: dict | None = None,
) -> dict:
    """Everything `joulebench status` shows, as plain data (see the module doc). `markers`
    (this host's measuring markers) and `snakemakes` (the Snakemakes running in the
    directory) are read from this host where not given."""
    directory = Path(directory)
    now = time.time() if now is None else now
    seen = observe.read_rows(directory, cache)
    rows = seen.frame
    labels = observe.device_labels(directory)
    seen_devices = {d: _torch_device(rows[rows["device_label"] == d], d) for d in labels}
    if plan is None:
        plan = study_plan(directory, configfile, seen_devices)
    elif plan.auto:  # devices: auto: labels appear as their first jobs start
        plan = replace(plan, devices={**seen_devices, **plan.devices})
    logs = observe.job_logs(directory, seen.jobs, now)
    marks = observe.snakemake_marks(directory)
    slurm = observe.slurm_jobs(directory, **({"run": slurm_run} if slurm_run else {}))
    processes = observe.measuring(directory, live_markers() if markers is None else markers)
    snakemake, marks = _snakemake(directory, snakemakes, marks, logs, slurm, now)
    active_s = _active_s(plan, seconds_taken(rows))
    running, stopped = classify_jobs(logs, processes, marks, slurm, active_s)
    device_labels = sorted(set(plan.devices) | set(labels) | set(rows["device_label"].dropna()))
    devices = [
        device_status(
            label,
            rows[rows["device_label"] == label],
            [job for job in running if job[0].device == label],
            plan,
        )
        for label in device_labels
    ]
    return {
        "directory": str(directory.resolve()),
        "time_utc": dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "study": plan.study,
        "measuring": plan.measuring,
        "plan": _plan_dict(plan),
        "devices": devices,
        "total": total_status(devices),
        "running": [_job_dict(log, evidence) for log, evidence in running],
        "stopped": [_job_dict(log, "") for log, _ in stopped],
        "failures": last_failures(rows, failures),
        "bad_gpus": list(bad_gpus(directory).values()),  # marked bad in this run, with why
        # the boards' reference readings so far, and how far apart they read (analysis.boards)
        "boards": records_line(read_records(directory / BOARDS_DIR)),
        "left_out": left_out_of_grades(rows) if len(rows) else {},
        "snakemake": snakemake,
        "slurm": None if slurm is None else {k: v for k, v in slurm.items() if k != "states"},
        "row_files": seen.files,
        "unreadable": seen.unreadable,
        "active_s": active_s,
    }


def _plan_dict(plan: StudyPlan) -> dict:
    models = None if plan.models is None else len(plan.models)
    per_device = None if models is None else models * plan.configs_per_model
    return {
        "models": models,
        "per_device_configurations": per_device,
        "per_device_estimate_s": None
        if models is None
        else per_device * plan.config_estimate_s + models * plan.job_overhead_s,
        "models_source": plan.models_source,
        "devices": plan.devices,
        "devices_source": plan.devices_source,
        "configs_per_model": plan.configs_per_model,
        "config_estimate_s": plan.config_estimate_s,
        "job_overhead_s": plan.job_overhead_s,
    }
