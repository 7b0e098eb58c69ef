"""Jobs: a measuring core's work run as processes, supervised, and planned.

`profile` is one job (all methods x batch sizes x phases of one model on one device) made
from a typed `job_spec`, `idle` the device's baseline; `supervise` and `job_runner` run a
job's workers and turn hangs and deaths into rows (`hangs`), `gpu_failover` and
`gpu_faults` move a job off a failing GPU, `concurrency` counts the measurements at once;
`first_check` and `board_reference` run the check and the reference readings before a GPU's
first job, `calibration` fits a board against an external meter; `adhoc` is
`joulebench profile`, `catalog_job` the catalog stage's workers, `calibrate` and
`config_time` the plan's timings. Below: `core` (measuring), `check` (a device's physics),
`schedule` (devices, slots, leases). The map of the package: docs/design.md.
"""
