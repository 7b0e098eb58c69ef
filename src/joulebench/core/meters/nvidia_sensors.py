"""What NVIDIA's on-board power sensors do, per GPU generation: the published numbers.

The protocol, the sensor simulator (joulebench.sim) and `joulebench check` all need the same
table: how often a GPU's power reading refreshes, how much of each refresh period it averages,
and which NVML calls answer what. Sources: Yang, Adamek, Armour, SC24 (arXiv:2312.02741) for
the refresh periods and averaging windows, the NVML API reference for the calls. Where the
sources are silent (how the energy counter integrates, what the 1 s average averages) the
simulator makes an assumption and `check` measures what it can; sources and assumptions:
docs/measurement.md#the-protocol-against-simulated-sensors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# pynvml's NVML_DEVICE_ARCH_* values
ARCH_PASCAL, ARCH_VOLTA, ARCH_TURING, ARCH_AMPERE, ARCH_ADA, ARCH_HOPPER = 4, 5, 6, 7, 8, 9

SC24 = "Yang, Adamek, Armour, SC24 (arXiv:2312.02741)"

#: The refresh period the protocol assumes when nothing better is known (A100/H100/Turing/GH200).
DEFAULT_REFRESH_S = 0.1


@dataclass(frozen=True)
class SensorSpec:
    """How one GPU generation's power sensor reports, as published."""

    generation: str  # our key: pascal, volta, turing, a100, hopper, gh200
    example: str  # a GPU of that generation, for tables
    arch: int  # NVML_DEVICE_ARCH_*
    refresh_s: float  # the reading changes once per refresh period
    window_s: float  # and is the mean power over the last window_s of it (boxcar)
    power_usage: str  # nvmlDeviceGetPowerUsage: "instant" or "average-1s"
    average_field: bool  # NVML_FI_DEV_POWER_AVERAGE answered
    energy_counter: bool  # nvmlDeviceGetTotalEnergyConsumption answered
    name_pattern: str  # regex on nvmlDeviceGetName
    source: str = SC24

    @property
    def coverage(self) -> float:
        """Share of the time the reading sees."""
        return min(1.0, self.window_s / self.refresh_s)


GENERATIONS: dict[str, SensorSpec] = {
    s.generation: s
    for s in (
        SensorSpec("pascal", "P100", ARCH_PASCAL, 0.020, 0.010, "instant", False, False,
                   r"P100|P40|P4\b|GTX 10|TITAN X"),
        SensorSpec("volta", "V100", ARCH_VOLTA, 0.020, 0.010, "instant", False, True,
                   r"V100|TITAN V"),
        SensorSpec("turing", "T4", ARCH_TURING, 0.100, 0.100, "instant", False, True,
                   r"\bT4\b|RTX 20|Quadro RTX|TITAN RTX"),
        SensorSpec("a100", "A100", ARCH_AMPERE, 0.100, 0.025, "instant", False, True,
                   r"A100|A800|A30\b"),
        SensorSpec("hopper", "H100", ARCH_HOPPER, 0.100, 0.025, "average-1s", True, True,
                   r"H100|H200|H800|H20\b"),
        SensorSpec("gh200", "GH200", ARCH_HOPPER, 0.100, 0.020, "average-1s", True, True,
                   r"GH200"),
    )
}  # fmt: skip


def expected_sensor(name: str | None, arch: int | None = None) -> SensorSpec | None:
    """The published sensor of a GPU by its NVML name (then architecture); None if unknown.

    GH200 is matched before H100 (its name contains "H100" on some drivers' strings).
    """
    text = name or ""
    for key in ("gh200", *[k for k in GENERATIONS if k != "gh200"]):
        if re.search(GENERATIONS[key].name_pattern, text, re.IGNORECASE):
            return GENERATIONS[key]
    by_arch = [s for s in GENERATIONS.values() if s.arch == arch and s.generation != "gh200"]
    return by_arch[0] if len(by_arch) == 1 else None


#: NVML names of the simulated boards, so the meter finds the generation as on real hardware.
BOARD_NAMES = {
    "pascal": "Tesla P100-PCIE-16GB",
    "volta": "Tesla V100-SXM2-32GB",
    "turing": "Tesla T4",
    "a100": "NVIDIA A100-SXM4-80GB",
    "hopper": "NVIDIA H100 80GB HBM3",
    "gh200": "NVIDIA GH200 480GB",
}
