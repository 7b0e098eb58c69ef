"""The protocol against simulated NVIDIA power sensors: error tables and the figure for docs.

1. Protocol vs a naive single 1 s window, against the true energy, for every GPU generation
   of joulebench.core.meters.nvidia_sensors and batch periods 10-200 ms, once in phase with the
   sensor and --seeds times at a random phase. Target: the protocol within 5 % of the truth in
   >= 95 % of cases, and never silently wrong (its CI, its repeat CV or a flag shows it).
2. What the protocol's in-window phase shifts buy and cost: 0 (the protocol before), 8 (the
   SC24 practice) and 32 (now) shifts on the A100/H100/GH200 sensors, at the default duty
   (75 % of each period in kernels) and with long host gaps (duty 20 % and 50 %).
3. The figure docs/img/sensor_sim_error.png: naive single-window error vs window length per
   generation, the protocol beside it.

    PYTHONPATH=src python bench/bench_sensor_sim.py [--seeds 20] [--figure docs/img/...]
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

WINDOWS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)  # nominal; each stretched by 1-1.3


def error_table(seeds: int):
    from joulebench.sim import experiment

    protocol, naive = experiment.run_all(random_seeds=seeds)
    table = experiment.protocol_table(protocol, naive)
    errors = protocol["protocol_error"].abs()
    print(experiment.format_table(table))
    print(
        f"\nprotocol within 5 %: {(errors <= 0.05).mean():.1%} of {len(protocol)} cases "
        f"(target >= 95 %), worst {errors.max():.1%}, median {errors.median():.2%}; "
        f"silently wrong: {int((~protocol['shown']).sum())}; naive 1 s window: median "
        f"{naive['naive_error'].abs().median():.1%}, worst {naive['naive_error'].abs().max():.1%}"
    )
    print(
        "\n| generation | sensor | protocol: within 5 % | worst | median "
        "| naive 1 s: median | worst |"
    )
    print("|---|---|---|---|---|---|---|")
    for key, spec in experiment.GENERATIONS.items():
        p = protocol.loc[protocol["generation"] == key, "protocol_error"].abs()
        n = naive.loc[naive["generation"] == key, "naive_error"].abs()
        print(
            f"| {spec.example} ({key}) | {spec.refresh_s * 1e3:g} ms / {spec.window_s * 1e3:g} ms "
            f"| {(p <= 0.05).mean():.0%} | {p.max():.1%} | {p.median():.2%} | {n.median():.1%} "
            f"| {n.max():.1%} |"
        )
    print(
        f"protocol time per measurement (simulated): {protocol['protocol_s'].mean():.1f} s "
        f"(warm-up, {protocol['repeats'].mean():.0f} windows of "
        f"{protocol['window_s'].mean():.2f} s, pauses)"
    )
    return protocol


def ablation(seeds: int) -> None:
    import pandas as pd

    from joulebench.core.protocol import ProtocolSettings
    from joulebench.sim import experiment
    from joulebench.sim.workload import Workload

    print("\n| phase shifts | duty | cases | within 5 % | worst error | silently wrong |"
          " delays per window | protocol time |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for shifts in (0, 8, 32):
        for duty in (0.75, 0.5, 0.2):

            @dataclasses.dataclass(frozen=True)
            class DutyCase(experiment.Case):
                def workload(self, duty=duty):
                    return Workload(period_s=self.period_s, duty=duty)

            cases = [
                DutyCase(**dataclasses.asdict(c))
                for c in experiment.cases(seeds, ["a100", "hopper", "gh200"])
            ]
            settings = ProtocolSettings(phase_shifts=shifts)
            rows = pd.DataFrame([experiment.run_protocol(c, settings) for c in cases])
            err = rows["protocol_error"].abs()
            print(
                f"| {shifts} | {duty:.0%} | {len(rows)} | {(err <= 0.05).mean():.1%} | "
                f"{err.max():.1%} | {int((~rows['shown']).sum())} | "
                f"{rows['shift_s'].mean():.3f} s | {rows['protocol_s'].mean():.1f} s |"
            )


def figure(path: Path, seeds: int, protocol) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from joulebench.core.meters.nvidia_sensors import GENERATIONS
    from joulebench.sim import experiment

    sweep = experiment.window_sweep(WINDOWS_S, random_seeds=seeds)
    sweep["abs_error"] = sweep["naive_error"].abs() * 100
    protocol = protocol.assign(abs_error=protocol["protocol_error"].abs() * 100)
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.5), sharex=True, sharey=True)
    for ax, (key, spec) in zip(axes.ravel(), GENERATIONS.items(), strict=True):
        naive = sweep[sweep["generation"] == key].groupby("window_target_s")["abs_error"]
        x = np.array(WINDOWS_S)
        floor = 0.01  # % (the log axis has no zero)
        median = np.maximum(naive.median().to_numpy(), floor)
        p95 = np.maximum(naive.quantile(0.95).to_numpy(), floor)
        ax.fill_between(x, median, p95, color="tab:red", alpha=0.15, lw=0)
        ax.plot(x, p95, color="tab:red", lw=1, ls="--", label="naive window, 95th pct")
        ax.plot(x, median, color="tab:red", lw=1.8, marker="o", ms=3, label="naive window, median")
        mine = protocol[protocol["generation"] == key]
        mid = max(mine["abs_error"].median(), floor)
        top = max(mine["abs_error"].quantile(0.95), floor)
        ax.errorbar(
            [mine["window_s"].mean()],
            [mid],
            yerr=[[0], [top - mid]],
            color="tab:blue",
            marker="D",
            ms=6,
            capsize=3,
            ls="none",
            label="protocol (median, 95th pct)",
        )
        ax.axhline(5, color="0.5", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_yticks([0.01, 0.1, 1, 5, 10, 100], ["0.01", "0.1", "1", "5", "10", "100"])
        ax.set_title(
            f"{spec.example} ({key}): refresh {spec.refresh_s * 1e3:g} ms, "
            f"window {spec.window_s * 1e3:g} ms",
            fontsize=9,
        )
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("window length (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("|error| vs true energy (%)")
    axes[0, 0].set_ylim(0.01, 200)
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        "Simulated NVIDIA power sensors: energy error of one naive window vs its length, "
        "and of the protocol\n(batch periods 10-200 ms, random phases; dotted: 5 %; "
        "the protocol: 4 phase-shifted windows of >= 5 s)",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    print(f"\nfigure -> {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20, help="random phases per case")
    parser.add_argument("--ablation-seeds", type=int, default=5)
    parser.add_argument("--figure", default=str(REPO / "docs" / "img" / "sensor_sim_error.png"))
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, python {platform.python_version()}")
    protocol = error_table(args.seeds)
    if args.ablation_seeds:
        ablation(args.ablation_seeds)
    figure(Path(args.figure), max(4, args.seeds // 4), protocol)
    print(f"bench wall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
