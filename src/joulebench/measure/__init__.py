"""Stages 3-5, measuring: idle power, then energy and time per image (and per training sample).

`meters/` reads energy (NVML, AMD SMI, RAPL, or a labelled estimate) over a window;
`backends/` gives each kind of device (cpu, cuda, rocm, simulated) its one module: how its
devices are found, named, pinned, synchronised and metered; `protocol` decides when windows
open and close (warm-up, repeats, phase shifts) and knows nothing of torch; `methods`,
`runtimes` (ONNX Runtime), `trt_native` (TensorRT through torch-tensorrt) and `train` say how
a model runs, and `emulation` whether it runs where the device only emulates its
precision; `profile` is one job (all methods x batch sizes x phases of one model on one
device), `config_time` how long a configuration takes, and `idle` the device's baseline;
`provenance` and `devices` say where a number was measured. `sim/` simulates NVIDIA's power
sensors to prove the protocol (only the simulated backend imports it), and `check/` tests
the user's own machine before a study. Outputs: results/idle/, results/profile/,
results/check/ (docs/profiling.md, docs/protocol.md, docs/measurement.md, docs/devices.md).
The map of the package: docs/design.md.

The package is callable: `joulebench.measure(step, images_per_step=8)` is the Python API's
(joulebench.api.measure, docs/api.md), the name the API gives it at the top of the package.
"""

import importlib
import sys
import types


class _CallableStage(types.ModuleType):
    """This package, callable as joulebench.api.measure: found by name on the first call, as
    the API is a layer above the stage (its typed signature: `from joulebench.api import
    measure`)."""

    def __call__(self, *args, **kwargs):
        return importlib.import_module("joulebench.api").measure(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableStage
