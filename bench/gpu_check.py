"""The GPU checks of issue 4, as one script for a session that is lent an NVIDIA GPU.

Measures a few models at fp16 autocast with the real NVML meter and writes, per
configuration: counter-vs-trace disagreement (target <= 3 %), repeat CV of energy per image
(target <= 1 %) and idle power. (A ZeusMonitor cross-check is not wired yet.) Output: a
parquet and a text table under --out.

    PYTHONPATH=src python bench/gpu_check.py --out $OUT [--models resnet50.a1_in1k ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

DEFAULT_MODELS = [
    "resnet50.a1_in1k",
    "vit_base_patch16_224.augreg2_in21k_ft_in1k",
    "mobilenetv3_large_100.ra_in1k",
]


def main() -> None:
    import pandas as pd

    from joulebench.methods import parse_methods
    from joulebench.profile import ProfileJob, run_profile

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    rows = []
    for model in args.models:
        job = ProfileJob(
            model=model,
            device_label="gpu",
            torch_device=args.device,
            methods=list(parse_methods({"fp16-amp": {"precision": "fp16"}}).values()),
            batch_sizes=[args.batch_size],
        )
        result = run_profile(job)
        rows.append(result.rows)
        result.trace.to_parquet(out / f"trace-{model}.parquet")
    table = pd.concat(rows, ignore_index=True)
    table.to_parquet(out / "gpu_check.parquet")
    cols = [
        "model",
        "status",
        "meter",
        "energy_per_image_j",
        "energy_per_image_cv",
        "trace_disagreement_max",
        "idle_power_pre_w",
        "power_mean_w",
        "throughput_img_s",
        "flags",
    ]
    (out / "gpu_check.txt").write_text(table[cols].to_string(index=False))
    print(table[cols].to_string(index=False))
    print(json.dumps({"device_name": str(table["device_name"].iloc[0])}))


if __name__ == "__main__":
    main()
