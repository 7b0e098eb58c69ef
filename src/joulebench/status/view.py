"""`joulebench status` as text: the dict of `progress.status_of`, for a person; and --watch."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from joulebench.safe_text import printable, quantity
from joulebench.schedule.bad_gpus import gpu_name
from joulebench.status.plan_view import StudyPlan, format_duration, study_plan
from joulebench.status.progress import FAILURES_SHOWN, status_of

REASON_CHARS = 160  # a failure's reason in the text view (--json has it whole)
CLEAR_SCREEN = "\x1b[H\x1b[2J"


def _d(seconds) -> str:
    return "?" if seconds is None else format_duration(seconds)


def _n(value) -> str:
    return "?" if value is None else f"{value:,}"


def _header(status: dict) -> list[str]:
    plan = status["plan"]
    lines = [f"joulebench status of {status['directory']}, {status['time_utc']}"]
    models = "? models" if plan["models"] is None else quantity(plan["models"], "model")
    lines.append(
        f"study: {status['study']}: {models} ({plan['models_source']}) x "
        f"{quantity(plan['configs_per_model'], 'configuration')} each; planned "
        f"~{_d(plan['config_estimate_s'])} per configuration, "
        f"+{_d(plan['job_overhead_s'])} per model job"
    )
    return lines + _snakemake(status["snakemake"])


def _snakemake(snake: dict) -> list[str]:
    """Whether the run's Snakemake runs; a stale lock (its Snakemake killed) with how to
    resume."""
    started = f"{snake['incomplete']} output(s) started and not finished (.snakemake/incomplete)"
    if snake.get("stale_lock"):
        return [
            f"snakemake: not running (stopped): its lock is stale ({snake['evidence']}); {started}",
            "  to resume: snakemake --unlock (with the run's options), then the run's "
            "command again: what has no rows is measured again (the ETA below is for then)",
        ]
    lock = "a Snakemake lock is held here" if snake["locked"] else "no Snakemake lock here"
    if snake.get("evidence"):
        lock += f" ({snake['evidence']})"
    return [f"snakemake: {lock}; {started}"]


def _eta(device: dict) -> str:
    if device["left"] == 0:
        return "done"
    if device["eta_s"] is None:
        return "?"
    return f"{_d(device['eta_s'])} ({device['eta_source']})"


def _not_ok(device: dict) -> str:
    by = ", ".join(f"{k} {v}" for k, v in device["not_ok_by_status"].items())
    return f"{device['not_ok']} ({by})" if by else str(device["not_ok"])


def _running(device: dict) -> str:
    """The configurations the running jobs finished (their rows come when a job ends) and
    how many jobs run: "0 done in 1 job" while a job measures its first, never a bare 0."""
    jobs, done = device.get("running_jobs"), device["in_running_jobs"]
    if jobs is None or done is None:
        return "?"
    return f"{done:,} done in {quantity(jobs, 'job')}" if jobs else "none"


def _ratio(device: dict) -> str:
    if not device["planned_s"]:
        return ""
    return f"{device['measured_s'] / device['planned_s']:.2g}x"


def device_table(status: dict) -> list[str]:
    if not status["devices"]:
        plan = status["plan"]
        n = plan["per_device_configurations"]
        return [
            f"{plan['devices_source']}: no device has started yet; each measures "
            f"{'? configurations' if n is None else quantity(n, 'configuration')}, "
            f"~{_d(plan['per_device_estimate_s'])} by the plan"
        ]
    head = ("device", "torch", "configs", "ok", "not ok", "running", "left", "time")
    rows = [(*head, "planned time", "ratio", "ETA")]
    for d in [*status["devices"], {**status["total"], "label": "total", "torch_device": ""}]:
        eta = _eta(d)
        rows.append(
            (
                d["label"],
                d["torch_device"],
                _n(d["planned"]),
                _n(d["ok"]),
                _not_ok(d) if "not_ok_by_status" in d else _n(d["not_ok"]),
                _running(d),
                _n(d["left"]),
                _d(d["measured_s"]),
                _d(d["planned_s"]),
                _ratio(d),
                eta,
            )
        )
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    for d in status["devices"]:  # a pool's GPUs, where its rows say which GPU measured
        lines += [
            f"  {d['label']} gpu {g['gpu']}: ok {g['ok']}, not ok {g['not_ok']}" for g in d["gpus"]
        ]
        if d["jobs_at_once"] > 1:
            lines.append(f"  {d['label']}: ETA for {d['jobs_at_once']} jobs at once (as now)")
    return lines


def _job(job: dict) -> str:
    where = job["device"] + (f" gpu {job['gpu']}" if job["gpu"] else "")
    if job["config"] is None:
        doing = "starting (no configuration yet)"
    else:
        doing = (
            f"config {job['config']}/{job['configs']} {job['current']}, "
            f"elapsed {job['elapsed']}, ETA {job['eta']}"
        )
    return f"  {where}  {job['model']}: {doing} ({job['evidence']})"


def _jobs(status: dict) -> list[str]:
    stopped = " (the run is stopped)" if status["snakemake"].get("stale_lock") else ""
    lines = ["", "measuring now:" if status["running"] else f"measuring now: nothing{stopped}"]
    lines += [_job(job) for job in status["running"]]
    if status["stopped"]:
        lines.append("stopped without rows (failed or killed; a rerun measures them again):")
        for job in status["stopped"]:
            lines.append(
                f"  {job['device']}  {job['model']}: log last written "
                f"{_d(job['log_age_s'])} ago; last line: {job['last_line'][:REASON_CHARS]}"
            )
    return lines


def _failures(status: dict) -> list[str]:
    if not status["failures"]:
        return ["", "failures: none"]
    lines = ["", "last failures (newest first):"]
    for f in status["failures"]:
        phase = "" if f["phase"] in (None, "inference") else f" {f['phase']}"
        reason = printable(f["reason"])[:REASON_CHARS]
        lines.append(
            f"  {f['time_utc'] or '?'}  {f['device_label']}  {f['model']}  "
            f"{f['method']}{phase} bs{f['batch_size_requested']}: {f['status']}: {reason}"
        )
    return lines


def _bad_gpus(status: dict) -> list[str]:
    """GPUs that failed in this run: left out of their pool, with the evidence."""
    bad = status.get("bad_gpus") or []
    if not bad:
        return []
    lines = ["", "GPUs that failed (no model is given to them again in this run):"]
    for record in bad:
        evidence = printable(str(record.get("evidence", "")))[:REASON_CHARS]
        lines.append(
            f"  {record.get('device_label') or '?'}  {gpu_name(record)}  {record.get('kind')} "
            f"at {record.get('time_utc') or '?'} ({record.get('job') or '?'}): {evidence}"
        )
    return lines


def _left_out(status: dict) -> list[str]:
    """Measured rows the score will leave out of grades, by flag (docs/scoring.md)."""
    left = status.get("left_out") or {}
    if not left:
        return []
    why = ", ".join(f"{reason} ({n})" for reason, n in left.items())
    return ["", f"left out of grades so far: {sum(left.values())} ok rows: {why}"]


def _footer(status: dict) -> list[str]:
    lines = []
    slurm = status["slurm"]
    if slurm is not None:
        counts = (
            f"{slurm['pending']} pending, {slurm['running']} running"
            if slurm["pending"] is not None
            else "job counts unknown"
        )
        lines.append(
            f"SLURM: {counts} ({slurm['note']}); {slurm['job_logs']} job logs in "
            ".snakemake/slurm_logs/"
        )
    if status["unreadable"]:
        shown = ", ".join(status["unreadable"][:3])
        lines.append(f"unreadable now (being replaced?), left out: {shown}")
    return ([""] if lines else []) + lines


def format_status(status: dict) -> str:
    """The text `joulebench status` prints (every name from data through printable)."""
    if not status["measuring"]:
        return f"{status['study']}: from_summary: this study measures nothing"
    lines = _header(status) + [""] + device_table(status)
    lines += _jobs(status) + _failures(status) + _bad_gpus(status) + _left_out(status)
    lines += ["", status["boards"]] if status.get("boards") else []
    lines += _footer(status)
    return "\n".join(printable(line) for line in lines)


def watch(show, interval_s: float, out=None, clock=time.sleep) -> int:
    """Call `show()` (which prints one status) every `interval_s` until Ctrl-C."""
    out = out or sys.stdout
    try:
        while True:
            if out.isatty():
                out.write(CLEAR_SCREEN)
            show()
            out.flush()
            clock(interval_s)
    except KeyboardInterrupt:
        return 0


def run_status(
    directory: str | Path = ".",
    configfile: str | None = None,
    *,
    as_json: bool = False,
    watch_s: float | None = None,
    failures: int = FAILURES_SHOWN,
    say=print,
) -> int:
    """`joulebench status`: one look at the run in `directory` (or one every `watch_s`),
    as text or JSON, through `say`. The study is read and resolved once."""
    plan: StudyPlan | None = None
    directory = Path(directory)
    cache: dict = {}  # rows files already read, while unchanged

    def show() -> None:
        nonlocal plan
        if plan is None:
            plan = study_plan(directory, configfile, {})
        status = status_of(directory, plan=plan, failures=failures, cache=cache)
        say(json.dumps(status, indent=2) if as_json else format_status(status))

    if watch_s is None:
        show()
        return 0
    return watch(show, watch_s)
