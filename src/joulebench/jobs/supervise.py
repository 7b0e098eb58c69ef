"""A profile job that finishes whatever its model does.

The job's process (the supervisor) measures nothing itself: a worker process (`joulebench
profile-worker`) does and reports each stage (job start, configuration start and end, build,
warm-up, a window) as one JSON event a line on its log, each with its deadline; it writes
each finished configuration's rows to the job's parts folder at once. A worker that misses
its deadline is stopped (`timeout` row), one that dies gets a `crashed` row, one whose GPU
fails says so and the job moves to another GPU of its pool (gpu_failover); a new worker
goes on with the next configuration. So a study always finishes, each configuration with
exactly one row and a status (docs/profiling.md#when-a-model-or-a-gpu-misbehaves).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EVENT = "JOULEBENCH_EVENT "
WORKER_ENV = "JOULEBENCH_WORKER"  # set in a worker: its events are printed
TIMEOUT_FACTOR = 10.0  # a stage may take this many times its estimate...
TIMEOUT_FLOOR_S = 300.0  # ...and at least this long
KILL_GRACE_S = 10.0  # after SIGTERM, before SIGKILL; after SIGKILL, before giving up
POLL_S = 1.0
STATUS_TIMEOUT, STATUS_CRASHED, STATUS_NOT_MEASURED = "timeout", "crashed", "not-measured"
GPU_FAULT = "gpu-fault"  # the event of a worker whose GPU failed
GPU_FAULT_EXIT = 75  # ...and its exit status after it
# why a job stops whose Snakemake died: its log's last line (`<job>: stopped: ...`, said by
# job_runner.Orphaned), which `joulebench status` reads
SNAKEMAKE_GONE = "its Snakemake (pid {pid}) is gone"


def in_worker() -> bool:
    """Is this process a worker of a supervised job?"""
    return bool(os.environ.get(WORKER_ENV))


def deadline_s(estimate_s: float, factor: float = TIMEOUT_FACTOR) -> float:
    """How long a stage may go without an event: `factor` x its estimate, at least the
    floor (a configuration's build, warm-up and windows are each far below it)."""
    return max(TIMEOUT_FLOOR_S, factor * max(estimate_s, 0.0))


def emit(event: str, **fields) -> None:
    """A worker's event on its log (nothing outside a worker: the ad-hoc paths' logs)."""
    if in_worker():
        print(EVENT + json.dumps({"event": event, **fields}), flush=True)


def parse_event(line: str) -> dict | None:
    if not line.startswith(EVENT):
        return None
    try:
        event = json.loads(line[len(EVENT) :])
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


# --- whose job this is -----------------------------------------------------------------------


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the command's name


def is_snakemake(pid: int) -> bool:
    """Is `pid` a Snakemake: `snakemake ...`, `python .../bin/snakemake ...` (its script) or
    `python -m snakemake ...`? Read from /proc. Only the program and the script count, not
    an argument that names it (a shell's command line, `python -c` code, a grep)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    names = [Path(a.decode(errors="replace")).name for a in argv[:3]]
    if names[0].startswith("snakemake"):
        return True
    python = names[0].startswith("python") and len(names) > 1
    return python and (names[1] == "snakemake" or names[1:3] == ["-m", "snakemake"])


def snakemake_ancestor(pid: int | None = None) -> int | None:
    """The nearest ancestor of `pid` (this process) that is a Snakemake: the one whose death
    means nobody waits for this job; None where Snakemake did not start it."""
    pid = _parent(pid or os.getpid())
    while pid and pid > 1:
        if is_snakemake(pid):
            return pid
        pid = _parent(pid)
    return None


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return Path(f"/proc/{pid}").exists() and not _zombie(pid)


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return False


# --- one worker ------------------------------------------------------------------------------


@dataclass
class WorkerRun:
    """How one worker ended: `finished`, `timeout`, `crashed`, `stuck` (would not die) or
    `orphaned` (its Snakemake died); where it was (`position` of the configuration, -1 at
    the job's start) and doing what."""

    end: str
    position: int = -1
    doing: str = "the job's start"
    reason: str = ""
    done: list[int] = field(default_factory=list)  # positions it finished
    deadline_s: float = TIMEOUT_FLOOR_S  # the current stage's (its last event's)
    label: str = ""  # the configuration it is in (method, batch size)
    fault: dict | None = None  # its GPU_FAULT event: kind, evidence, position, uuid, index
    after_hang: str = ""  # its configuration's deadline is short: this one hung (jobs.hangs)


def _signal_name(code: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(code).name
    return f"signal {code}"


def death_reason(returncode: int) -> str:
    """How a worker died, after its status `crashed`: `exit 3`, `SIGSEGV`, `SIGKILL (out of
    memory?)`."""
    if returncode >= 0:
        return f"exit {returncode}"
    name = _signal_name(-returncode)
    oom = " (out of memory? the kernel's OOM killer sends it)" if name == "SIGKILL" else ""
    return f"{name}{oom}"


def _stop(proc: subprocess.Popen, sleep=time.sleep) -> bool:
    """SIGTERM (it restores what it set), then SIGKILL; False where it will not go."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


def _preexec() -> None:
    """In the worker, before it runs: die with the supervisor (Linux's PR_SET_PDEATHSIG)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run_worker(
    argv: list[str],
    log: Callable[[str], object],
    *,
    watched: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> WorkerRun:
    """Run one worker to its end, passing its log through and keeping its deadlines."""
    env = {**os.environ, WORKER_ENV: "1"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, preexec_fn=_preexec
    )
    run = WorkerRun("finished")
    due = clock() + TIMEOUT_FLOOR_S
    lines = _Lines(proc.stdout.fileno())
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if sel.select(timeout=POLL_S):
                got = lines.read()
                if got is None:  # the worker closed its output: it is ending
                    break
                for line in got:
                    event = parse_event(line)
                    if event is None:
                        log(line)
                        continue
                    run.deadline_s = float(event.get("deadline_s", run.deadline_s))
                    due = clock() + run.deadline_s
                    _follow(run, event)
            if watched is not None and not alive(watched):
                run.end, run.reason = "orphaned", SNAKEMAKE_GONE.format(pid=watched)
                _stop(proc)
                return run
            if clock() > due:
                run.end = "timeout" if _stop(proc) else "stuck"
                return run
    returncode = proc.wait()
    if returncode != 0:
        run.end, run.reason = "crashed", death_reason(returncode)
    return run


class _Lines:
    """Whole lines from a pipe as they come, never blocking on half of one."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def read(self) -> list[str] | None:
        chunk = os.read(self.fd, 65536)
        if not chunk:
            rest, self.buffer = self.buffer, b""
            return [rest.decode(errors="replace")] if rest else None
        *whole, self.buffer = (self.buffer + chunk).split(b"\n")
        return [line.decode(errors="replace") for line in whole]


def _follow(run: WorkerRun, event: dict) -> None:
    kind = event.get("event")
    if kind == "config":
        run.position, run.label = int(event["position"]), str(event.get("label", ""))
        run.after_hang = str(event.get("after_hang", ""))
        run.doing = f"{run.label}: {event.get('doing', 'build')}"
    elif kind == "stage":
        stage = str(event.get("doing", ""))
        run.doing = f"{run.label}: {stage}" if run.label and run.position >= 0 else stage
    elif kind == "done":
        run.done.append(int(event["position"]))
        run.doing = "between configurations"
    elif kind == GPU_FAULT:
        run.fault = run.fault or event  # the first: what followed may be its aftermath


def worker_python() -> list[str]:
    return [sys.executable, "-m", "joulebench"]
