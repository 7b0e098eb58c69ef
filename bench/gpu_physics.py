"""For a session lent an NVIDIA GPU: the board's physics, read raw through NVML.

What the simulator assumes (issue 23: heat; issue 25: power limits and locked clocks) is
read here from a real GPU, so the assumptions can be set beside a measurement:

- heating and cooling: temperature and power sampled at ~20 Hz through a memory-bound load
  (below the power limit, so leakage shows as power rising with temperature) and the idle
  after it (the thermal time constant is fitted from these traces afterwards);
- power limits: the allowed range, then a bf16 matrix-product load at fractions of the
  default limit (energy counter, products per second), each limit read back; the previous
  limit is restored in `finally` and by an atexit hook;
- locked clocks: a load at a locked SM clock, then the lock reset.

Nothing here is a joulebench measurement (no protocol): it is raw material, written to
--out as physics.csv (samples) and physics.json (what was set, read back and refused).

    python bench/gpu_physics.py --out $OUT [--device-index 0] [--heat-s 50] [--cool-s 30]
"""

from __future__ import annotations

import argparse
import atexit
import csv
import json
import threading
import time
from pathlib import Path

FIELDS = ("t_s", "phase", "power_w", "temperature_c", "sm_clock_mhz", "energy_mj", "limit_w")


class Sampler:
    """Reads power, temperature, SM clock and the energy counter in a thread."""

    def __init__(self, nvml, handle, interval_s: float = 0.05):
        self.nvml, self.handle, self.interval_s = nvml, handle, interval_s
        self.rows: list[dict] = []
        self.phase = "start"
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> dict:
        n, h = self.nvml, self.handle
        return {
            "t_s": round(time.perf_counter() - self.t0, 4),
            "phase": self.phase,
            "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "temperature_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
            "energy_mj": n.nvmlDeviceGetTotalEnergyConsumption(h),
            "limit_w": n.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
        }

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rows.append(self.read())
            time.sleep(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_for(duration_s: float, step, sync) -> int:
    """Run `step` back to back for `duration_s`; returns how many steps ran."""
    count, end = 0, time.perf_counter() + duration_s
    while time.perf_counter() < end:
        for _ in range(4):
            step()
        sync()
        count += 4
    return count


def energy_j(sampler: Sampler, phase: str) -> float:
    rows = [r for r in sampler.rows if r["phase"] == phase]
    if len(rows) < 2:
        return float("nan")
    return (rows[-1]["energy_mj"] - rows[0]["energy_mj"]) / 1000.0


def limits(nvml, handle, sampler, load, sync, fractions, load_s) -> list[dict]:
    """The load at each fraction of the default limit; the previous limit is restored."""
    low_mw, high_mw = nvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)
    default_mw = nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle)
    previous_mw = nvml.nvmlDeviceGetPowerManagementLimit(handle)
    atexit.register(_restore_limit, nvml, handle, previous_mw)
    out = [{"min_w": low_mw / 1e3, "max_w": high_mw / 1e3, "default_w": default_mw / 1e3}]
    try:
        for fraction in fractions:
            wanted_mw = int(max(low_mw, min(high_mw, fraction * default_mw)))
            row = {"fraction": fraction, "requested_w": wanted_mw / 1e3}
            try:
                nvml.nvmlDeviceSetPowerManagementLimit(handle, wanted_mw)
            except nvml.NVMLError as err:
                row["refused"] = f"{type(err).__name__}: {err}"
                out.append(row)
                break
            row["read_back_w"] = nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1e3
            sampler.phase = f"limit-{fraction}"
            row["steps"] = run_for(load_s, load, sync)
            row["energy_j"] = energy_j(sampler, sampler.phase)
            out.append(row)
    finally:
        _restore_limit(nvml, handle, previous_mw)
        out.append({"restored_w": nvml.nvmlDeviceGetPowerManagementLimit(handle) / 1e3})
    return out


def _restore_limit(nvml, handle, previous_mw) -> None:
    try:
        if nvml.nvmlDeviceGetPowerManagementLimit(handle) != previous_mw:
            nvml.nvmlDeviceSetPowerManagementLimit(handle, previous_mw)
    except nvml.NVMLError:
        pass


def locked_clock(nvml, handle, sampler, load, sync, clock_mhz, load_s) -> dict:
    """The load at a locked SM clock; the lock is reset afterwards."""
    row = {"sm_clock_mhz": clock_mhz}
    atexit.register(_reset_clocks, nvml, handle)
    try:
        nvml.nvmlDeviceSetGpuLockedClocks(handle, clock_mhz, clock_mhz)
    except nvml.NVMLError as err:
        row["refused"] = f"{type(err).__name__}: {err}"
        return row
    try:
        sampler.phase = f"clock-{clock_mhz}"
        row["steps"] = run_for(load_s, load, sync)
        row["energy_j"] = energy_j(sampler, sampler.phase)
    finally:
        _reset_clocks(nvml, handle)
    return row


def _reset_clocks(nvml, handle) -> None:
    try:
        nvml.nvmlDeviceResetGpuLockedClocks(handle)
    except nvml.NVMLError:
        pass


def main() -> int:
    import pynvml as nvml
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--device-index", type=int, default=0)
    p.add_argument("--heat-s", type=float, default=50.0)
    p.add_argument("--cool-s", type=float, default=30.0)
    p.add_argument("--load-s", type=float, default=8.0)
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(args.device_index)
    dev = torch.device(f"cuda:{args.device_index}")
    sync = torch.cuda.synchronize
    big = torch.empty(2**30, dtype=torch.float32, device=dev).uniform_()  # 4 GiB
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    report = {"name": nvml.nvmlDeviceGetName(handle), "driver": nvml.nvmlSystemGetDriverVersion()}

    def memory_load():
        big.mul_(1.0000001)

    def matmul_load():
        torch.mm(a, a)

    with Sampler(nvml, handle) as sampler:
        sampler.phase = "idle"
        time.sleep(5.0)
        sampler.phase = "heat-memory"
        report["heat_steps"] = run_for(args.heat_s, memory_load, sync)
        sampler.phase = "cool"
        time.sleep(args.cool_s)
        sampler.phase = "matmul-default"
        report["matmul_default_steps"] = run_for(args.load_s, matmul_load, sync)
        report["matmul_default_energy_j"] = energy_j(sampler, "matmul-default")
        report["limits"] = limits(
            nvml, handle, sampler, matmul_load, sync, (0.8, 0.6, 0.5), args.load_s
        )
        report["locked_clock"] = locked_clock(
            nvml, handle, sampler, matmul_load, sync, 1410, args.load_s
        )
        sampler.phase = "end"
        time.sleep(1.0)
    with open(out / "physics.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(sampler.rows)
    (out / "physics.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
