"""Benchmark the profile stage's overheads (issue 4 targets).

1. Throughput inside a measurement window vs a bare timed loop with no meter, same model
   and batch (target >= 99%): interleaved, several rounds, median ratio.
2. Share of a profile job's wall time spent inside measurement windows at the default
   settings (target >= 70%): one `joulebench profile-job` process, as the workflow runs it.
3. `--overhead` (issue 24 item 3): on a simulated GPU at the default protocol, each
   configuration's time around its windows (warm-up, pauses, lead-ins, build and the rest)
   against its measuring time (target: overhead <= 25 % of measuring time), in the job's own
   order, so the short warm-up of a method's following batch sizes shows.

    PATH=.venv/bin:$PATH python bench/bench_profile.py [--model resnet18.a1_in1k]
    PYTHONPATH=src .venv/bin/python bench/bench_profile.py --overhead \
        [--model mobilenetv3_small_100.lamb_in1k] [--device sim:h100] [--sizes 1 2 4 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def window_vs_bare(model_name: str, batch_size: int, seconds: float, rounds: int) -> list[float]:
    import timm
    import torch

    from joulebench.core.backends import select_meter
    from joulebench.core.protocol import ProtocolSettings, measure

    model = timm.create_model(model_name).eval()
    x = torch.randn(batch_size, 3, 224, 224)
    settings = ProtocolSettings(repeats=1, min_repeat_s=seconds, pause_s=(0, 0))
    ratios = []
    with torch.inference_mode():
        for _ in range(5):
            model(x)  # warm
        for _ in range(rounds):
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                model(x)
                n += 1
            bare = n * batch_size / (time.perf_counter() - start)
            meter, _ = select_meter("cpu")
            with meter:
                result = measure(
                    lambda: model(x), lambda: None, meter, images_per_step=batch_size,
                    settings=settings,
                )  # fmt: skip
            ratios.append(result.summary["throughput_img_s"] / bare)
    return ratios


def job_share(model_name: str) -> tuple[float, float, float]:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    from joulebench.jobs.job_spec import job_spec

    study = {"methods": config["methods"], "batch_sizes": config["batch_sizes"]}
    spec = job_spec("cpu", study).to_json()
    with tempfile.TemporaryDirectory() as tmp:
        out = {k: str(Path(tmp) / f"{k}.parquet") for k in ("rows", "repeats", "trace")}
        cmd = [sys.executable, "-m", "joulebench", "profile-job", model_name]
        cmd += ["--device-label", "cpu", "--spec", spec, "--threads", "2"]
        cmd += ["--output", out["rows"], "--repeats-output", out["repeats"]]
        cmd += ["--trace-output", out["trace"]]
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        wall = time.perf_counter() - start
        import pandas as pd

        measured = float(pd.read_parquet(out["rows"])["measured_s"].sum())
    return measured / wall, measured, wall


def overhead_rows(model_name: str, device: str, sizes: list[int]) -> list[dict]:
    """Per configuration, in measuring order: seconds of warm-up, pauses, lead-ins and the
    rest (build, meter, bookkeeping) beside its measuring seconds. A lead-in is one sensor
    refresh of steps before each window (protocol.measure); it is not recorded, so it is
    counted as one refresh period per window."""
    import pandas as pd

    from joulebench.core.methods import parse_methods
    from joulebench.jobs.job_spec import JobSpec
    from joulebench.jobs.profile import ProfileJob, run_profile

    specs = {"fp32": {"precision": "fp32"}, "fp32-cl": {"precision": "fp32", "channels_last": True}}
    with tempfile.TemporaryDirectory() as tmp:
        job = ProfileJob(
            model=model_name,
            device_label="bench",
            spec=JobSpec(
                torch_device=device,
                methods=list(parse_methods(specs).values()),
                batch_sizes=sizes,
                idle_pre_s=0.5,
            ),
            threads=1,
            check_dir=tmp,  # no check: as run
        )
        out = run_profile(job, log=lambda s: None)
    rows = out.rows.sort_values("config_order")
    refresh_s = {}
    for _, row in rows.iterrows():
        detail = json.loads(row["meter_detail"] or "{}")
        refresh_s[(row["method"], row["batch_size"])] = float(detail.get("refresh_s") or 0.1)
    pauses = out.repeats.groupby(["method", "batch_size"])["pause_before_s"].sum()
    table = []
    for _, row in rows.iterrows():
        key = (row["method"], row["batch_size"])
        wall = (
            pd.Timestamp(row["end_time_utc"]) - pd.Timestamp(row["start_time_utc"])
        ).total_seconds()
        lead_in = int(row["repeats"]) * refresh_s[key]
        around = {
            "warmup_s": float(row["warmup_s"]),
            "pauses_s": float(pauses.get(key, 0.0)),
            "lead_in_s": lead_in,
        }
        around["rest_s"] = wall - float(row["measured_s"]) - sum(around.values())
        table.append(
            {
                "order": int(row["config_order"]),
                "method": row["method"],
                "batch_size": int(row["batch_size"]),
                "warmup": row.get("warmup_kind", "full") or "full",
                **around,
                "measured_s": float(row["measured_s"]),
                "overhead": sum(around.values()) / float(row["measured_s"]),
            }
        )
    return table


def print_overhead(model_name: str, device: str, sizes: list[int]) -> None:
    rows = overhead_rows(model_name, device, sizes)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; {model_name} on {device}, default protocol")  # fmt: skip
    print("| # | method | batch | warm-up | warm-up s | pauses s | lead-ins s | build + rest s "
          "| measuring s | overhead |\n|---|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for r in rows:
        print(
            f"| {r['order']} | {r['method']} | {r['batch_size']} | {r['warmup']} "
            f"| {r['warmup_s']:.2f} | {r['pauses_s']:.2f} | {r['lead_in_s']:.2f} "
            f"| {r['rest_s']:.2f} | {r['measured_s']:.2f} | {r['overhead']:.0%} |"
        )
    keys = ("warmup_s", "pauses_s", "lead_in_s", "rest_s", "measured_s")
    total = {k: sum(r[k] for r in rows) for k in keys}
    around = sum(total[k] for k in keys[:-1])
    print(
        f"| all | | | | {total['warmup_s']:.1f} | {total['pauses_s']:.1f} "
        f"| {total['lead_in_s']:.1f} | {total['rest_s']:.1f} | {total['measured_s']:.1f} "
        f"| {around / total['measured_s']:.0%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18.a1_in1k")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--overhead", action="store_true", help="only item 3 (a simulated GPU)")
    parser.add_argument("--device", default="sim:h100")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    if args.overhead:
        model = (
            args.model if args.model != "resnet18.a1_in1k" else "mobilenetv3_small_100.lamb_in1k"
        )
        print_overhead(model, args.device, args.sizes)
        return
    ratios = window_vs_bare(args.model, args.batch_size, args.seconds, args.rounds)
    share, measured, wall = job_share(args.model)
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {os.cpu_count()} cores")
    print("| measure | result |\n|---|---|")
    print(
        f"| window vs bare-loop throughput, {args.model} bs{args.batch_size} "
        f"(median of {args.rounds}; min-max) | {statistics.median(ratios):.1%} "
        f"({min(ratios):.1%}-{max(ratios):.1%}) |"
    )
    print(
        f"| share of profile-job wall time inside windows, {args.model}, default config "
        f"| {share:.0%} ({measured:.0f} s of {wall:.0f} s) |"
    )


if __name__ == "__main__":
    main()
