"""Stages 3-5, measuring: idle power, then energy and time per image (and per training sample).

`meters/` reads energy (NVML, RAPL, or a labelled estimate) over a window; `protocol` decides
when windows open and close (warm-up, repeats, phase shifts) and knows nothing of torch;
`methods`, `runtimes` (ONNX Runtime), `trt_native` (TensorRT through torch-tensorrt) and
`train` say how a model runs; `profile` is one job (all methods x batch sizes x phases of
one model on one device) and `idle` the device's baseline; `provenance` and `devices` say
where a number was measured. `sim/` simulates NVIDIA's power sensors to prove the protocol,
and `check` (with `check_report`, `check_targets`, `sensor_fit`) tests the user's own
machine before a study. Outputs: results/idle/,
results/profile/, results/check/ (docs/profiling.md, docs/protocol.md, docs/measurement.md).
The map of the package: docs/design.md.
"""
