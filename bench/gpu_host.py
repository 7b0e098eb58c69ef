"""For a session lent an NVIDIA GPU: how much of a step the GPU is busy (issue 33).

For three small models at batch 1, 8 and 64 (the default method, and fp16-amp), the profile
job's own code builds each configuration (jobs.profile.prepare) and the device's backend
traces a few steps after a short warm-up (Backend.busy_fraction: torch's profiler, as a
profile job does after its windows): `gpu_busy_fraction`, whether it is `host-bound`
(below core.host_bound.HOST_BOUND_BELOW), and the throughput. No energy is read: that is
the profile's. Writes host.csv and host.md to --out.

    PYTHONPATH=src python bench/gpu_host.py --out $OUT [--device cuda]
    PYTHONPATH=src python bench/gpu_host.py --out /tmp/h --device sim:h100   # simulated
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

MODELS = ("resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k", "efficientnet_b0.ra_in1k")
BATCHES = (1, 8, 64)
METHODS = ("fp32", "fp16-amp")
WARMUP_S = 0.5


def one(job, method, batch: int) -> dict:
    import torch

    from joulebench.core.host_bound import HOST_BOUND_BELOW
    from joulebench.jobs.profile import prepare

    device = job.bind_device()
    runner = prepare(job, device, "inference", method, batch)
    step = device.wrap_step(runner.step)
    sync = device.sync

    with torch.inference_mode():
        sync()
        start, n = time.perf_counter(), 0
        while time.perf_counter() - start < WARMUP_S or n < 5:
            step()
            n += 1
        sync()
        step_s = (time.perf_counter() - start) / n
        busy = device.busy_fraction(step, sync, step_s)
    device.free_memory()
    return {
        "model": job.model,
        "method": method.name,
        "batch_size": batch,
        "img_s": batch / step_s,
        "gpu_busy_fraction": busy,
        "host_bound": bool(busy < HOST_BOUND_BELOW),
    }


def main() -> int:
    import pandas as pd

    from joulebench.core.methods import PRESETS, parse_methods
    from joulebench.jobs.job_spec import job_spec
    from joulebench.jobs.profile import ProfileJob

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    methods = parse_methods({m: PRESETS[m] for m in args.methods})
    rows = []
    for model in args.models:
        spec = job_spec(args.device, {"methods": {}, "batch_sizes": args.batches})
        job = ProfileJob(model, args.device.replace(":", ""), spec)
        for method in methods.values():
            for batch in args.batches:
                try:
                    rows.append(one(job, method, batch))
                except Exception as exc:  # one configuration's failure is a line, not the end
                    rows.append({"model": model, "method": method.name, "batch_size": batch,
                                 "error": f"{type(exc).__name__}: {exc}"[:200]})  # fmt: skip
                print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(out / "host.csv", index=False)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    for row in table.itertuples(index=False):
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    (out / "host.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
