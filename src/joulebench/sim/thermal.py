"""Heat: the die temperature, leakage power and clocks of a simulated GPU (assumptions).

None of these is published per board: each is an assumption of this simulator, with the
range the proofs sweep (`drawn`, bench/bench_heat.py): on H100-class boards tau_s 20-120 s,
c_per_w 0.05-0.15 C/W (TAU_RANGE, C_PER_W_RANGE: relative to each generation's `THERMAL`),
leakage_per_c 0.3-1 %/C (LEAKAGE_RANGE). The die temperature is a first-order system driven
by board power; every watt is scaled by 1 + leakage_per_c x (T - ref_c), ref_c the idle
steady state; above `limit_c` the clock falls by `throttle_per_c` per degree. Temperature is
held constant over pieces of at most `STEP_S` and stepped exactly over each.
docs/measurement.md#the-protocol-against-simulated-sensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

STEP_S = 0.5  # longest piece over which temperature (and so leakage) is held constant


@dataclass(frozen=True)
class Thermal:
    """One board's heat: time constant, degrees per watt, leakage slope and clock limit."""

    tau_s: float = 60.0  # 20-120 s
    c_per_w: float = 0.10  # 0.05-0.15 C/W above ambient
    ambient_c: float = 28.0  # die temperature at zero power (inlet air or coolant)
    leakage_per_c: float = 0.006  # 0.3-1 % of the power per C above ref_c
    ref_c: float = math.nan  # leakage factor 1 here; NaN: the idle steady state (set by SimGpu)
    limit_c: float = 87.0  # clocks drop above this temperature
    throttle_per_c: float = 0.03  # share of the clock lost per C above limit_c

    def __post_init__(self):
        if not (self.tau_s > 0 and self.c_per_w >= 0 and self.leakage_per_c >= 0):
            raise ValueError(f"need tau_s > 0, c_per_w >= 0, leakage_per_c >= 0: {self}")

    def with_ref(self, idle_w: float) -> Thermal:
        """This model with ref_c at the idle steady state, if it was not given."""
        if math.isfinite(self.ref_c):
            return self
        return replace(self, ref_c=self.steady_c(idle_w))

    def steady_c(self, power_w: float) -> float:
        """Temperature a constant `power_w` settles at."""
        return self.ambient_c + self.c_per_w * power_w

    def leakage_factor(self, temp_c: float) -> float:
        """Board power at `temp_c` over board power at ref_c."""
        return max(0.0, 1.0 + self.leakage_per_c * (temp_c - self.ref_c))

    def clock_factor(self, temp_c: float) -> float:
        """Clock over its maximum: 1 below limit_c, falling linearly above it (floor 0.3)."""
        return max(0.3, 1.0 - self.throttle_per_c * max(0.0, temp_c - self.limit_c))

    def after_c(self, temp_c: float, power_w: float, duration_s: float) -> float:
        """Temperature after `duration_s` at constant `power_w` (exact first-order step)."""
        target = self.steady_c(power_w)
        return target + (temp_c - target) * math.exp(-duration_s / self.tau_s)


#: Each generation's central values (the sweep draws around them; ranges in the module doc).
THERMAL: dict[str, Thermal] = {
    "pascal": Thermal(tau_s=40.0, c_per_w=0.09),
    "volta": Thermal(tau_s=50.0, c_per_w=0.09),
    "turing": Thermal(tau_s=30.0, c_per_w=0.09),  # the simulated boards all draw 60-300 W
    "a100": Thermal(tau_s=60.0, c_per_w=0.09),
    "hopper": Thermal(tau_s=60.0, c_per_w=0.09),
    "gh200": Thermal(tau_s=80.0, c_per_w=0.07),  # liquid-cooled superchip boards
}

#: The ranges the proof sweeps (module doc): tau_s, c_per_w (scaled per generation), leakage.
TAU_RANGE = (0.33, 2.0)  # times the generation's tau_s: 20-120 s on H100
C_PER_W_RANGE = (0.55, 1.65)  # times the generation's c_per_w: 0.05-0.15 C/W on H100
# With these the simulated boards (60 W idle, 300 W busy) stay below limit_c: throttling at
# the temperature limit is modelled and tested, but outside the sweep.
LEAKAGE_RANGE = (0.003, 0.010)


def drawn(generation: str, rng) -> Thermal:
    """A board of `generation` with tau, C/W and leakage drawn from the swept ranges."""
    base = THERMAL[generation]
    return replace(
        base,
        tau_s=base.tau_s * rng.uniform(*TAU_RANGE),
        c_per_w=base.c_per_w * rng.uniform(*C_PER_W_RANGE),
        leakage_per_c=rng.uniform(*LEAKAGE_RANGE),
    )
