"""A simulated GPU on the wall clock, driven by the job's actual work (devices `sim:<gpu>`).

The model runs on the CPU; while a step runs the simulated board draws `busy_w`, between
steps `idle_w`, so its true power follows what the job really does, in real time. Its sensor
(SimSensor: the generation's refresh and averaging window) is read through the fake pynvml by
the real NvmlMeter, matched by the board's UUID, with the meter's own sampler thread. So a
`sim:` device exercises everything a GPU job does (its measuring slot, pinning by UUID, the
NVML meter, idle and profile rows) on a machine without a GPU: for tests and benches.

Every row it produces says so (`is_simulated`, meter `nvml:sim`, device name `... (simulated)`),
and the score never ranks it (analysis.score). The device strings and one board per label
are the simulated backend's (joulebench.measure.backends.sim).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

from joulebench.measure.meters.nvidia_sensors import BOARD_NAMES as BOARD
from joulebench.measure.meters.nvidia_sensors import GENERATIONS
from joulebench.measure.meters.nvml import NvmlMeter
from joulebench.measure.sim.fake_pynvml import SimBoard, SimNvml
from joulebench.measure.sim.sensor import SimSensor
from joulebench.measure.sim.thermal import THERMAL
from joulebench.measure.sim.workload import SimGpu

IDLE_W = 60.0  # the simulated board's idle power
BUSY_W = 300.0  # its power while a step runs


def sim_uuid(label: str) -> str:
    """A stable UUID per device label, so each simulated GPU of a study is its own board."""
    h = hashlib.sha1(label.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class _WallClock:
    """Real seconds; SimGpu may ask it to advance, which the wall clock does by itself."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock

    def __call__(self) -> float:
        return self._clock()

    def advance_to(self, t_s: float) -> None:
        pass


class _WallGpu(SimGpu):
    def temperature_c(self) -> float:
        with self.owner.lock:  # the true power up to now, read at the same instant
            self.owner.catch_up()
            if self.thermal is not None:
                return self.temp_c
            t = self.signal.end_s
            start = max(self.signal.start_s, t - 5.0)
            if t - start <= 0:
                return 30.0 + 0.12 * self.idle_w
            return 30.0 + 0.12 * self.signal.energy_j(start, t) / (t - start)


class _WallSensor(SimSensor):
    def _catch_up(self) -> None:
        with self.owner.lock:
            self.owner.catch_up()
            super()._catch_up()


class WallSimGpu:
    """One simulated GPU whose true power is busy_w while `run` runs a step, else idle_w."""

    def __init__(
        self,
        generation: str,
        label: str,
        *,
        busy_w: float = BUSY_W,
        idle_w: float = IDLE_W,
        clock: Callable[[], float] = time.monotonic,
        seed: int = 0,
    ):
        self.generation = generation  # a key of nvidia_sensors.GENERATIONS and BOARD
        self.busy_w, self.idle_w = float(busy_w), float(idle_w)
        self.lock = threading.RLock()  # the meter's sampler thread reads while we work
        self.clock = _WallClock(clock)
        # the generation's heat, as the check's board has it (backends.sim.check_target)
        self.gpu = _WallGpu(self.clock, idle_w=idle_w, thermal=THERMAL[generation], seed=seed)
        self.gpu.owner = self
        # the sensor's "now" is where the true power has been extended to (see catch_up)
        self.sensor = _WallSensor(
            self.gpu.signal,
            GENERATIONS[self.generation],
            lambda: self.gpu.signal.end_s,
            phase_s=self.clock(),
            seed=seed,
        )
        self.sensor.owner = self
        self._level_w = self.idle_w
        name = f"{BOARD[self.generation]} (simulated)"
        self.board = SimBoard(self.gpu, self.sensor, name=name, uuid=sim_uuid(label))
        self.board.power_limit_mw = self.board.default_power_limit_mw
        self.nvml = SimNvml([self.board], clock=self.clock)

    @property
    def name(self) -> str:
        return self.board.name

    def catch_up(self) -> None:
        """Extend the true power up to now at the current level."""
        with self.lock:
            gap_s = self.clock() - self.gpu.signal.end_s
            if gap_s > 0:
                self.gpu.hold_level(gap_s, self._level_w)

    def _set(self, level_w: float) -> None:
        with self.lock:
            self.catch_up()
            self._level_w = level_w
            busy = level_w > self.idle_w
            self.gpu.sm_clock_mhz = self.gpu.max_sm_clock_mhz * (1.0 if busy else 0.3)

    def run(self, step: Callable[[], object]) -> Callable[[], object]:
        """`step`, with the board busy while it runs."""

        def busy_step():
            self._set(self.busy_w)
            try:
                return step()
            finally:
                self._set(self.idle_w)

        return busy_step

    def meter(self, **kw) -> NvmlMeter:
        """The real NVML meter on this board, found by its UUID, named `nvml:sim`."""
        meter = NvmlMeter(
            0, nvml=self.nvml, uuid=self.board.uuid, has_cuda_context=lambda: True, **kw
        )
        meter.name = "nvml:sim"
        return meter
