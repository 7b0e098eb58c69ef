"""The measuring core: energy and time per image (and per training sample) over windows.

`meters/` reads energy over a window (NVML, AMD SMI, RAPL, or a labelled estimate);
`backends/` gives each kind of device (cpu, cuda, rocm, simulated) its one module; `protocol`
decides when windows open and close and knows nothing of torch; `heat` and `tail` the
board's physics it corrects for; `methods`, `runtimes`, `arithmetic`, `knobs`,
`cuda_graphs`, `trt_native` and `train` say how a model runs; `quiet` and `provenance` what
the host was doing and on what; `targets` the check's standard load. The jobs that run it
are `joulebench.jobs`; `sim` simulates GPUs to prove the protocol and `check` tests a
machine before a study (docs/profiling.md, docs/protocol.md, docs/measurement.md,
docs/devices.md); every module, and the map of the package: docs/design.md.
"""
