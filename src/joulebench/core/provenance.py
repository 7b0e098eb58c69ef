"""Where and with what a number was measured: every profile row carries this."""

from __future__ import annotations

import datetime as dt
import platform
import socket
from importlib import metadata
from pathlib import Path


def utc_now(precise: bool = False) -> str:
    """ISO 8601 UTC; `precise` keeps microseconds (a configuration's start and end, so
    overlapping measurements can be told apart)."""
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if precise else "%Y-%m-%dT%H:%M:%SZ"
    return dt.datetime.now(dt.UTC).strftime(fmt)


def seconds_taken(rows):
    """Each row's seconds from `start_time_utc` to `end_time_utc` (utc_now's form); NaN where
    one is missing (a `timeout` or `crashed` row has no start)."""
    import pandas as pd

    def utc(column: str):
        return pd.to_datetime(rows[column], utc=True, errors="coerce", format="ISO8601")

    return (utc("end_time_utc") - utc("start_time_utc")).dt.total_seconds()


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def software() -> dict:
    """The versions a row was measured with. timm's is its installed distribution's
    (importing timm costs a process ~2.5 s of CPU, and the row's model may not be timm's)."""
    import torch

    return {
        "torch_version": torch.__version__,
        "timm_version": metadata.version("timm"),
        "cuda_version": torch.version.cuda or "",
        "host": socket.gethostname(),
    }
