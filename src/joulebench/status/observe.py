"""What a run's working directory shows while the run goes on, read without writing.

Every reader here tolerates the run changing the files under it: the atomic writer's temp
files (`.<name>.<random>.tmp`) are never read, a file that vanishes or is cut short is
counted as unreadable and skipped, and a folder that does not exist yet is empty.
Snakemake's lock is never taken (its `.snakemake/` files are only listed and read).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from joulebench.jobs.supervise import SNAKEMAKE_GONE, is_snakemake

# The profile rows' columns status needs; the rest of each file is never read.
ROW_COLUMNS = (
    "device_label",
    "model",
    "phase",
    "method",
    "batch_size_requested",
    "torch_device",
    "status",
    "reason",
    "start_time_utc",
    "end_time_utc",
    # what the score will leave out of grades (analysis.score.left_out_of_grades)
    "flags",
    "is_simulated",
    "energy_per_image_cv",
)
# Which GPU of a pool measured a row (issue 24 item 1), read where the rows have them.
GPU_COLUMNS = ("gpu_index", "gpu_uuid")
LOG_TAIL_BYTES = 16384  # a job's last lines: its latest progress line is among them
# A job's progress lines (jobs.profile.measure_configs).
CONFIG_LINE = re.compile(r"config (\d+)/(\d+) (\S+) (.*?), elapsed (.*?), ETA (.*)")
DONE_LINE = re.compile(r"\[(\d+)/(\d+)\] (\S+) (.*?): (\S+)")
END_LINE = re.compile(r"(\S+): (\d+) configurations? in (.*)")
# A job that stopped because its Snakemake died (job_runner.Orphaned: its last line)
GONE_LINE = re.compile(
    r"(?:joulebench: )?(\S+): stopped: "
    + re.escape(SNAKEMAKE_GONE).replace(re.escape("{pid}"), r"(\d+)")
)
SQUEUE_TIMEOUT_S = 20.0
SQUEUE_STATES = {"PENDING": "pending", "RUNNING": "running", "CONFIGURING": "running"}


@dataclass
class RowsSeen:
    frame: pd.DataFrame  # one row per configuration measured: ROW_COLUMNS (+ GPU_COLUMNS)
    files: int = 0
    unreadable: list[str] = field(default_factory=list)  # cut short, or gone mid-read
    # (device folder, job key) of each rows file read: a job (a model, or model+method,
    # schedule.job_parts) with rows is done, whatever models its rows name
    jobs: set[tuple[str, str]] = field(default_factory=set)


def _files(folder: Path, pattern: str) -> list[Path]:
    """Finished files only: the atomic writer's temp files start with a dot."""
    try:
        return sorted(p for p in folder.glob(pattern) if not p.name.startswith("."))
    except OSError:
        return []


def row_files(directory: Path) -> list[Path]:
    return _files(directory / "results" / "profile", "*/rows/*.parquet")


def _read_columns(path: Path):
    """The columns status needs from one rows file (an arrow table), or None if unreadable."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as parquet:
            present = set(parquet.schema_arrow.names)
            wanted = [c for c in (*ROW_COLUMNS, *GPU_COLUMNS) if c in present]
            return parquet.read(columns=wanted)
    except (OSError, pa.ArrowException, ValueError):
        return None


def read_rows(directory: Path, cache: dict | None = None) -> RowsSeen:
    """Every profile row written so far (the columns of ROW_COLUMNS and GPU_COLUMNS).
    `cache` (path -> ((size, mtime), table)), kept between calls by --watch, spares reading
    a file again until it changes."""
    import pyarrow as pa

    paths = row_files(directory)
    tables, unreadable, jobs = [], [], set()
    for path in paths:
        table = _cached_read(path, cache if cache is not None else {})
        if table is None:
            unreadable.append(str(path.relative_to(directory)))
        else:
            tables.append(table)
            jobs.add((path.parent.parent.name, path.stem))
    if tables:
        frame = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    else:
        frame = pd.DataFrame(columns=list(ROW_COLUMNS))
    for column in ROW_COLUMNS:
        if column not in frame:
            frame[column] = pd.NA
    return RowsSeen(frame, len(paths), unreadable, jobs)


def _cached_read(path: Path, cache: dict):
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (stat.st_size, stat.st_mtime_ns)
    hit = cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    table = _read_columns(path)
    if table is not None:
        cache[path] = (key, table)
    return table


def device_labels(directory: Path) -> list[str]:
    """Device labels a run has started on: idle and profile outputs and logs."""
    labels = set()
    for folder in (directory / "results" / "profile", directory / "logs" / "profile"):
        labels |= {p.name for p in _subfolders(folder)}
    labels |= {p.stem for p in _files(directory / "results" / "idle", "*.parquet")}
    labels |= {p.stem for p in _files(directory / "logs" / "idle", "*.log")}
    return sorted(labels)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


@dataclass
class JobLog:
    """A profile job's log whose model has no rows file yet: running, or stopped."""

    device: str
    model: str
    path: str
    age_s: float  # since the log was last written
    config: int | None = None  # the configuration it is measuring (k of k/N)
    configs: int | None = None  # N
    current: str = ""  # that configuration: method (and phase) and batch size
    elapsed: str = ""  # as the job's line says it
    eta: str = ""  # the job's own ETA, as its line says it
    finished: int = 0  # configurations the job has finished ([i/N] lines)
    ended: bool = False  # its last line says every configuration is done
    crashed: bool = False  # a traceback after its last progress line
    last_line: str = ""
    snakemake_gone: int | None = None  # its last line: it stopped, its Snakemake (pid) gone


def _tail(path: Path) -> tuple[str, float] | None:
    """The last LOG_TAIL_BYTES of a file as text, and its mtime; None if it vanished."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(size - LOG_TAIL_BYTES, 0))
            data = fh.read(LOG_TAIL_BYTES)
            mtime = os.fstat(fh.fileno()).st_mtime
    except OSError:
        return None
    return data.decode("utf-8", errors="replace"), mtime


def parse_progress(log: JobLog, text: str) -> JobLog:
    """Fill `log` from its job's progress lines (jobs.profile.measure_configs)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    log.last_line = lines[-1] if lines else ""
    for line in reversed(lines):
        if log.config is None and not log.finished and line.startswith("Traceback ("):
            log.crashed = True
        if log.config is None and (m := CONFIG_LINE.fullmatch(line)):
            log.config, log.configs = int(m[1]), int(m[2])
            log.current, log.elapsed, log.eta = m[4], m[5], m[6]
        if not log.finished and (m := DONE_LINE.match(line)):
            log.finished = int(m[1])
            log.configs = log.configs or int(m[2])
        if log.config is not None and log.finished:
            break
    log.ended = bool(END_LINE.fullmatch(log.last_line))
    if gone := GONE_LINE.fullmatch(log.last_line):
        log.snakemake_gone = int(gone[2])
    return log


def job_logs(directory: Path, with_rows: set[tuple[str, str]], now: float) -> list[JobLog]:
    """The profile logs (logs/profile/<device>/<job>.log, a job: a model or model+method)
    of jobs without rows yet."""
    out = []
    for folder in _subfolders(directory / "logs" / "profile"):
        for path in _files(folder, "*.log"):
            if (folder.name, path.stem) in with_rows:
                continue
            tail = _tail(path)
            if tail is None:
                continue
            text, mtime = tail
            log = JobLog(folder.name, path.stem, str(path.relative_to(directory)), now - mtime)
            out.append(parse_progress(log, text))
    return out


@dataclass
class Measuring:
    """A live measuring job of this host (its marker, jobs.concurrency), with what its
    process says where it can be read (/proc on Linux): its folder and output."""

    pid: int
    label: str  # the device label as its marker's name writes it
    here: bool | None  # runs in this run's directory; None: its process cannot be read
    output: str = ""  # the rows (or idle) file it will write, relative to its directory


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1] if name in args[:-1] else ""


def measuring(directory: Path, markers: list[tuple[int, str]]) -> list[Measuring]:
    """The live markers (pid, label) with each process's directory and output."""
    here = os.path.realpath(directory)
    out = []
    for pid, label in markers:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = fh.read().decode("utf-8", errors="replace").split("\0")
        except OSError:  # not Linux, another user's, or it ended just now
            out.append(Measuring(pid, label, None))
            continue
        output = _option(args, "--output")
        if os.path.isabs(output):
            output = os.path.relpath(output, cwd)
        out.append(Measuring(pid, label, os.path.realpath(cwd) == here, output))
    return out


@dataclass
class SnakemakeMarks:
    """What Snakemake keeps in .snakemake/ about the jobs it started (never its lock)."""

    locked: bool  # a lock file: a Snakemake runs here (or one was killed and left it)
    incomplete: dict[str, str | None]  # output path -> external job id (SLURM's)
    lock_mtime: float | None = None  # the newest lock file's: when its Snakemake started


def _decoded(parts: tuple[str, ...]) -> str | None:
    """Snakemake's record name: urlsafe base64 of the path, long ones split ("@" prefix)."""
    text = "".join(part.removeprefix("@") for part in parts)
    try:
        return base64.urlsafe_b64decode(text.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def snakemake_marks(directory: Path) -> SnakemakeMarks:
    root = directory / ".snakemake"
    locks = _files(root / "locks", "*.lock")
    mtimes = []
    for lock in locks:
        with contextlib.suppress(OSError):  # released just now
            mtimes.append(lock.stat().st_mtime)
    incomplete: dict[str, str | None] = {}
    base = root / "incomplete"
    for folder, _, names in os.walk(base):
        for name in names:
            path = Path(folder) / name
            output = _decoded(path.relative_to(base).parts)
            if output is not None:
                incomplete[output] = _external_jobid(path)
    return SnakemakeMarks(bool(locks), incomplete, max(mtimes, default=None))


def snakemake_processes(directory: Path) -> list[int] | None:
    """The Snakemakes running in `directory` on this host (their pids: a Snakemake works in
    its directory), read from /proc; None where /proc cannot be read (not Linux)."""
    here = os.path.realpath(directory)
    try:
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError:
        return None
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):  # another user's, or it ended just now
            if is_snakemake(pid) and os.path.realpath(os.readlink(f"/proc/{pid}/cwd")) == here:
                found.append(pid)
    return found


def _external_jobid(path: Path) -> str | None:
    try:
        value = json.loads(path.read_text()).get("external_jobid")
    except (OSError, ValueError, AttributeError):
        return None
    return None if value is None else str(value)


def slurm_jobs(directory: Path, run=subprocess.run) -> dict | None:
    """SLURM jobs of this run's directory (None when it is not a SLURM run): job logs
    under .snakemake/slurm_logs/ and, where `squeue` answers, pending and running jobs
    whose working directory is this one. squeue only reads."""
    logs_dir = directory / ".snakemake" / "slurm_logs"
    if not logs_dir.is_dir():
        return None
    out: dict = {"job_logs": len(_files(logs_dir, "**/*.log")), "pending": None, "running": None}
    command = ["squeue", "--me", "--noheader", "--format=%i|%T|%Z"]
    try:
        res = run(command, capture_output=True, text=True, timeout=SQUEUE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as err:
        out["note"] = f"squeue not available here ({type(err).__name__}): no job counts"
        return out
    if res.returncode != 0:
        out["note"] = f"squeue failed: {(res.stderr or '').strip()[:200]}"
        return out
    states = {}
    here = os.path.realpath(directory)
    for line in res.stdout.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3 and os.path.realpath(parts[2]) == here:
            states[parts[0]] = SQUEUE_STATES.get(parts[1], parts[1].lower())
    out.update(
        pending=sum(s == "pending" for s in states.values()),
        running=sum(s == "running" for s in states.values()),
        states=states,
        note="squeue --me: jobs whose working directory is this one",
    )
    return out
