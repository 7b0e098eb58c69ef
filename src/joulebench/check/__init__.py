"""`joulebench check`: can this machine's energy numbers be trusted? One run before a study.

Each check is a row with a status (pass / warn / fail / skip), a value, its target and a
sentence saying what it means; the worst status of all rows is the verdict. The report goes
to results/check/<device>.json, and profile rows record the id and verdict of their device's
latest report, whose measured sensor refresh period sizes the protocol's windows.

- `command`: the command (`run_check`): the device's backend says how to drive and read it;
- `gpu`: a GPU's checks on a *target* (`targets`: a torch GPU on real time, the simulator's
  on simulated time: the same code runs on both): idle, the sensor's square-wave fit,
  counter vs trace, repeat CV, zeros vs random, Zeus;
- `environment`: the GPU's settings and state (its backend's DeviceState) as rows;
- `cpu`: the CPU's meter, RAPL's update rate and wraparound, idle and repeat CV;
- `rows`: what both share (settings, idle, repeat and input rows, grading);
- `sensor_fit`: the refresh period and averaging window fitted from the square wave (SC24);
  further fits of the device's physics go beside it, one module each;
- `report`: the rows, the JSON layout, where reports are kept and how a profile finds one.

Docs: docs/measurement.md#how-much-to-trust-a-number. The map of the package: docs/design.md.
"""
