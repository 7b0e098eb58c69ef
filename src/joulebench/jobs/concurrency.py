"""How many measurements run on this node right now (the `concurrent_measurements` column).

Each measuring job (idle, profile) holds a small marker file in a shared folder while it
runs: `<host>-<pid>-<device label>`. Counting the markers of this host whose process is alive
says how many measurements overlap; a marker left by a killed job is ignored (its pid is
gone). The folder is this user's on this host, in the temp directory
(`$TMPDIR/joulebench-running-<uid>`), so every joulebench measurement on the node counts,
whichever workflow started it; $JOULEBENCH_RUNNING_DIR names another.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from pathlib import Path

from joulebench.safe_text import file_name

RUNNING_DIR_ENV = "JOULEBENCH_RUNNING_DIR"


def running_dir() -> Path:
    default = Path(tempfile.gettempdir()) / f"joulebench-running-{os.getuid()}"
    return Path(os.environ.get(RUNNING_DIR_ENV) or default)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class NodeMeasurements:
    """This job's marker, and a count of every live one on this host."""

    def __init__(self, device_label: str, folder: str | os.PathLike | None = None):
        self.folder = Path(folder) if folder is not None else running_dir()
        self.host = socket.gethostname()
        self.path = self.folder / f"{self.host}-{os.getpid()}-{file_name(device_label)}"

    def __enter__(self):
        from joulebench.jobs.supervise import snakemake_ancestor

        self.folder.mkdir(parents=True, exist_ok=True)
        # whose run it is: a marker whose Snakemake is gone is an orphan's (orphans)
        self.path.write_text(str(snakemake_ancestor() or ""))
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def count(self) -> int:
        """Live measurements on this host, this one included (at least 1)."""
        return max(len(live_markers(self.folder)), 1)


def live_markers(folder: str | os.PathLike | None = None) -> list[tuple[int, str]]:
    """(pid, device label as `file_name` writes it) of each live measurement on this host,
    in pid order (not the names' text order: pid 448 after 32597 once pids wrap): the
    markers whose process is alive. Read-only (`joulebench status` reads it mid-run)."""
    folder = Path(folder) if folder is not None else running_dir()
    prefix = f"{socket.gethostname()}-"
    try:
        names = sorted(entry.name for entry in folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    live = []
    for name in names:
        if not name.startswith(prefix):
            continue
        pid, _, label = name[len(prefix) :].partition("-")
        if pid.isdigit() and label and (int(pid) == os.getpid() or _alive(int(pid))):
            live.append((int(pid), label))
    return sorted(live)


def orphans(folder: str | os.PathLike | None = None) -> list[int]:
    """The pids of live measurements on this host whose Snakemake is gone: a run killed
    while they measured (their supervisor ends them within seconds; one that does not is
    ended by the next job, jobs.job_runner). A measurement no Snakemake started (the
    ad-hoc `joulebench profile`) is never one."""
    from joulebench.jobs.supervise import alive

    folder = Path(folder) if folder is not None else running_dir()
    found = []
    for pid, label in live_markers(folder):
        marker = folder / f"{socket.gethostname()}-{pid}-{label}"
        with contextlib.suppress(OSError, ValueError):
            owner = marker.read_text().strip()
            if owner and pid != os.getpid() and not alive(int(owner)):
                found.append(pid)
    return found
