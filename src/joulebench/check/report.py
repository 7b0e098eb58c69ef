"""The report of `joulebench check`: its rows, its JSON layout, where it is kept, and how a
profile finds the latest one of its device.

A report is JSON at results/check/<device>.json (`cuda0.json`, `cpu.json`, `simh100.json`),
written atomically and validated against report_schema() (documented in
docs/measurement.md). Rows are plain text: the table never parses labels.
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from joulebench.core.provenance import utc_now
from joulebench.safe_text import file_name
from joulebench.table_io import atomic_write
from joulebench.tables import CHECK, CHECK_RESULTS, POWER_LIMIT_W_MAX, is_estimate_meter

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
STATUSES = (PASS, WARN, FAIL, SKIP)
SCHEMA_VERSION = 1
CHECK_DIR = "results/check"


@dataclass
class Row:
    """One check: what, how it came out, and what that means for the numbers."""

    group: str  # environment, idle, sensor, counter, repeat, input, cross-check, rapl
    name: str
    status: str
    value: float | int | str | bool | None = None
    unit: str = ""
    target: str = ""
    detail: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {self.status!r}")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            self.value = None  # JSON has no NaN


def verdict(rows: list[Row]) -> str:
    """The worst status of the rows that ran (skips do not count)."""
    statuses = {r.status for r in rows}
    for status in (FAIL, WARN):
        if status in statuses:
            return status
    return PASS


@dataclass
class CheckReport:
    device: str
    rows: list[Row]
    meter: dict  # the meter's describe()
    sensor: dict | None = None  # fitted refresh/window and the published values
    protocol: dict = field(default_factory=dict)  # what the profile will use
    check_id: str = ""
    start_time_utc: str = ""
    duration_s: float = 0.0

    @property
    def verdict(self) -> str:
        return verdict(self.rows)

    def as_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "check_id": self.check_id,
            "device": self.device,
            "device_name": self.meter.get("device_name") or self.meter.get("cpu_model") or "",
            "uuid": self.meter.get("uuid"),
            "verdict": self.verdict,
            "start_time_utc": self.start_time_utc,
            "duration_s": self.duration_s,
            "meter": self.meter.get("meter", ""),
            "is_estimate": is_estimate_meter(self.meter.get("meter", "")),
            "meter_detail": _jsonable(self.meter),
            "sensor": _jsonable(self.sensor),
            "protocol": _jsonable(self.protocol),
            "software": software_versions(),
            "results": [asdict(r) for r in self.rows],
        }


def software_versions() -> dict:
    """Versions that matter to a check, without importing torch or timm for a CPU check."""
    import platform
    import socket
    import sys

    from joulebench import __version__

    out = {
        "joulebench": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "host": socket.gethostname(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = torch.__version__
        out["cuda"] = torch.version.cuda or ""
    return out


def _jsonable(value):
    """Dicts/lists of plain values, NaN as None, anything else as its string."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    return str(value)


def new_check_id(device: str) -> str:
    stamp = utc_now().replace("-", "").replace(":", "")
    return f"{device_file(device)}-{stamp}-{secrets.token_hex(3)}"


# ------------------------------------------------------------------ the report


def report_schema() -> dict:
    """The report's JSON schema; its device pattern is the device registry's."""
    from joulebench.core.backends import device_pattern

    schema = {**_REPORT_SCHEMA, "properties": dict(_REPORT_SCHEMA["properties"])}
    schema["properties"]["device"] = {"type": "string", "pattern": device_pattern()}
    return schema


def _between(low: float, high: float, above: bool = False) -> dict:
    """A JSON-schema range: what a board can physically read (a report holding more, hand
    edited or damaged, is not read: its tail once made rows of negative energy)."""
    return {"exclusiveMinimum" if above else "minimum": low, "maximum": high}


_REPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "joulebench check report",
    "type": "object",
    # every field of the registry's check table, but the two a CPU report may lack
    "required": [c for c in CHECK.names if c not in ("uuid", "meter_detail")],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "check_id": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]+$"},
        "device_name": {"type": "string"},
        "uuid": {"type": ["string", "null"]},
        "verdict": {"enum": [PASS, WARN, FAIL]},
        "start_time_utc": {"type": "string"},
        "duration_s": {"type": "number", "minimum": 0},
        "meter": {"type": "string"},
        "is_estimate": {"type": "boolean"},
        "meter_detail": {"type": "object"},
        "sensor": {
            "type": ["object", "null"],
            "properties": {
                "fit": {
                    "type": ["object", "null"],
                    "required": ["refresh_s", "window_s", "lag_s", "rise_s", "rms_w"],
                    "properties": {
                        "refresh_s": {"type": "number", "exclusiveMinimum": 0},
                        "window_s": {"type": "number", "exclusiveMinimum": 0},
                    },
                },
                "expected": {"type": ["object", "null"]},
            },
        },
        "protocol": {
            "type": "object",
            "properties": {
                "sensor_refresh_s": {"type": ["number", "null"], **_between(0, 2, above=True)},
                "min_window_s": {"type": "number", **_between(0, 600)},
                "tail": {
                    "type": ["object", "null"],
                    "required": ["excess_w", "load_dynamic_w", "hold_s", "tau_s"],
                    "properties": {
                        "excess_w": {"type": "number", **_between(0, POWER_LIMIT_W_MAX)},
                        "load_dynamic_w": {
                            "type": "number",
                            **_between(0, POWER_LIMIT_W_MAX, above=True),
                        },
                        "hold_s": {"type": "number", **_between(0, 10)},
                        "tau_s": {"type": "number", **_between(0, 60, above=True)},
                    },
                },
                "heat": {
                    "type": ["object", "null"],
                    "required": ["c_per_w", "leakage_per_c"],
                    "properties": {
                        "tau_s": {"type": "number", **_between(0, 3600, above=True)},
                        "c_per_w": {"type": "number", **_between(0, 2)},
                        "leakage_per_c": {"type": "number", **_between(0, 0.05)},
                        "idle_temperature_c": {"type": "number", **_between(-40, 125)},
                    },
                },
            },
        },
        "software": {"type": "object"},
        "results": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": CHECK_RESULTS.names,
                "additionalProperties": False,
                "properties": {
                    "group": {"type": "string"},
                    "name": {"type": "string"},
                    "status": {"enum": list(STATUSES)},
                    "value": {"type": ["number", "string", "boolean", "null"]},
                    "unit": {"type": "string"},
                    "target": {"type": "string"},
                    "detail": {"type": "string"},
                },
            },
        },
    },
}


class ImplausibleReport(ValueError):
    """A report whose values no board can have (beyond its own power limit)."""


def validate_report(report: dict) -> None:
    """Raise jsonschema.ValidationError if the report does not follow report_schema() (its
    ranges among it), ImplausibleReport where its tail is beyond the board's power limit."""
    import jsonschema

    jsonschema.validate(report, report_schema())
    problems = beyond_power_limit(report)
    if problems:
        raise ImplausibleReport("; ".join(problems))


def beyond_power_limit(report: dict) -> list[str]:
    """The tail's watts that exceed the power limit the report's meter read: no board draws
    more after its load than its limit lets it draw at all."""
    detail = report.get("meter_detail") or {}
    limit = detail.get("power_limit_w") if isinstance(detail, dict) else None
    tail = (report.get("protocol") or {}).get("tail") or {}
    if not isinstance(limit, int | float) or not math.isfinite(limit) or limit <= 0:
        return []
    return [
        f"protocol.tail.{key} = {tail[key]:.4g} W is above the board's power limit {limit:.4g} W"
        for key in ("excess_w", "load_dynamic_w")
        if isinstance(tail.get(key), int | float) and tail[key] > limit
    ]


def device_file(device: str) -> str:
    """'cuda:0' -> 'cuda0', 'cpu' -> 'cpu': the report's file name stem (safe_text.file_name)."""
    return file_name(device.replace(":", ""))


def report_path(device: str, check_dir: str | Path = CHECK_DIR) -> Path:
    """Where the report of `device` is kept, by its one spelling (`cuda` is cuda0.json; a
    string no backend serves as written, made a safe file name)."""
    from joulebench.core.backends import DeviceError, kind_of

    try:
        device = kind_of(device).canonical(device)
    except DeviceError:
        pass
    return Path(check_dir) / f"{device_file(device)}.json"


def write_report(report: dict, path: str | Path) -> Path:
    """Validate, then write atomically (temp file + rename)."""
    validate_report(report)
    text = json.dumps(report, indent=2, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def latest_check(device: str, check_dir: str | Path = CHECK_DIR) -> dict | None:
    """The latest report for `device`, or None when none was run (or it is unreadable)."""
    path = report_path(device, check_dir)
    try:
        report = json.loads(path.read_text())
        validate_report(report)
    except (OSError, ValueError):
        return None
    except Exception:  # jsonschema.ValidationError: a report from another version
        return None
    return report


def device_check(device: str, check_dir: str | Path, uuid: str | None) -> dict | None:
    """The latest report of this very device: same file, and same GPU UUID where there is one
    (a report from another GPU, e.g. after CUDA_VISIBLE_DEVICES changed, does not count)."""
    report = latest_check(device, check_dir)
    if report is None:
        return None
    if uuid is not None and report.get("uuid") not in (None, uuid):
        return None
    return report


def checked_fields(report: dict | None) -> dict:
    """Profile row fields: the check's id and verdict, empty when none was run."""
    if report is None:
        return {"check_id": "", "check_verdict": ""}
    return {"check_id": report["check_id"], "check_verdict": report["verdict"]}


def format_table(report: dict) -> str:
    """The report as a fixed-width text table (plain text: labels are never parsed)."""
    header = ["group", "check", "status", "value", "target", "detail"]
    lines = [
        f"joulebench check  {report['device']}  {report['device_name']}  "
        f"meter {report['meter']}  id {report['check_id']}"
    ]
    body = []
    for r in report["results"]:
        body.append(
            [
                r["group"],
                r["name"],
                r["status"].upper(),
                _show(r["value"], r["unit"]),
                r["target"],
                r["detail"],
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=False)]
    widths[-1] = 0  # detail: free length, last
    for row in [header, *body]:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    counts = {s: sum(r["status"] == s for r in report["results"]) for s in STATUSES}
    lines.append(
        f"verdict: {report['verdict'].upper()} ({counts[PASS]} pass, {counts[WARN]} warn, "
        f"{counts[FAIL]} fail, {counts[SKIP]} skipped) in {report['duration_s']:.0f} s"
    )
    return "\n".join(lines)


def _show(value, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not unit:  # a ratio or share
            return f"{value:.2%}" if abs(value) < 10 else f"{value:.3g}"
        return f"{value:.4g} {unit}"
    return f"{value} {unit}".strip()
