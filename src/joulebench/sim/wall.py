"""A simulated GPU on the wall clock, driven by the job's actual work (devices `sim:<gpu>`).

The model runs on the CPU; while a step runs the simulated board draws `busy_w`, between
steps `idle_w` (and its power tail after work, sim.tail.DEVICE_TAIL), so its true power
follows what the job really does, in real time. Its sensor
(SimSensor: the generation's refresh and averaging window) is read through the fake pynvml by
the real NvmlMeter, matched by the board's UUID, with the meter's own sampler thread. So a
`sim:` device exercises everything a GPU job does (its measuring slot, pinning by UUID, the
NVML meter, idle and profile rows) on a machine without a GPU: for tests and benches.

Every row it produces says so (`is_simulated`, meter `nvml:sim`, device name `... (simulated)`),
and the score never ranks it (analysis.score). The device strings and one board per label
are the simulated backend's (joulebench.sim.backend).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from joulebench.core.meters.nvidia_sensors import BOARD_NAMES as BOARD
from joulebench.core.meters.nvidia_sensors import GENERATIONS
from joulebench.core.meters.nvml import NvmlMeter
from joulebench.sim.boards import NOMINAL, BoardVariation
from joulebench.sim.fake_pynvml import SimBoard, SimNvml
from joulebench.sim.faults import SimFault, step_error
from joulebench.sim.host import count_step
from joulebench.sim.sensor import SimSensor
from joulebench.sim.tail import DEVICE_TAIL
from joulebench.sim.thermal import THERMAL
from joulebench.sim.workload import SimGpu

IDLE_W = 60.0  # the simulated board's idle power
BUSY_W = 300.0  # its power while a step runs
# A board's power limit as NVML reports it on the product the simulated board is named after
# (BOARD): (default, least, most) W, the default and nvmlDeviceGetPowerManagementLimitConstraints.
# So a relative cap means on each what it would on the real board: 0.5 of an A100's 400 W
# binds a step's 300 W, 0.5 of an H100's 700 W does not. Boards not listed (T4, GH200) keep
# SimBoard's, an H100 SXM's.
POWER_LIMITS_W = {
    "pascal": (250.0, 125.0, 250.0),  # Tesla P100 PCIe 16 GB
    "volta": (300.0, 150.0, 300.0),  # Tesla V100 SXM2 32 GB
    "a100": (400.0, 100.0, 400.0),  # A100 SXM4 80 GB
    "hopper": (700.0, 200.0, 700.0),  # H100 SXM 80 GB
}


def sim_uuid(label: str) -> str:
    """A stable UUID per device label, so each simulated GPU of a study is its own board."""
    h = hashlib.sha1(label.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _settings_path(uuid: str):
    from joulebench.core.knobs import state_dir

    return state_dir() / "sim-boards" / f"{uuid}.json"


def load_settings(board: SimBoard) -> None:
    """The power limit and locked clock this simulated board was left with (by any process)."""
    try:
        saved = json.loads(_settings_path(board.uuid).read_text())
    except (FileNotFoundError, ValueError):
        return
    board.set_power_limit_mw(int(saved.get("power_limit_mw", board.power_limit_mw)))
    board.lock_sm_clock_mhz(saved.get("locked_sm_clock_mhz"))


def save_settings(board: SimBoard) -> None:
    """Keep the board's settings where the next process finds them, as a real board would."""
    from joulebench.table_io import atomic_write

    text = json.dumps(
        {"power_limit_mw": board.power_limit_mw, "locked_sm_clock_mhz": board.locked_sm_clock_mhz}
    )
    atomic_write(_settings_path(board.uuid), lambda tmp: Path(tmp).write_text(text))


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
        variation: BoardVariation = NOMINAL,
    ):
        self.generation = generation  # a key of nvidia_sensors.GENERATIONS and BOARD
        self.variation = variation  # this board's own sensor and silicon (sim.boards)
        idle_w = float(idle_w) * variation.idle_scale
        self.busy_w, self.idle_w = float(busy_w), idle_w
        self.lock = threading.RLock()  # the meter's sampler thread reads while we work
        self.clock = _WallClock(clock)
        # the generation's heat, as the check's board has it (sim.backend.check_target)
        self.gpu = _WallGpu(
            self.clock,
            idle_w=idle_w,
            thermal=THERMAL[generation],
            tail=DEVICE_TAIL,
            seed=seed,
            silicon=variation.silicon,
            nominal_idle_w=float(IDLE_W),
        )
        self.gpu.owner = self
        # the sensor's "now" is where the true power has been extended to (see catch_up)
        self.sensor = _WallSensor(
            self.gpu.signal,
            GENERATIONS[self.generation],
            lambda: self.gpu.signal.end_s,
            phase_s=self.clock(),
            seed=seed,
            gain=variation.gain,
            offset_w=variation.offset_w,
        )
        self.sensor.owner = self
        self._level_w = self.idle_w
        name = f"{BOARD[self.generation]} (simulated)"
        limits = {}
        if generation in POWER_LIMITS_W:
            default_w, low_w, high_w = POWER_LIMITS_W[generation]
            limits = {
                "default_power_limit_mw": round(default_w * 1000),
                "power_limit_mw": round(default_w * 1000),
                "power_limit_range_mw": (round(low_w * 1000), round(high_w * 1000)),
            }
        self.board = SimBoard(self.gpu, self.sensor, name=name, uuid=sim_uuid(label), **limits)
        self.board.power_limit_mw = self.board.default_power_limit_mw
        load_settings(self.board)  # a board keeps its settings from one process to the next
        self.board.on_change = save_settings
        self.nvml = SimNvml([self.board], clock=self.clock)
        self.fault: SimFault | None = None  # how it fails, and when (sim.faults)
        self.configs_run = 0  # the configurations `run` was given in this process

    @property
    def name(self) -> str:
        return self.board.name

    def catch_up(self) -> None:
        """Extend the true power up to now at the current level."""
        with self.lock:
            gap_s = self.clock() - self.gpu.signal.end_s
            if gap_s > 0:
                self.gpu.hold_level(gap_s, self._level_w)

    def _set(self, level_w: float, clock_factor: float) -> None:
        with self.lock:
            self.catch_up()
            self._level_w = level_w
            locked = self.board.locked_sm_clock_mhz  # a locked clock holds, busy or idle
            self.gpu.sm_clock_mhz = locked or self.gpu.max_sm_clock_mhz * clock_factor

    def busy_level(self) -> tuple[float, float]:
        """(power, clock factor) of a step under the board's power limit, locked clock and
        heat: SimGpu's throttle (dynamic power with the cube of the clock)."""
        power_w, _, f = self.gpu._throttled(self.gpu.busy_power_w(self.busy_w), 1.0)
        return power_w, f

    def run(self, step: Callable[[], object]) -> Callable[[], object]:
        """`step`, with the board working while it runs: busy for the share of it its GPU
        would execute kernels (sim.host, counted on the first call; the returned step's
        `gpu_busy_fraction` afterwards), waiting on the host's launches at raised clocks
        for the rest. At a clock factor f < 1 (a power limit or a locked clock) its kernels
        take 1/f as long: the step's own time on the CPU is the full-clock time, and the
        board stays busy for the rest at the lower power. A board given a fault fails from
        its configuration `fault.after` + 1 on (sim.faults)."""
        self.configs_run += 1
        failing = self.fault is not None and self.configs_run > self.fault.after

        def busy_step():
            if failing:
                self.fail()
            power_w, f = self.busy_level()
            self._set(self.step_level_w(power_w, busy_step.gpu_busy_fraction), f)
            started = time.perf_counter()
            try:
                if busy_step.gpu_busy_fraction is None:
                    out, work = count_step(step)
                    busy_step.gpu_busy_fraction = work.busy_fraction(self.generation)
                else:
                    out = step()
                if f < 1.0:
                    time.sleep((time.perf_counter() - started) * (1.0 / f - 1.0))
                return out
            finally:
                self._set(self.idle_w, 0.3)

        busy_step.gpu_busy_fraction = None
        return busy_step

    def fail(self) -> None:
        """The board's fault strikes: NVML loses it, or the step raises CUDA's error."""
        if self.fault.kind == "nvml":
            self.board.lost = True
        else:
            raise step_error(self.fault.kind)

    def step_level_w(self, busy_w: float, busy_fraction: float | None) -> float:
        """The board's mean power over a step whose GPU is busy `busy_fraction` of it (all
        of it before that is known): kernels at `busy_w`, the launch gaps between them (far
        shorter than the board's response) at idle plus its tail's excess."""
        if busy_fraction is None or not busy_fraction < 1.0:
            return busy_w
        tail = self.gpu.tail
        waiting_w = self.idle_w + (tail.excess_w(busy_w, self.idle_w) if tail else 0.0)
        return busy_fraction * busy_w + (1.0 - busy_fraction) * waiting_w

    def meter(self, **kw) -> NvmlMeter:
        """The real NVML meter on this board, found by its UUID, named `nvml:sim`."""
        meter = NvmlMeter(
            0, nvml=self.nvml, uuid=self.board.uuid, has_cuda_context=lambda: True, **kw
        )
        meter.name = "nvml:sim"
        return meter
