"""GPUs that failed in this run (issue 35 item 4): marked once, never leased again.

A profile job whose GPU faults (jobs.gpu_faults) marks it bad here: one JSON file per
GPU in the run's folder, `results/bad-gpus/<uuid>~<hash>.json` (the UUID as a file name:
safe_text.file_name; written atomically), holding `uuid`, `index` (NVML's), `device`,
`device_label`, `kind` (nvml, xid, ecc or cuda), `evidence` (the error's text), `job` (what
was measured) and `time_utc`. A pool's lease (schedule.lease.lease_gpu) skips every GPU
marked here, so no model is handed to it again in this run or a resumed one; a lone GPU's
jobs leave `not-measured` rows instead (jobs.gpu_failover); `joulebench status` lists
them. Once the GPU is fixed (a reboot, `nvidia-smi -r`), delete its file to measure on it
again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from joulebench.core.provenance import utc_now
from joulebench.safe_text import file_name
from joulebench.table_io import atomic_write

FOLDER = Path("results") / "bad-gpus"  # under the run's directory (Snakemake's working one)


class NoGoodGpu(RuntimeError):
    """Every GPU of a pool is marked bad."""


def folder(directory: str | os.PathLike | None = None) -> Path:
    return Path(directory or ".") / FOLDER


def mark_bad(gpu: dict, kind: str, evidence: str, *, directory=None, **about) -> dict:
    """Mark the GPU `gpu` (uuid, index, device) bad with its fault's kind and evidence;
    `about`: device_label, job. Returns the record written."""
    record = {
        "uuid": str(gpu.get("uuid") or gpu.get("device") or "?"),
        "index": gpu.get("index"),
        "device": str(gpu.get("device") or ""),
        "device_label": str(about.get("device_label", "")),
        "kind": kind,
        "evidence": str(evidence)[:2000],
        "job": str(about.get("job", "")),
        "time_utc": utc_now(),
    }
    path = folder(directory) / f"{file_name(record['uuid'])}.json"
    text = json.dumps(record, indent=1)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    return record


def bad_gpus(directory=None) -> dict[str, dict]:
    """uuid -> record of every GPU marked bad (a file cut short or not JSON is skipped)."""
    out = {}
    for path in sorted(folder(directory).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("uuid"):
            out[str(record["uuid"])] = record
    return out


def gpu_name(record: dict) -> str:
    """`GPU-1234... (index 0)`: how rows and logs name a GPU."""
    index = record.get("index")
    return str(record.get("uuid") or "?") + ("" if index is None else f" (index {index})")


def fault_text(record: dict) -> str:
    """`GPU-... (index 0) failed: xid: <evidence>`: the reason rows give."""
    return f"{gpu_name(record)} failed: {record.get('kind')}: {record.get('evidence', '')}"
