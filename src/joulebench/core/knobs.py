"""Power limits and locked clocks: set for one configuration, read back, always restored.

A method's knobs (methods.KNOBS, docs/power.md) are set through the device's backend
(`Backend.knob_control`: NVML on NVIDIA and the simulated GPUs) just before the
configuration is built, read back into its row, and restored after it: on success, on an
error, on SIGTERM (how Snakemake and SLURM cancel a job), and after a kill -9. For the last,
a record of what was in force is written before anything is changed, one file per GPU UUID
in a host-wide folder (`state_dir`); every profile job on that GPU first restores what a
record left by a process that is gone says, before it measures. The folder is under the
system's temporary directory, which a reboot empties just as a reboot resets the settings.

A value the board refuses (outside its range, no permission) is a skipped row with the
reason and the fix: never a measurement at another setting labelled as this one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from joulebench.core.backends import KnobControl, KnobRefused
from joulebench.core.methods import KnobReadback, Method
from joulebench.safe_text import file_name
from joulebench.table_io import atomic_write

STATE_ENV = "JOULEBENCH_STATE_DIR"  # where records go (tests; a host without a shared /tmp)


def state_dir() -> Path:
    """The host-wide folder of records ($JOULEBENCH_STATE_DIR, else <tmp>/joulebench-state)."""
    return Path(os.environ.get(STATE_ENV) or Path(tempfile.gettempdir()) / "joulebench-state")


@dataclass
class Record:
    """What a process changed on a GPU, and what to put back: the limit in force before
    (None: the limit was not changed) and whether the SM clock was locked."""

    uuid: str
    power_limit_w: float | None
    clock_locked: bool
    pid: int

    @staticmethod
    def path(uuid: str) -> Path:
        return state_dir() / "knobs" / f"{file_name(uuid)}.json"

    def write(self) -> None:
        text = json.dumps(asdict(self))
        atomic_write(self.path(self.uuid), lambda tmp: Path(tmp).write_text(text))

    @classmethod
    def read(cls, uuid: str) -> Record | None:
        try:
            return cls(**json.loads(cls.path(uuid).read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as err:  # a half-written or foreign file
            raise KnobRefused(f"unreadable record {cls.path(uuid)} ({err}): remove it") from None

    def remove(self) -> None:
        self.path(self.uuid).unlink(missing_ok=True)

    def undo(self, control: KnobControl) -> str:
        """Put back what this record says was changed; returns it in words."""
        done = []
        if self.clock_locked:
            control.reset_sm_clock()
            done.append("SM clock unlocked")
        if self.power_limit_w is not None:
            control.set_power_limit_w(self.power_limit_w)
            done.append(f"power limit {self.power_limit_w:g} W")
        return ", ".join(done) or "nothing to restore"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def restore_leftover(control: KnobControl) -> str | None:
    """Restore what a process that is gone left changed on this GPU (its record); returns
    what was restored, in words, or None when nothing was left. A live process's record
    means another job holds this GPU's settings: KnobRefused."""
    record = Record.read(control.uuid)
    if record is None:
        return None
    if record.pid != os.getpid() and _alive(record.pid):
        raise KnobRefused(
            f"process {record.pid} changed this GPU's settings and is still running: one "
            "measuring job per GPU (its record: " + str(Record.path(control.uuid)) + ")"
        )
    done = record.undo(control)
    record.remove()
    return f"restored {done} left by process {record.pid}, which ended without restoring it"


def target_limit_w(control: KnobControl, method: Method) -> float | None:
    """The limit `method` asks for, in watts, within the board's range; None: none asked."""
    if method.power_limit_w is None and method.power_limit is None:
        return None
    default_w = control.default_power_limit_w()
    watts = method.power_limit_w or method.power_limit * default_w
    low_w, high_w = control.power_limit_range_w()
    if not low_w <= watts <= high_w:
        asked = (
            f"{method.power_limit:g} of the default {default_w:g} W = {watts:g} W"
            if method.power_limit is not None
            else f"{watts:g} W"
        )
        raise KnobRefused(
            f"method {method.name}: power limit {asked} is outside this board's range "
            f"[{low_w:g}, {high_w:g}] W"
        )
    return watts


def target_clock_mhz(control: KnobControl, method: Method) -> int | None:
    """The SM clock `method` asks to lock (a preset read from the board); None: none."""
    clock = method.sm_clock_mhz
    if clock is None:
        return None
    return int(control.sm_clock_mhz(clock)) if isinstance(clock, str) else int(clock)


@contextlib.contextmanager
def applied(control: KnobControl, method: Method, log: Callable[[str], None]) -> Iterator:
    """Set `method`'s knobs on the device for the `with` block; yields the KnobReadback.
    KnobRefused before anything is changed when the board cannot take them."""
    restore_leftover(control)  # what a killed job left is not this method's "before"
    watts, mhz = target_limit_w(control, method), target_clock_mhz(control, method)
    before_w = control.power_limit_w() if watts is not None else None
    record = Record(control.uuid, before_w, mhz is not None, os.getpid())
    record.write()  # before any change: a kill -9 from here on leaves it for the next job
    try:
        with _sigterm_as_exit():
            if watts is not None:
                control.set_power_limit_w(watts)
            if mhz is not None:
                control.lock_sm_clock_mhz(mhz)
            yield KnobReadback(
                power_limit_w=control.power_limit_w() if watts is not None else math.nan,
                sm_clock_mhz=control.sm_clock_mhz() if mhz is not None else math.nan,
            )
    finally:
        try:
            record.undo(control)
            record.remove()
        except KnobRefused as err:  # the record stays: the next job on this GPU retries
            log(f"WARNING: could not restore {Record.path(control.uuid)}: {err}")


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (a cancelled job) raises SystemExit, so `finally` restores the device."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
