"""One simulated GPU, wired up: clock, true power, sensor, fake pynvml and the real NVML meter.

rig = simulated_gpu("hopper", phase_s=0.037, seed=1)
meter = rig.meter()                 # joulebench.core.meters.NvmlMeter, on simulated time
workload = Workload(period_s=0.1)
measure(lambda: rig.gpu.batch(workload), rig.gpu.sync, meter,
        images_per_step=workload.images_per_batch, clock=rig.clock, sleep=rig.gpu.sleep)
"""

from __future__ import annotations

from dataclasses import dataclass

from joulebench.core.meters.nvidia_sensors import BOARD_NAMES, GENERATIONS, SensorSpec
from joulebench.core.meters.nvml import DEFAULT_INTERVAL_S, NvmlMeter
from joulebench.sim.clock import SimClock
from joulebench.sim.fake_pynvml import SimBoard, SimNvml
from joulebench.sim.ramp import ClockRamp
from joulebench.sim.sensor import SimSensor
from joulebench.sim.tail import Tail
from joulebench.sim.thermal import Thermal
from joulebench.sim.workload import SimGpu, Workload


@dataclass
class SimRig:
    clock: SimClock
    gpu: SimGpu
    sensor: SimSensor
    board: SimBoard
    nvml: SimNvml

    @property
    def spec(self) -> SensorSpec:
        return self.sensor.spec

    def meter(self, sample_interval_s: float | None = DEFAULT_INTERVAL_S, **kw) -> NvmlMeter:
        """The real NVML meter on this board, its sampler driven by the simulated clock."""
        return NvmlMeter(
            0,
            nvml=self.nvml,
            uuid=self.board.uuid,
            sample_interval_s=sample_interval_s,
            clock=self.clock,
            timer=self.clock.every,
            has_cuda_context=lambda: True,
            **kw,
        )


def simulated_gpu(
    generation: str = "hopper",
    *,
    phase_s: float = 0.0,
    seed: int = 0,
    idle_w: float = 60.0,
    tau_s: float = 0.003,
    noise_w: float = 0.3,
    counter: str = "sensor",
    start_s: float = 1000.0,
    board: dict | None = None,
    sensor: dict | None = None,
    thermal: Thermal | None = None,
    tail: Tail | None = None,
    ramp: ClockRamp | None = None,
    silicon: float = 1.0,
    nominal_idle_w: float | None = None,
) -> SimRig:
    """A board of `generation` (a key of nvidia_sensors.GENERATIONS).

    `phase_s`: when the sensor refreshes, relative to `start_s`, when the simulation starts.
    `board`: SimBoard settings (other_pids, mig_mode, power_limit_mw, ...); `sensor`: SimSensor
    settings (refresh_s, window_s to try sensors not in the table). `thermal`: heat
    (joulebench.sim.thermal; None: power independent of temperature, as before).
    `tail`: what the board draws after work stops (joulebench.sim.tail; None: idle
    power at once). `ramp`: clocks that rise slowly under load and fall at idle
    (joulebench.sim.ramp; None: the work's power at once). A sensor reporting late:
    `sensor={"delay_s": ...}`; a board of its own (sim.boards): `sensor={"gain": ...,
    "offset_w": ...}`, `silicon` and `idle_w`.
    """
    if generation not in GENERATIONS:
        raise ValueError(f"unknown generation {generation!r}; known: {sorted(GENERATIONS)}")
    spec = GENERATIONS[generation]
    clock = SimClock(start_s)
    gpu = SimGpu(
        clock,
        idle_w=idle_w,
        tau_s=tau_s,
        thermal=thermal,
        tail=tail,
        ramp=ramp,
        seed=seed,
        silicon=silicon,
        nominal_idle_w=nominal_idle_w,
    )
    sim_sensor = SimSensor(
        gpu.signal,
        spec,
        clock,
        phase_s=start_s + phase_s,
        noise_w=noise_w,
        counter=counter,
        seed=seed,
        **(sensor or {}),
    )
    sim_board = SimBoard(gpu, sim_sensor, name=BOARD_NAMES[generation], **(board or {}))
    return SimRig(clock, gpu, sim_sensor, sim_board, SimNvml([sim_board], clock=clock))


class SimCheckTarget:
    """What `joulebench check` drives (see joulebench.core.targets), on a simulated GPU.

    The standard load is back-to-back matmul steps of `step_s` at `busy_w`; zeros as input
    draw less dynamic power (SimGpu.zeros_dynamic).
    """

    cuda_index = None  # no CUDA device: Zeus cannot cross-check a simulation

    def __init__(self, rig: SimRig, *, busy_w: float = 300.0, step_s: float = 0.005):
        self.rig, self.busy_w, self.step_s = rig, busy_w, step_s
        self.device = "cuda:0"
        self.clock = rig.clock
        self.sleep = rig.gpu.sleep
        self.timer = rig.clock.every

    def meter(self, **kw) -> NvmlMeter:
        return self.rig.meter(**kw)

    def busy(self, seconds: float, input_kind: str = "random") -> None:
        self.rig.gpu.busy(seconds, self.busy_w, input_kind)

    def step(self, input_kind: str = "random"):
        workload = Workload(
            period_s=self.step_s,
            duty=1.0,
            busy_w=self.busy_w,
            images_per_batch=1,
            input_kind=input_kind,
        )
        return lambda: self.rig.gpu.batch(workload)

    def sync(self) -> None:
        self.rig.gpu.sync()
