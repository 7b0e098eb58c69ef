"""CPU energy from RAPL through Linux powercap (/sys/class/powercap/intel-rapl:*).

Each zone has an `energy_uj` counter that wraps at `max_energy_range_uj`. The meter reads every
zone at begin, at end and (optionally) every ~100 ms in between, adding wrap-corrected deltas,
so a counter may wrap any number of times as long as it wraps less than once per read.

energy_j is the sum of the *package* zones (one per socket or die). DRAM, core, uncore and
psys are reported separately in Reading.components and never added in: core and uncore are
parts of the package, psys contains it, and DRAM is not the CPU.

On Linux >= 5.10 energy_uj is readable by root only (CVE-2020-8694); the meter then refuses
with the command that grants read access. It never falls back silently.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from joulebench.core.meters.base import Meter, MeterUnavailable, Reading
from joulebench.core.meters.sampler import Sampler, trace_frame

DEFAULT_ROOT = Path("/sys/class/powercap")
DEFAULT_INTERVAL_S = 0.1
# intel-rapl:N (package or psys) and intel-rapl:N:M (dram, core, uncore). AMD Zen CPUs use the
# same driver and names since Linux 5.8. intel-rapl-mmio:* duplicates the MSR package counter on
# some Intel laptops, so it is deliberately not matched (it would count the package twice).
ZONE_DIR = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")

GRANT_READ_HELP = (
    "RAPL energy counters are readable by root only (Linux >= 5.10, CVE-2020-8694). "
    "Grant read access until the next reboot with:\n"
    "  sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj "
    "/sys/class/powercap/intel-rapl:*:*/energy_uj\n"
    "or persistently with a udev rule, see docs/measurement.md (RAPL). "
    "Or run with --meter estimate to use the labelled CPU estimate instead."
)


@dataclass(frozen=True)
class RaplZone:
    """One powercap zone: `key` names it in Reading.components ("package-0", "dram-0", "psys")."""

    key: str
    kind: str  # "package", "dram", "core", "uncore", "psys", ...
    path: Path
    max_energy_range_uj: int


def read_text(path: Path) -> str:
    return Path(path).read_text()


def discover_zones(root: Path, read: Callable[[Path], str] = read_text) -> list[RaplZone]:
    """All RAPL zones under a powercap root, sorted; raises MeterUnavailable if there are none."""
    root = Path(root)
    if not root.is_dir():
        raise MeterUnavailable(
            "missing",
            f"{root} does not exist: no powercap driver (a VM, a non-Linux OS, or a container "
            "without /sys/class/powercap)",
        )
    dirs = []
    for entry in root.iterdir():
        match = ZONE_DIR.match(entry.name)
        if match:
            top, sub = int(match[1]), None if match[2] is None else int(match[2])
            dirs.append(((top, -1 if sub is None else sub), entry))
    dirs.sort()
    try:
        names = {entry.name: read(entry / "name").strip() for _, entry in dirs}
        max_uj = {entry.name: int(read(entry / "max_energy_range_uj")) for _, entry in dirs}
    except (OSError, ValueError) as err:
        raise MeterUnavailable("unreadable", f"cannot read RAPL zones under {root}: {err}") from err
    zones, seen = [], set()
    for (top, sub), entry in dirs:
        name = names[entry.name]
        kind = name.split("-")[0]  # "package-0" -> package, "package-0-die-1" -> package
        if sub == -1:
            key = name  # "package-0", "psys"
        else:
            parent = names.get(f"intel-rapl:{top}", f"zone{top}")
            suffix = parent[len("package-") :] if parent.startswith("package-") else str(top)
            key = f"{name}-{suffix}"  # "dram-0", "core-1"
        if key in seen:
            key = f"{key}@{entry.name}"
        seen.add(key)
        zones.append(RaplZone(key, kind, entry, max_uj[entry.name]))
    if not any(z.kind == "package" for z in zones):
        raise MeterUnavailable(
            "no-zones",
            f"no RAPL package zone under {root} (found {[z.key for z in zones]}); the CPU or VM "
            "does not expose RAPL, or the intel_rapl_msr module is not loaded "
            "(sudo modprobe intel_rapl_msr)",
        )
    return zones


def wrapped_delta_uj(before_uj: int, after_uj: int, max_energy_range_uj: int) -> int:
    """Energy between two reads of one counter, allowing one wrap at max_energy_range_uj."""
    delta = after_uj - before_uj
    return delta + max_energy_range_uj if delta < 0 else delta


class RaplMeter(Meter):
    """Package (and, separately, DRAM) energy of all CPU sockets over a window.

    `root` and `read` are injectable so tests can use a fake powercap tree and simulate
    permission errors (tests run as root, where chmod 000 does not stop a read).
    `sample_interval_s=None` turns the power-trace thread off.
    """

    name = "rapl"
    is_estimate = False

    def __init__(
        self,
        *,
        root: str | Path = DEFAULT_ROOT,
        read: Callable[[Path], str] = read_text,
        sample_interval_s: float | None = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.root = Path(root)
        self.read = read
        self.clock = clock
        self.zones = discover_zones(self.root, read)
        self._last_uj = self._read_all()  # fails here, not mid-study, if counters are unreadable
        self._acc_uj = dict.fromkeys(self._last_uj, 0)
        self._last_sample: tuple[float, int] | None = None  # (clock, package µJ) of the last poll
        self._t0: float | None = None
        self._lock = threading.Lock()  # the accumulators are shared with the sampler thread
        self.sampler = Sampler(
            self._sample_power, sample_interval_s, clock=clock, name="joulebench-sampler-rapl"
        )

    def _read_all(self) -> dict[str, int]:
        out = {}
        for zone in self.zones:
            path = zone.path / "energy_uj"
            try:
                out[zone.key] = int(self.read(path))
            except PermissionError as err:
                raise MeterUnavailable(
                    "permission-denied", f"cannot read {path}: permission denied. {GRANT_READ_HELP}"
                ) from err
            except (OSError, ValueError) as err:  # e.g. ENODATA when RAPL is off in the firmware
                raise MeterUnavailable("unreadable", f"cannot read {path}: {err}") from err
        return out

    def _poll(self) -> None:
        """Read every zone and add the wrap-corrected deltas since the last read."""
        now_uj = self._read_all()
        for zone in self.zones:
            key = zone.key
            self._acc_uj[key] += wrapped_delta_uj(
                self._last_uj[key], now_uj[key], zone.max_energy_range_uj
            )
        self._last_uj = now_uj

    def _package_uj(self) -> int:
        return sum(self._acc_uj[z.key] for z in self.zones if z.kind == "package")

    def _sample_power(self) -> dict:
        """Package power since the previous sample (NaN for the first)."""
        with self._lock:
            self._poll()
            now, package_uj = self.clock(), self._package_uj()
            previous, self._last_sample = self._last_sample, (now, package_uj)
        power_w = math.nan
        if previous is not None and now > previous[0]:
            power_w = (package_uj - previous[1]) / 1e6 / (now - previous[0])
        return {"power_w": power_w}

    def begin(self) -> None:
        self.sampler.stop()
        with self._lock:
            self._last_uj = self._read_all()
            self._acc_uj = dict.fromkeys(self._last_uj, 0)
            self._last_sample = (self.clock(), 0)
            self._t0 = self._last_sample[0]
        self.sampler.start(self._t0)

    def end(self) -> Reading:
        if self._t0 is None:
            raise RuntimeError("end() without begin()")
        rows = self.sampler.stop()
        final = self._sample_power()  # the last poll, outside the sampler so errors surface
        duration_s = self._last_sample[0] - self._t0
        rows = [{"t_s": 0.0, "power_w": math.nan}, *rows, {**final, "t_s": duration_s}]
        components = {key: uj / 1e6 for key, uj in self._acc_uj.items()}
        self._t0 = None
        return Reading(
            energy_j=self._package_uj() / 1e6,
            duration_s=duration_s,
            # The trace is derived from the same counters: not an independent cross-check.
            energy_trace_j=math.nan,
            trace=trace_frame(rows),
            components=components,
        )

    def describe(self) -> dict:
        return {
            "meter": self.name,
            "powercap_root": str(self.root),
            "zones": ",".join(f"{z.key}={z.path.name}" for z in self.zones),
            "energy_j_is": "sum of package zones",
            "sample_interval_s": self.sampler.interval_s,
        }

    def close(self) -> None:
        self.sampler.stop()
