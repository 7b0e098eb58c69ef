"""Predictions and their intervals on data no one here wrote (issue 42): timm's published
benchmark tables (an RTX 4090 with AMP at batch 256, an i9 CPU at batch 1;
/work/shared/data/timm-results or `--tables DIR`, SOURCE.md there), time per image standing in
for energy per image (the tables hold no energy).

Each architecture the benchmark timed is a model of a catalog made from the table's own
counts (GMACs, activations, parameters, input size; its family is timm's module, as the
catalog stage writes it). A share of them is "measured" at random, the rest predicted by
joulebench.analysis.predict; reported over seeds: the coverage of the 90 % intervals on the
models not measured, the median and p90 interval factor (x/÷), the median |error| of the
point prediction, and the group's own cross-validated coverage (what a run would report).
`--tags`: every pretrained tag a model (accuracy table joined), as a study's catalog lists
them: tags of one architecture are twins, which the kin pools use.

    PYTHONPATH=src python bench/bench_predict.py [--tables DIR] [--seeds 5] [--tags]
        [--set TAU=0.1 --set PRIOR=0.5]   # try other values of predict's constants
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from joulebench.analysis import predict
from joulebench.analysis.predict import PI_LEVEL, Kinship, cv_coverage, cv_plus, features

TABLES = Path("/work/shared/data/timm-results")
BENCHES = {
    "RTX 4090, AMP, batch 256": "benchmark-infer-amp-nchw-pt291-cu128-4090.csv",
    "i9-10940X CPU, batch 1": "benchmark-infer-fp32-nchw-pt240-cpu-i9_10940x-dynamo.csv",
}
SHARES = (0.10, 0.20, 0.40)


def catalog_of(tables: Path, bench: str, tags: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """(a catalog-like table, log time per image) of the benchmark's architectures (or of
    every tag of them in the accuracy table)."""
    from timm.models import _registry

    timed = pd.read_csv(tables / bench).drop_duplicates(["model", "infer_img_size"])
    timed = timed.rename(columns={"model": "architecture", "infer_img_size": "img_size"})
    if tags:
        acc = pd.read_csv(tables / "results-imagenet.csv")[["model", "img_size"]]
        acc["architecture"] = acc["model"].str.split(".").str[0]
        timed = acc.merge(timed, on=["architecture", "img_size"]).drop_duplicates("model")
    else:
        timed = timed.drop_duplicates("architecture")
        timed["model"] = timed["architecture"]
    modules = _registry._model_to_module
    cat = pd.DataFrame(
        {
            "model": timed["model"],
            "architecture": timed["architecture"],
            "family": timed["architecture"].map(modules).fillna(""),
            "status": "ok",
            "params": timed["param_count"] * 1e6,
            "macs_per_image": timed["infer_gmacs"] * 1e9,
            "activations_per_image": timed["infer_macts"] * 1e6,
            "input_height": timed["img_size"],
            "input_width": timed["img_size"],
        }
    ).reset_index(drop=True)
    return cat, -np.log(timed["infer_samples_per_sec"].to_numpy(float))


def one(feats: pd.DataFrame, kinship, y: np.ndarray, share: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    measured = np.zeros(len(y), bool)
    measured[rng.choice(len(y), round(share * len(y)), replace=False)] = True
    got = cv_plus(feats, kinship, y, measured, PI_LEVEL)
    rest = ~measured & np.isfinite(got["low"])
    inside = (got["low"][rest] <= y[rest]) & (y[rest] <= got["high"][rest])
    factor = np.exp((got["high"][rest] - got["low"][rest]) / 2)
    return {
        "coverage": inside.mean(),
        "median_factor": np.median(factor),
        "p90_factor": np.quantile(factor, 0.9),
        "median_abs_err": np.median(np.abs(np.exp(got["point"][rest] - y[rest]) - 1)),
        "cv_coverage": cv_coverage(feats, kinship, y, measured, PI_LEVEL),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, default=TABLES)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tags", action="store_true")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="a number constant of joulebench.analysis.predict (TAU, PRIOR, RIDGE, ...)",
    )  # fmt: skip
    args = parser.parse_args()
    for item in args.set:
        name, _, value = item.partition("=")
        kind = type(getattr(predict, name, None))
        if kind not in (float, int):
            parser.error(f"--set {item}: predict has no number constant {name!r}")
        try:
            setattr(predict, name, kind(value))  # an int stays one (FOLDS, MIN_POOL)
        except ValueError:
            parser.error(
                f"--set {item}: {name} must be {'a whole number' if kind is int else 'a number'}"
            )
        print(f"{name} = {getattr(predict, name)}")
    print(f"level {PI_LEVEL:.0%}; {args.seeds} seeds; models: {'tags' if args.tags else 'archs'}")
    print("| table | models | measured | coverage (min) | median x/÷ | p90 x/÷ | median |err| "
          "| own CV coverage |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, bench in BENCHES.items():
        cat, y = catalog_of(args.tables, bench, args.tags)
        feats = features(cat)
        kinship = Kinship(feats)
        for share in SHARES:
            runs = pd.DataFrame([one(feats, kinship, y, share, s) for s in range(args.seeds)])
            print(
                f"| {name} | {len(y):,} | {share:.0%} | {runs['coverage'].mean():.1%} "
                f"({runs['coverage'].min():.1%}) | {runs['median_factor'].mean():.2f} | "
                f"{runs['p90_factor'].mean():.2f} | {runs['median_abs_err'].mean():.1%} | "
                f"{runs['cv_coverage'].mean():.1%} |"
            )


if __name__ == "__main__":
    main()
