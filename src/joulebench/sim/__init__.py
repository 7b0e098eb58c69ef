"""A simulator of NVIDIA's power sensors, to prove the measurement protocol without a GPU.

clock.py      simulated time shared by the workload, the sensor, the meter and the protocol
workload.py   the true board power of a workload (batches, busy/idle, throttling, host pauses)
thermal.py    heat: die temperature, leakage power, clocks at the temperature limit
sensor.py     the sensor per GPU generation: refresh, boxcar window, 1 s average, counter
fake_pynvml.py  a pynvml stand-in over simulated boards, for the real NVML meter
rig.py        one simulated GPU wired up (simulated_gpu)
experiment.py the protocol and a naive reading against the truth (tests, bench, docs)
heat_experiment.py  the protocol against heat and irregular work: the sustained truth, order bias
tail.py, ramp.py  the power tail after work, clocks that ramp up under load and down at idle
wide_experiment.py  the check's fits and the protocol against a physics wider than theirs
"""

from joulebench.sim.clock import SimClock
from joulebench.sim.rig import SimRig, simulated_gpu
from joulebench.sim.workload import PowerSignal, SimGpu, Workload

__all__ = ["PowerSignal", "SimClock", "SimGpu", "SimRig", "Workload", "simulated_gpu"]
