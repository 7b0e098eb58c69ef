"""Stages 3-5, measuring: idle power, then energy and time per image (and per training sample).

`meters/` reads energy over a window (NVML, AMD SMI, RAPL, or a labelled estimate);
`backends/` gives each kind of device (cpu, cuda, rocm, simulated) its one module; `protocol`
decides when windows open and close and knows nothing of torch; `methods`, `runtimes`,
`trt_native` and `train` say how a model runs; `profile` is one job (all methods x batch
sizes x phases of one model on one device), `idle` the device's baseline. Beside it, `sim`
simulates GPUs to prove the protocol and `check` tests a machine before a study. Outputs:
results/idle/, results/profile/, results/check/ (docs/profiling.md, docs/protocol.md,
docs/measurement.md, docs/devices.md); every module, and the map of the package: docs/design.md.
"""
