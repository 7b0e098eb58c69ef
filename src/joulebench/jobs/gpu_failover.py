"""A profile job whose GPU fails: the GPU leaves the pool, the job goes on.

When a worker says its GPU failed (event `gpu-fault`, jobs.gpu_faults), the job's
supervisor marks the GPU bad for the rest of the run (schedule.bad_gpus), so no job leases it
again, and moves the job once (MOVES) to another good GPU of the pool, where a new worker
measures the configuration the GPU failed in and those after it. Where no good GPU is left,
or the job has moved already, the configurations left are `not-measured` rows naming the GPU
and its fault. Rows after a fault say which GPU failed (`gpu_failed`). A configuration that
fails again at the same place on the next GPU is its own fault, not the GPUs': an `error`
row, and that GPU is kept. docs/profiling.md#when-a-model-or-a-gpu-misbehaves.
"""

from __future__ import annotations

import os

import pandas as pd

from joulebench.jobs.job_spec import JobSpec
from joulebench.jobs.supervise import STATUS_NOT_MEASURED, WorkerRun
from joulebench.safe_text import quantity
from joulebench.schedule.bad_gpus import FOLDER, NoGoodGpu, bad_gpus, fault_text, mark_bad

MOVES = 1  # a job whose GPU fails is retried once on another GPU of its pool
# set in a SLURM allocation: there a label's lone GPU is each allocation's own, so another
# allocation's bad GPU says nothing of this one's
ALLOCATION_ENV = "SLURM_JOB_ID"


class Failover:
    """A job's GPU (the spec pinned to it, the lease held) and where it may move to."""

    def __init__(self, spec: JobSpec, *, pool=(), lease=None, holder="", label="", unavailable=""):
        self.spec, self.pool, self.lease = spec, list(pool), lease
        self.holder, self.label = holder, label  # what it measures (the lock's text); device
        self.unavailable = unavailable  # why it has no GPU at all (NoGoodGpu at its lease)
        self.moves_left = MOVES
        self.notes: list[tuple[int, str]] = []  # (from position, the GPU that failed)
        self.first: tuple[int, str] | None = None  # the first fault's position and text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.lease is not None:
            self.lease.release()

    def start_reason(self) -> str:
        """Why the job measures nothing ('' where it may): no good GPU was left to lease,
        or its lone GPU is marked bad in this run (not on a cluster: ALLOCATION_ENV)."""
        if self.unavailable or self.pool or os.environ.get(ALLOCATION_ENV):
            return self.unavailable
        for record in bad_gpus().values():
            if record.get("device_label") == self.label:
                return f"{fault_text(record)}; it is marked bad in this run ({FOLDER}/)"
        return ""

    def on_fault(self, run: WorkerRun, start: int, positions: int, failed, log) -> int:
        """After a worker whose GPU failed: where the next worker starts (`positions`:
        none), the rows it cannot measure written through `failed`."""
        position = fault_position(run, start)
        kind, evidence = run.fault.get("kind", "?"), str(run.fault.get("evidence", ""))
        if self.first is not None and self.first[0] == position:
            why = f"{kind} again on the next GPU: the configuration's fault, not a GPU's: "
            failed([position], "error", why + evidence)
            log(f"{self.holder}: {why}{evidence}; going on with the next")
            return position + 1
        record = mark_bad(self._gpu(run.fault), kind, evidence, device_label=self.label,
                          job=self.holder)  # fmt: skip
        text = fault_text(record)
        log(f"{self.holder}: {text}: marked bad for the rest of the run ({FOLDER}/)")
        self.first = self.first or (position, text)
        self.notes.append((position, text))
        if self.moves_left and self._move(log):
            self.moves_left -= 1
            log(f"{self.holder}: configuration {position + 1} on: again on {self._gpu({})['uuid']}")
            return position
        failed(range(position, positions), STATUS_NOT_MEASURED, f"{text}; {self._stuck()}")
        return positions

    def noted(self, rows: pd.DataFrame) -> pd.DataFrame:
        """`rows` (config_order = position + 1) with the GPU that failed under them."""
        rows = rows.copy()
        for position, text in self.notes:
            rows.loc[rows["config_order"] > position, "gpu_failed"] = text
        return rows

    def _gpu(self, fault: dict) -> dict:
        """The job's GPU now: its pool record where it leased one, else what the worker said."""
        leased = dict(self.spec.gpu)
        uuid = leased.get("uuid") or fault.get("uuid")
        member = next((m for m in self.pool if m.get("uuid") == uuid), {})
        index = leased.get("index") if leased else fault.get("index")
        return {"uuid": uuid, "index": index, "device": member.get("device", "")}

    def _move(self, log) -> bool:
        """Lease a good GPU of the pool and pin to it; False where none is left."""
        from joulebench.schedule.slots import lease_from_pool

        if not self.pool:
            return False
        try:
            lease, device, gpu = lease_from_pool(self.pool, self.holder, log=log)
        except NoGoodGpu:
            return False
        if self.lease is not None:
            self.lease.release()
        self.lease, self.spec = lease, self.spec.pinned(device, gpu)
        return True

    def _stuck(self) -> str:
        if not self.pool:
            return "the device has no other GPU"
        if self.moves_left:
            return "no good GPU of the pool is left"
        return f"the job moved to another GPU already ({quantity(MOVES, 'move')} a job)"


def fault_position(run: WorkerRun, start: int) -> int:
    """The configuration the GPU failed in: the event's, else the worker's next one."""
    position = run.fault.get("position")
    if position is None or int(position) < start:
        return max([start - 1, *run.done]) + 1
    return int(position)


def failover_for(spec: JobSpec, pool: list[dict], holder: str, label: str, log) -> Failover:
    """The job's Failover: a good GPU of `pool` leased (pinned; none: `unavailable`), or,
    without a pool, the spec as pinned."""
    from joulebench.schedule.slots import lease_from_pool

    if not pool:
        return Failover(spec, holder=holder, label=label)
    try:
        lease, device, gpu = lease_from_pool(pool, holder, log=log)
    except NoGoodGpu as err:
        return Failover(spec, pool=pool, holder=holder, label=label, unavailable=str(err))
    pinned = spec.pinned(device, gpu)
    return Failover(pinned, pool=pool, lease=lease, holder=holder, label=label)
