"""Leases on the GPUs of a pool: a job takes whichever GPU is free, for its whole run.

A GPU's lease is an OS lock (flock, exclusive) on a file named by its UUID in a lock folder
of this user on this host (`$TMPDIR/joulebench-gpus-<uid>`, or $JOULEBENCH_LOCK_DIR). The
kernel drops the lock when the process that holds it ends, however it ends (kill -9
included), so a dead job never strands a GPU, and no stale file needs cleaning. The file's
text says who holds it (pid, device label, what it measures), for people and for
`joulebench status`; the lock, not the text, is what counts.

Snakemake runs at most as many jobs of a pool as it has GPUs (its measuring resource), so a
job normally finds a GPU free at once; it waits (polling) only when something outside the
workflow holds one (another run on this host), or a GPU of the pool failed: a GPU marked bad
in this run (schedule.bad_gpus) is never leased again, and a pool whose GPUs are all bad is
NoGoodGpu.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from joulebench.safe_text import file_name
from joulebench.schedule.bad_gpus import NoGoodGpu, bad_gpus, gpu_name

LOCK_DIR_ENV = "JOULEBENCH_LOCK_DIR"
POLL_S = 0.2  # how often a waiting job tries the pool's GPUs again
SAY_EVERY_S = 60.0  # a waiting job says so this often


def lock_dir() -> Path:
    """The folder of the GPU locks: this user's on this host, or $JOULEBENCH_LOCK_DIR."""
    default = Path(tempfile.gettempdir()) / f"joulebench-gpus-{os.getuid()}"
    return Path(os.environ.get(LOCK_DIR_ENV) or default)


def lock_path(key: str, folder: str | os.PathLike | None = None) -> Path:
    """The lock file of the GPU whose UUID is `key`."""
    return Path(folder if folder is not None else lock_dir()) / f"{file_name(key)}.lock"


class Lease:
    """A held lock on one GPU (`member`: the pool's record of it); `release` or the end of
    the process frees it."""

    def __init__(self, member: dict, fd: int, path: Path):
        self.member, self.fd, self.path = member, fd, path

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def member_key(member: dict) -> str:
    """What a GPU's lease is named by: its UUID (the device string where none is known)."""
    return str(member.get("uuid") or member["device"])


def try_lease(member: dict, folder=None, holder: str = "") -> Lease | None:
    """The lease of `member` if no one holds it now, else None (never waits)."""
    path = lock_path(member_key(member), folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {holder}\n".encode())
    return Lease(member, fd, path)


def lease_gpu(
    members: Sequence[dict],
    *,
    folder=None,
    holder: str = "",
    timeout_s: float | None = None,
    log: Callable[[str], None] = lambda s: None,
    clock: Callable[[], float] = time.monotonic,
    run_dir=None,
) -> Lease:
    """The first free GPU of the pool that is not marked bad in the run at `run_dir` (the
    working directory by default), waiting until one is (TimeoutError after `timeout_s`;
    NoGoodGpu where every one is bad). `holder` is written in the lock file."""
    if not members:
        raise ValueError("a pool needs at least one GPU")
    start = said = clock()
    while True:
        for member in good_members(members, run_dir):
            lease = try_lease(member, folder, holder)
            if lease is not None:
                return lease
        now = clock()
        if timeout_s is not None and now - start >= timeout_s:
            raise TimeoutError(f"no GPU of the pool was free within {timeout_s:g} s")
        if now - said >= SAY_EVERY_S:
            log(f"waiting for a free GPU of the pool ({now - start:.0f} s so far)")
            said = now
        time.sleep(POLL_S)


def good_members(members: Sequence[dict], run_dir=None) -> list[dict]:
    """The pool's GPUs not marked bad (schedule.bad_gpus); NoGoodGpu where none is left."""
    bad = bad_gpus(run_dir)
    good = [m for m in members if member_key(m) not in bad]
    if not good:
        names = "; ".join(gpu_name(bad[member_key(m)]) for m in members)
        raise NoGoodGpu(f"every GPU of the pool failed in this run and is marked bad: {names}")
    return good


def held_by(member: dict, folder=None) -> str | None:
    """Who holds `member`'s lease now (its lock file's text), or None when it is free.
    Read-only but for a moment's shared lock."""
    path = lock_path(member_key(member), folder)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.read(fd, 4096).decode(errors="replace").strip()
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
