"""A fake /sys/class/powercap tree (intel-rapl zones) whose counters a test sets by hand, for
the RAPL meter and the whole-node meter."""

from __future__ import annotations

from pathlib import Path

from helpers.fake_nvml import ManualClock
from joulebench.core.meters import RaplMeter


class FakePowercap:
    """/sys/class/powercap with intel-rapl zones whose counters the test sets by hand."""

    def __init__(self, root: Path, packages: int = 1, dram: bool = True, max_uj: int = 2**32):
        self.root = root
        self.max_uj = max_uj
        self.denied: set[str] = set()
        (root / "intel-rapl").mkdir(parents=True)  # the control type dir, not a zone
        (root / "intel-rapl" / "enabled").write_text("1\n")
        for p in range(packages):
            self.zone(f"intel-rapl:{p}", f"package-{p}")
            self.zone(f"intel-rapl:{p}:0", "core")
            if dram:
                self.zone(f"intel-rapl:{p}:1", "dram")
        # an MMIO duplicate of package-0: must be ignored, or the package counts twice
        self.zone("intel-rapl-mmio:0", "package-0")

    def zone(self, dirname: str, name: str) -> None:
        d = self.root / dirname
        d.mkdir()
        (d / "name").write_text(name + "\n")
        (d / "max_energy_range_uj").write_text(f"{self.max_uj}\n")
        (d / "energy_uj").write_text("0\n")

    def set(self, dirname: str, uj: int) -> None:
        (self.root / dirname / "energy_uj").write_text(f"{uj}\n")

    def add(self, dirname: str, uj: int) -> None:
        """Advance a counter by `uj`, wrapping at max_energy_range_uj like the hardware."""
        path = self.root / dirname / "energy_uj"
        path.write_text(f"{(int(path.read_text()) + uj) % self.max_uj}\n")

    def read(self, path: Path) -> str:
        """The meter's file reader; raises like a root-only energy_uj for denied zones."""
        if path.name == "energy_uj" and path.parent.name in self.denied:
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text()

    def meter(self, clock=None, **kw) -> RaplMeter:
        kw.setdefault("sample_interval_s", None)
        return RaplMeter(root=self.root, read=self.read, clock=clock or ManualClock(), **kw)
