"""Simulated NVIDIA GPUs (`sim:<gpu>`: sim:h100, sim:a100, ...), for tests and benches.

The simulator's device kind: production code never imports it; the registry loads it
by name (BACKEND_MODULES). A job's model runs on the CPU while a board on the wall
clock (sim.wall, one per device label and process) draws busy power during each step
and idle power between, read through a fake NVML by the real NvmlMeter (meter `nvml:sim`).
`joulebench check --device sim:h100` drives the same checks as on a GPU, on a board of that
generation in simulated time (sim.rig): the simulated proof of the check itself.
Rows say `is_simulated`, flag `simulated`, and are never scored; `joulebench devices` lists
these devices only with --sim. A simulated GPU runs natively what its generation's real GPU
does (its compute capability), though its model runs on the CPU.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cached_property

from joulebench.core.backends.base import (
    Backend,
    DeviceIdentity,
    DeviceInfo,
    DeviceState,
    Libraries,
    NativePrecisions,
)
from joulebench.core.backends.bound import BoundDevice, bound_device
from joulebench.core.backends.cuda import NvmlKnobs, cuda_native, nvml_state
from joulebench.core.meters.nvidia_sensors import BOARD_NAMES as BOARD
from joulebench.core.meters.nvidia_sensors import GENERATIONS
from joulebench.sim.boards import NOMINAL, BoardVariation, drawn
from joulebench.sim.faults import sim_fault
from joulebench.sim.rig import SimCheckTarget, simulated_gpu
from joulebench.sim.tail import DEVICE_TAIL
from joulebench.sim.thermal import THERMAL
from joulebench.sim.wall import IDLE_W, POWER_LIMITS_W, WallSimGpu, sim_uuid

# sim:h100, or sim:h100:1 (board 1 of a pool of simulated H100s: its own UUID)
SIM_PATTERN = r"sim:[a-z0-9]+(:[0-9]+)?"
# the `sim:` spellings people type, beside the generations' own names
ALIASES = {"h100": "hopper", "h200": "hopper", "v100": "volta", "p100": "pascal", "t4": "turing"}
# The compute capability of each generation's board (BOARD_NAMES: P100, V100, T4, A100, H100).
CAPABILITY = {
    "pascal": (6, 0),
    "volta": (7, 0),
    "turing": (7, 5),
    "a100": (8, 0),
    "hopper": (9, 0),
    "gh200": (9, 0),
}
METER_OPTIONS = ("sample_interval_s", "refresh_s")  # what the board's NVML meter takes
CHECK_PHASE_S = 0.0123  # where the check's board refreshes relative to its load
_BOARDS: dict[str, WallSimGpu] = {}


def sim_generation(device: str) -> str:
    """'sim:h100' -> 'hopper'; ValueError naming the known ones otherwise."""
    name = device.split(":")[1] if re.fullmatch(SIM_PATTERN, device) else ""
    name = ALIASES.get(name, name)
    if name not in GENERATIONS or name not in BOARD:
        known = sorted({*BOARD, *ALIASES})
        raise ValueError(f"unknown simulated GPU {device!r}; use sim:<one of {known}>")
    return name


def board_index(device: str) -> int | None:
    """'sim:h100:1' -> 1: which board of a pool; None for 'sim:h100'."""
    parts = device.split(":")
    return int(parts[2]) if len(parts) == 3 else None


def board_key(device: str, label: str) -> str:
    """What names a board (its UUID): a pool's board by its device string, so that every
    job and the workflow agree on it; else the label, as before pools."""
    return device if board_index(device) is not None else label


def board_variation(device: str, key: str) -> BoardVariation:
    """A pool's board (`sim:h100:1`) has its own sensor gain and offset and its own silicon,
    drawn from its UUID (sim.boards); a lone `sim:h100` is the nominal board."""
    if board_index(device) is None:
        return NOMINAL
    limit_w = POWER_LIMITS_W.get(sim_generation(device), (700.0,))[0]
    return drawn(sim_uuid(key), limit_w)


def wall_sim_gpu(device: str, label: str) -> WallSimGpu:
    """The process's board for a `sim:` device (one per board_key: a pool's board is one
    whatever label reads it, as a GPU is; after a failover the label names another board),
    failing as the chaos hook says (sim.faults, JOULEBENCH_SIM_FAULT)."""
    key = board_key(device, label)
    if key not in _BOARDS:
        board = WallSimGpu(sim_generation(device), key, variation=board_variation(device, key))
        board.fault = sim_fault(board_index(device), board.board.uuid)
        _BOARDS[key] = board
    return _BOARDS[key]


class DeviceCheckTarget(SimCheckTarget):
    """The simulator's check target as this device's: its report is the device's
    (results/check/simh100.json), its meter named as the device's rows name it (`nvml:sim`)."""

    def __init__(self, rig, device: str):
        super().__init__(rig)
        self.device = device

    def meter(self, **kw):
        meter = super().meter(**kw)
        meter.name = "nvml:sim"
        return meter


def sim_name(device: str) -> str:
    """'sim:h100' -> 'NVIDIA H100 ... (simulated)': the product name rows record."""
    return f"{BOARD[sim_generation(device)]} (simulated)"


class SimDevice(BoundDevice):
    """A simulated GPU, bound: its board on the wall clock (one per board_key and process,
    made on first use), read and set through the board's fake NVML; its model on the CPU."""

    @cached_property
    def board(self) -> WallSimGpu:
        return wall_sim_gpu(self.device, self.label or self.device)

    @cached_property
    def compute(self) -> BoundDevice:
        return bound_device("cpu", self.label, self.libs)

    def name(self) -> str:
        return sim_name(self.device)

    def native_precisions(self) -> NativePrecisions | None:
        return cuda_native(*CAPABILITY[sim_generation(self.device)])

    def build_meter(self, prefer: str | None, **options):
        kept = {k: v for k, v in options.items() if k in METER_OPTIONS}
        return self.board.meter(**kept), []

    def wrap_step(self, step: Callable[[], object]) -> Callable:
        """The board draws busy power while the step runs."""
        return self.board.run(step)

    def busy_fraction(self, step, sync, step_s: float) -> float:
        """What the board's host model made of the step (sim.host), as a trace would."""
        fraction = getattr(step, "gpu_busy_fraction", None)
        return float(fraction) if fraction is not None else math.nan

    def check_target(self, prefer: str | None = None):
        """A board of the device's generation in simulated time, driven as a GPU is, with
        its generation's heat (sim.thermal.THERMAL) and the devices' power tail
        (sim.tail.DEVICE_TAIL), which the check's heat and tail rows measure. With the
        study's label, the board a job on it draws from (its UUID, name and limits): the
        check of that very board (measure.calibration)."""
        self.check_prefer(prefer)
        generation = sim_generation(self.device)
        variation = self.board.variation if self.label else NOMINAL
        rig = simulated_gpu(
            generation,
            phase_s=CHECK_PHASE_S,
            thermal=THERMAL[generation],
            tail=DEVICE_TAIL,
            board=_same_board(self.board) if self.label else None,
            idle_w=IDLE_W * variation.idle_scale,
            sensor={"gain": variation.gain, "offset_w": variation.offset_w},
            silicon=variation.silicon,
            nominal_idle_w=IDLE_W,
        )
        return DeviceCheckTarget(rig, self.device)

    def state(self, meter) -> DeviceState:
        return nvml_state(meter)

    def knob_control(self) -> NvmlKnobs:
        """The simulated board's NVML, which sets and reads its limit and clocks."""
        return NvmlKnobs(self.board.meter())


class SimBackend(Backend):
    """A simulated GPU: NVML's meter over the sensor simulator, the model on the CPU."""

    kind = "sim"
    pattern = SIM_PATTERN
    spellings = ("sim:<gpu>",)
    meters = ("nvml",)
    simulated = True
    device_class = SimDevice

    def discover(self, libs: Libraries) -> tuple[list[DeviceIdentity], str]:
        """One simulated board per generation the simulator knows."""
        generations = sorted(set(BOARD) & set(GENERATIONS))
        found = [
            DeviceIdentity(f"sim:{g}", sim_name(f"sim:{g}"), uuid=sim_uuid(f"sim-{g}"))
            for g in generations
        ]
        return found, ""

    def label(self, identity: DeviceIdentity) -> str:
        return identity.device.replace(":", "-")

    def sibling(self, device: str, ordinal: int) -> str:
        """Board `ordinal` of a pool of simulated GPUs like `device` (sim:h100:1)."""
        return ":".join(device.split(":")[:2] + [str(ordinal)])

    def pool_member(self, device: str, libs: Libraries) -> DeviceIdentity:
        """A board of a pool: its UUID is its device string's (sim:h100:1)."""
        key = board_key(device, device)
        index = board_index(device)
        return DeviceIdentity(
            device, sim_name(device), uuid=sim_uuid(key), index=index, serial=f"SIM-{key}"
        )

    def describe(
        self, label: str, device: str, libs: Libraries, meter_options: dict | None = None
    ) -> DeviceInfo:
        info = DeviceInfo(label, device)
        try:
            info.name = sim_name(device)
        except ValueError as err:
            info.problems.append(f"devices: '{label}' is {device}, but {err}")
            return info
        info.meter = "nvml:sim"
        info.not_better = ["SIM: a simulated GPU: the model runs on the CPU; never scored"]
        return info


def _same_board(wall_gpu: WallSimGpu) -> dict:
    """SimBoard settings that make a check's board the job's (wall_sim_gpu's) as NVML sees it."""
    wall = wall_gpu.board
    keep = ("uuid", "default_power_limit_mw", "power_limit_mw", "power_limit_range_mw")
    return {key: getattr(wall, key) for key in keep}


BACKEND = SimBackend()
