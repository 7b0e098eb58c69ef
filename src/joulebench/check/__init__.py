"""`joulebench check`: can this machine's energy numbers be trusted? One run before a study.

Each check is a row with a status (pass / warn / fail / skip), a value, its target and a
sentence saying what it means; the worst status is the verdict. The report goes to
results/check/<device>.json; profile rows record its id and verdict, and its measured sensor
refresh period, heat and power tail size and correct the protocol's windows. Modules:
`command` (`run_check`), `gpu` (a GPU's checks on a *target*, `targets`: a torch GPU on real
time or the simulator's on simulated time, the same code), `environment`, `cpu` (RAPL),
`rows` (what both share), `sensor_fit`, `thermal_fit` and `tail_fit` (the device's physics,
one fit each), `report` (the JSON, where reports are kept and how a profile finds one).
Docs: docs/measurement.md#how-much-to-trust-a-number. The map of the package: docs/design.md.
"""
