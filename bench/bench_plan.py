"""Measure the overheads `joulebench plan` adds to the protocol's measuring time
(src/joulebench/plan.py, src/joulebench/jobs/config_time.py), and compare a finished run
with the plan's estimate.

    .venv/bin/python bench/bench_plan.py overheads [--rounds 3]
        a profile job's start-up (imports), building each default model (fp32 and bf16,
        batch 1 and 8) and warm-up at the default protocol beyond warmup_min_s.
    .venv/bin/python bench/bench_plan.py run --workdir . --wall-s 660
        a finished study: each configuration's wall time from its job's log (the
        `config k/N ..., elapsed` lines), split into measuring windows, warm-up, pauses
        (from the rows and repeats) and the rest (build and bookkeeping); each job's
        start-up; the plan's estimate beside the run's measured wall time.
    .venv/bin/python bench/bench_plan.py constants --rows ROWS.parquet
        the plan's warm-up and torch.compile constants from a profile of a model eager and
        compiled at several batch sizes (bench/gpu_plan.sh makes it on a GPU): the
        full warm-up past warmup_min_s (WARMUP_EXTRA_S), the short one, and what a
        compiled configuration's warm-up takes beyond an eager one's of its kind (COMPILE_S).

Prints markdown to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

IMPORTS = (
    "import torch, timm, pandas; "
    "import joulebench.cli, joulebench.jobs.profile, joulebench.core.meters"
)


def machine() -> str:
    load = os.getloadavg()[0]
    return f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load:.1f}"


def startup_s(rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], check=True)
        out.append(time.perf_counter() - start)
    return out


def overheads(rounds: int) -> None:
    import torch

    from joulebench.core.backends import select_meter
    from joulebench.core.methods import parse_methods
    from joulebench.core.protocol import ProtocolSettings, warm_up
    from joulebench.jobs.profile import build
    from joulebench.prerun import load_study

    config = load_study()
    models = config["models"]
    methods = list(parse_methods(config["methods"]).values())
    settings = ProtocolSettings()
    starts = startup_s(rounds)
    builds, warmups = [], []
    torch.set_num_threads(os.cpu_count() or 1)
    for model in models:
        for method in methods:
            for batch in config["batch_sizes"]:
                start = time.perf_counter()
                built = build(model.split(":")[0], method, batch, "cpu")
                builds.append(time.perf_counter() - start)
                meter, _ = select_meter("cpu")
                meter.close()
                context = method.context("cpu")

                def step(built=built, context=context):
                    with context:
                        built.model(built.x)

                with torch.inference_mode():
                    result = warm_up(step, lambda: None, settings)
                warmups.append(result.duration_s - settings.warmup_min_s)
                print(
                    f"{model} {method.name} bs{batch}: build {builds[-1]:.2f} s, warm-up "
                    f"{result.duration_s:.2f} s ({result.iters} iters, steady {result.steady})",
                    file=sys.stderr,
                )
    print(f"{time.strftime('%Y-%m-%d')}, {machine()}\n")
    print("| overhead | median | min | max | n |")
    print("|---|---|---|---|---|")
    for name, values in [
        ("job start-up (imports)", starts),
        ("model build, per configuration", builds),
        ("warm-up beyond warmup_min_s (2 s)", warmups),
    ]:
        print(
            f"| {name} | {statistics.median(values):.2f} s | {min(values):.2f} s | "
            f"{max(values):.2f} s | {len(values)} |"
        )


CONFIG_LINE = re.compile(r"^config (\d+)/(\d+) (\S+) (\S+) bs(\d+), elapsed")
DONE_LINE = re.compile(r"^(\S+): (\d+) configurations in")


def run_report(workdir: Path, wall_s: float | None) -> None:
    import pandas as pd

    from joulebench.plan import format_duration, plan_study
    from joulebench.prerun import load_study

    results = workdir / "results"
    rows = pd.read_parquet(results / "profile.parquet")
    repeats = pd.concat(
        pd.read_parquet(p) for p in sorted(results.glob("profile/*/repeats/*.parquet"))
    )
    per_config = []  # (model, method, batch size, wall seconds), from each job's log
    for log in sorted(workdir.glob("logs/profile/*/*.log")):
        lines = log.read_text().splitlines()
        configs = [(CONFIG_LINE.match(line), _elapsed(line)) for line in lines]
        configs = [(m, t) for m, t in configs if m]
        done = [DONE_LINE.match(line) for line in lines if DONE_LINE.match(line)]
        if not configs or not done:
            continue
        ends = [t for _, t in configs[1:]] + [_parse_duration(done[0].string.split(" in ")[1])]
        for (m, start), end in zip(configs, ends, strict=True):
            per_config.append((m[3], m[4], int(m[5]), end - start))
    table = pd.DataFrame(per_config, columns=["model", "method", "batch_size", "wall_s"])
    keyed = rows.set_index(["model", "method", "batch_size_requested"])
    pauses = repeats.groupby(["model", "method", "batch_size_requested"])["pause_before_s"].sum()
    table["windows_s"] = [keyed.loc[(m, me, b), "measured_s"] for m, me, b, _ in per_config]
    table["warmup_s"] = [keyed.loc[(m, me, b), "warmup_s"] for m, me, b, _ in per_config]
    table["pauses_s"] = [pauses.loc[(m, me, b)] for m, me, b, _ in per_config]
    table["rest_s"] = table["wall_s"] - table["windows_s"] - table["warmup_s"] - table["pauses_s"]
    print(f"{time.strftime('%Y-%m-%d')}, {machine()}, {len(table)} configurations\n")
    print("| per configuration | median | min | max |")
    print("|---|---|---|---|")
    for column in ("wall_s", "windows_s", "warmup_s", "pauses_s", "rest_s"):
        v = table[column]
        print(f"| {column} | {v.median():.2f} s | {v.min():.2f} s | {v.max():.2f} s |")
    config = load_study()
    plan = plan_study(config, list(rows["model"].unique()), {"cpu": "cpu"}, None)
    print(
        f"\nplan: measuring >= {format_duration(plan.measuring_min_s)}, estimated "
        f"{format_duration(plan.total_s)} ({plan.total_s:.0f} s)"
    )
    if wall_s:
        print(
            f"measured wall time: {format_duration(wall_s)} ({wall_s:.0f} s); "
            f"estimate / measured = {plan.total_s / wall_s:.2f}"
        )


def _elapsed(line: str) -> float | None:
    if not CONFIG_LINE.match(line):
        return None
    return _parse_duration(line.split("elapsed ", 1)[1].split(",")[0])


def _parse_duration(text: str) -> float:
    """'1 min 02 s' / '42 s' / '12 min' / '2 h 05 min' -> seconds (format_duration's forms)."""
    units = {"s": 1, "min": 60, "h": 3600, "d": 86400}
    parts = text.split()
    return sum(float(n) * units[u] for n, u in zip(parts[::2], parts[1::2], strict=True))


def constants_report(rows_path: Path) -> None:
    """The plan's per-configuration constants as a profile's rows show them (warmup_s holds
    a compiled configuration's first calls, so its compile too)."""
    import pandas as pd

    from joulebench.core.protocol import ProtocolSettings
    from joulebench.jobs import config_time

    rows = pd.read_parquet(rows_path)
    rows = rows[rows["status"] == "ok"]
    compiled = rows["compile"].fillna("").astype(str).ne("")
    floor_s = ProtocolSettings().warmup_min_s
    print(f"{rows_path} ({len(rows)} ok rows), {machine()}\n")
    print("| method | batch | warm-up | warm-up s |\n|---|---|---|---|")
    for r in rows.sort_values(["method", "batch_size"]).itertuples():
        print(f"| {r.method} | {r.batch_size} | {r.warmup_kind} | {r.warmup_s:.1f} |")
    eager = rows[~compiled].groupby("warmup_kind")["warmup_s"].median()
    extra = [
        w - eager.get(kind, float("nan"))
        for w, kind in zip(rows[compiled]["warmup_s"], rows[compiled]["warmup_kind"], strict=True)
    ]
    print()
    past_floor_s = eager.get("full", float("nan")) - floor_s
    print(
        f"- full warm-up past warmup_min_s ({floor_s:g} s), eager: median {past_floor_s:.1f} s "
        f"(WARMUP_EXTRA_S = {config_time.WARMUP_EXTRA_S})"
    )
    print(f"- short warm-up, eager: median {eager.get('short', float('nan')):.1f} s")
    if extra:
        print(
            f"- a compiled configuration's warm-up beyond an eager one of its kind: median "
            f"{statistics.median(extra):.1f} s, {min(extra):.1f}-{max(extra):.1f} s "
            f"(COMPILE_S = {config_time.COMPILE_S})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("overheads")
    p.add_argument("--rounds", type=int, default=3)
    p = sub.add_parser("run")
    p.add_argument("--workdir", type=Path, default=REPO)
    p.add_argument("--wall-s", type=float, help="the run's measured wall time")
    p = sub.add_parser("constants")
    p.add_argument("--rows", type=Path, required=True, help="a profile's rows (parquet)")
    args = parser.parse_args()
    if args.what == "overheads":
        overheads(args.rounds)
    elif args.what == "constants":
        constants_report(args.rows)
    else:
        run_report(args.workdir, args.wall_s)


if __name__ == "__main__":
    main()
