"""Front recall of the informative order against a random one, on timm's published tables
(issue 42): which share of the true accuracy-vs-time front is measured once a share of the
models is.

Every pretrained tag of timm's ImageNet table whose architecture timm's benchmark timed (on an
RTX 4090 with AMP at batch 256, and an i9 CPU at batch 1; /work/shared/data/timm-results or
`--tables DIR`) is a model: its top-1 from the accuracy table, its time per image from the
benchmark (the energy stand-in: no energy in these tables), its size from the benchmark's
GMACs. Models are "measured" 5 % at a time in `informative_order`'s order, re-ranked after
each step from the times measured so far; or at random. The front: no model at least as
accurate is faster.

    PYTHONPATH=src python bench/bench_order.py [--tables DIR] [--seeds 5] [--share 0.25]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis.informative import features, informative_order

TABLES = Path("/work/shared/data/timm-results")
BENCHES = {
    "RTX 4090, AMP, batch 256": "benchmark-infer-amp-nchw-pt291-cu128-4090.csv",
    "i9-10940X CPU, batch 1": "benchmark-infer-fp32-nchw-pt240-cpu-i9_10940x-dynamo.csv",
}


def models_of(tables: Path, bench: str) -> pd.DataFrame:
    """model, img_size, top1, param_count, time per image (s), macs per image."""
    acc = pd.read_csv(tables / "results-imagenet.csv")
    timed = pd.read_csv(tables / bench)
    acc["arch"] = acc["model"].str.split(".").str[0]
    timed = timed.rename(columns={"model": "arch", "infer_img_size": "img_size"})
    timed = timed.drop(columns=["param_count"], errors="ignore")
    out = acc.merge(timed, on=["arch", "img_size"], how="inner").drop_duplicates("model")
    out["time_s"] = 1.0 / out["infer_samples_per_sec"]
    out["macs_per_image"] = out["infer_gmacs"] * 1e9
    out["activations_per_image"] = out["infer_macts"] * 1e6
    return out.reset_index(drop=True)


def true_front(models: pd.DataFrame) -> set[str]:
    order = models.sort_values(["top1", "time_s"], ascending=[False, True])
    front, best = set(), math.inf
    for row in order.itertuples():
        if row.time_s < best:
            front.add(row.model)
            best = row.time_s
    return front


def recall(models: pd.DataFrame, share: float, informative: bool, seed: int) -> float:
    feats = features(models["model"], models, models.assign(family=np.nan))
    truth = dict(zip(models["model"], np.log(models["time_s"]), strict=True))
    target, step = math.ceil(share * len(models)), math.ceil(0.05 * len(models))
    rng = np.random.default_rng(seed)
    measured: dict[str, float] = {}
    shuffled = list(rng.permutation(models["model"]))
    while len(measured) < target:
        if informative:
            order = informative_order(feats, measured)
        else:
            order = [m for m in shuffled if m not in measured]
        for model in order[: min(step, target - len(measured))]:
            measured[model] = truth[model]
    front = true_front(models)
    return len(front & set(measured)) / len(front)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, default=TABLES)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--share", type=float, default=0.25)
    args = parser.parse_args()
    print("| table | models | front | informative | random |")
    print("|---|---|---|---|---|")
    for name, bench in BENCHES.items():
        models = models_of(args.tables, bench)
        info = np.mean([recall(models, args.share, True, s) for s in range(args.seeds)])
        rand = np.mean([recall(models, args.share, False, s) for s in range(args.seeds)])
        size = len(true_front(models))
        print(f"| {name} | {len(models)} | {size} | {info:.1%} | {rand:.1%} |")


if __name__ == "__main__":
    main()
