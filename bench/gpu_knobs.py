"""For a session lent an NVIDIA GPU: the power-limit path of joulebench on a real board.

1. A sweep (resnet50.a1_in1k fp16, batch 64, power_limit [1.0, 0.8, 0.6, 0.5]) through the
   profile job: rows with the read-back limit, the limit restored after it.
2. kill -9 of a job while it measures at 0.5 of the limit: NVML shows the limit it left;
   the next job restores it before it measures (its log says so).
Writes knobs.parquet (the sweep's rows) and knobs.json (limits seen) under --out.

    python bench/gpu_knobs.py --out $OUT
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

STUDY = {  # a study's sections (jobs.job_spec.job_spec)
    "batch_sizes": [64],
    "protocol": {"repeats": 3, "min_repeat_s": 2.0, "warmup_max_s": 10.0},
    "profile": {"idle_pre_s": 1.0},
}
KILLED = """
import sys
from joulebench.jobs.job_spec import job_spec
from joulebench.jobs.profile import ProfileJob, run_profile
study = {**%r, "methods": {"capped": {"precision": sys.argv[2], "power_limit": 0.5}},
         "protocol": {"repeats": 3, "min_repeat_s": 60.0}}
run_profile(ProfileJob(sys.argv[1], "h200", job_spec(sys.argv[3], study)))
"""


def job(model: str, device: str, methods: dict):
    from joulebench.jobs.job_spec import job_spec
    from joulebench.jobs.profile import ProfileJob

    return ProfileJob(model, "h200", job_spec(device, {**STUDY, "methods": methods}))


def limit_w(device: str) -> float:
    """The limit in force now, read through the bound device (a fresh handle)."""
    from joulebench.core.backends import bound_device

    control = bound_device(device, "h200").knob_control()
    try:
        return control.power_limit_w()
    finally:
        control.close()


def main() -> int:
    from joulebench.core.knobs import state_dir
    from joulebench.jobs.profile import run_profile

    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda:0", help="sim:h100 for a dry run")
    p.add_argument("--model", default="resnet50.a1_in1k")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--precision", default="fp16", help="fp32 for a dry run on a CPU")
    args = p.parse_args()
    out, device = Path(args.out), args.device
    STUDY.update(batch_sizes=[args.batch_size])
    seen = {"before_w": limit_w(device)}
    methods = {"fp16": {"precision": args.precision, "power_limit": [1.0, 0.8, 0.6, 0.5]}}
    rows = run_profile(job(args.model, device, methods)).rows
    rows.to_parquet(out / "knobs.parquet")
    seen["after_sweep_w"] = limit_w(device)
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED % (STUDY,), args.model, args.precision, device]
    )
    deadline = time.monotonic() + 120
    while not list((state_dir() / "knobs").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(15.0)  # warm-up and into the first window, at the cap
    seen["while_capped_w"] = limit_w(device)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    seen["after_kill_w"] = limit_w(device)
    seen["record_left"] = [str(x) for x in (state_dir() / "knobs").glob("*.json")]
    lines = []
    next_job = job(args.model, device, {"fp16": {"precision": args.precision}})
    next_rows = run_profile(next_job, log=lines.append).rows
    seen["next_job_log"] = lines
    seen["next_job_status"] = next_rows.status.tolist()
    seen["after_next_job_w"] = limit_w(device)
    seen["records_now"] = [str(x) for x in (state_dir() / "knobs").glob("*.json")]
    (out / "knobs.json").write_text(json.dumps(seen, indent=1))
    print(json.dumps(seen, indent=1))
    print(
        rows[
            [
                "method",
                "status",
                "reason",
                "power_limit_readback_w",
                "energy_per_image_j",
                "energy_per_image_cv",
                "throughput_img_s",
                "power_mean_w",
            ]
        ].to_string()
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
