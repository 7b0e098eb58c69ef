"""The protocol against heat and irregular work on simulated boards (issue 23's Must show).

1. Sweep: every generation x batch period (1-500 ms, with 50/100/200 ms) x workload pattern
   (regular, period jitter, host pauses fixed and jittered) x --seeds, every board with heat
   drawn from the swept ranges (joulebench.sim.thermal), each configuration starting
   anywhere from idle to past its own sustained temperature. Against the sustained truth
   (joulebench.sim.heat_experiment): share within 5 % and 2 %, 95 % CI coverage,
   worst case, per generation and period, per pattern and overall.
2. Order bias: the same light (batch-1-like) configuration measured first in a job vs after
   a hotter one: median and p95 of second minus first.

3. Per preset (--preset strict|default|fast, docs/protocol.md#presets): within 5 %, within
   2 %, CI coverage, the worst generation x period group and simulated seconds per
   configuration, on one line.

    PYTHONPATH=src python bench/bench_heat.py [--preset default] [--seeds 10]
        [--order-seeds 10] [--csv out.csv] [--heat-error 0.05 | --today]
        [--ci-target 0.02 --max-repeats 12] [--generations a100,hopper --periods 0.05,0.1]
        [--refresh-error -0.05]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def sweep(seeds, csv, heat_error, settings, refresh_error=0.0, tail_error=None, **only):
    import pandas as pd

    from joulebench.sim import heat_experiment as he

    cases = he.cases(seeds, **only)
    rows = pd.DataFrame(
        [
            he.run_case(c, settings, heat_error, refresh_error=refresh_error, tail_error=tail_error)
            for c in cases
        ]
    )
    if csv:
        rows.to_csv(csv, index=False)
    table = he.summary_table(rows)
    print("| generation | batch period | cases | within 5 % | within 2 % | CI95 holds truth "
          "| worst | median |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for _, r in table.iterrows():
        print(
            f"| {r['generation']} | {r['period_s'] * 1e3:g} ms | {r['cases']} "
            f"| {pct(r['within_5pct'])} | {pct(r['within_2pct'])} | {pct(r['ci95_coverage'])} "
            f"| {pct(r['worst_error'])} | {pct(r['median_error'])} |"
        )
    print("\n| pattern | cases | within 5 % | within 2 % | CI95 holds truth | worst | median |")
    print("|---|---|---|---|---|---|---|")
    for _, r in he.summary_table(rows, ["pattern"]).iterrows():
        print(
            f"| {r['pattern']} | {r['cases']} | {pct(r['within_5pct'])} "
            f"| {pct(r['within_2pct'])} | {pct(r['ci95_coverage'])} | {pct(r['worst_error'])} "
            f"| {pct(r['median_error'])} |"
        )
    total = he.overall(rows)
    print(
        f"\noverall: {total['cases']} cases, within 5 % {pct(total['within_5pct'])} (worst "
        f"generation x period {pct(total['worst_group_within_5pct'])}), within 2 % "
        f"{pct(total['within_2pct'])}, CI95 holds the sustained truth in "
        f"{pct(total['ci95_coverage'])}, worst {pct(total['worst_error'])}; thermal part "
        f"|error| median {pct(rows['thermal_error'].abs().median())}, p95 "
        f"{pct(rows['thermal_error'].abs().quantile(0.95))}; sensor part p95 "
        f"{pct(rows['sensor_error'].abs().quantile(0.95))}; against the truth "
        f"as run (the die's temperature during the batches): median "
        f"{pct(total['median_as_run_error'])}, within 5 % "
        f"{pct((rows['error_as_run'].abs() <= 0.05).mean())}"
    )
    flagged = rows["flags"].fillna("") != ""
    print(
        f"flagged: {int(flagged.sum())} cases; of the cases more than 5 % off, "
        f"{int((flagged & (rows['error'].abs() > 0.05)).sum())} flagged, "
        f"protocol time per configuration {rows['protocol_s'].mean():.1f} s (simulated)"
    )
    return rows


def preset_line(name: str, rows) -> None:
    """The preset's row of docs/benchmarks.md's preset table."""
    from joulebench.flags import FLAG_CI_TARGET_NOT_MET
    from joulebench.sim import heat_experiment as he

    total = he.overall(rows)
    table = he.summary_table(rows)
    worst = table.loc[table["within_5pct"].idxmin()]
    capped = rows["flags"].fillna("").str.contains(FLAG_CI_TARGET_NOT_MET).mean()
    print(
        "\n| preset | cases | within 5 % | within 2 % | CI95 holds truth "
        "| worst group (within 5 %) | groups >= 95 % | worst | windows "
        "| simulated s / configuration | ci-target-not-met |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {name} | {total['cases']} | {pct(total['within_5pct'])} | {pct(total['within_2pct'])} "
        f"| {pct(total['ci95_coverage'])} | {worst['generation']} {worst['period_s'] * 1e3:g} ms: "
        f"{pct(worst['within_5pct'])} | {int((table['within_5pct'] >= 0.95).sum())} of "
        f"{len(table)} | {pct(total['worst_error'])} | {rows['repeats'].mean():.2f} "
        f"| {rows['protocol_s'].mean():.1f} | {pct(capped)} |"
    )


def order(seeds: int, heat_error: float | None, settings) -> None:
    import pandas as pd

    from joulebench.sim import heat_experiment as he

    cases = he.cases(seeds, periods=(0.005, 0.010, 0.050, 0.100), patterns=("regular",))
    rows = pd.DataFrame([he.order_bias(c, settings, heat_error=heat_error) for c in cases])
    d = rows["second_minus_first"]
    thermal = rows["thermal_part"]
    print(
        f"\norder bias ({len(rows)} jobs: a light configuration, 30 % busy, first vs after an "
        f"always-busy one): second minus first median {pct(d.median())}, p95 "
        f"{pct(d.abs().quantile(0.95))} (of |difference|), worst {pct(d.abs().max())}; "
        f"die {rows['first_c'].mean():.1f} C first, {rows['second_c'].mean():.1f} C second; "
        f"its thermal part (each measurement's thermal-state error, second minus first): "
        f"median {pct(thermal.median())}, p95 {pct(thermal.abs().quantile(0.95))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--seeds", type=int, default=10, help="cases per generation x period x pattern"
    )
    parser.add_argument("--order-seeds", type=int, default=10)
    parser.add_argument(
        "--preset", default="default", help="the protocol preset (docs/protocol.md#presets)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a protocol setting over the preset's (YAML value), e.g. --set min_repeat_s=2",
    )
    parser.add_argument("--generations", default=None, help="comma-separated (default all)")
    parser.add_argument("--periods", default=None, help="comma-separated seconds (default all)")
    parser.add_argument("--csv", default=None, help="write every case's row here")
    parser.add_argument(
        "--tail",
        default="none",
        help="the boards' power tail after work stops (joulebench.sim.tail): none, "
        "drawn (each case's from the swept ranges, a fifth with none), or one "
        "share/hold_s/tau_s/scales, e.g. 0.3/0.1/0.5/dynamic",
    )
    parser.add_argument(
        "--heat-error",
        type=float,
        default=0.05,
        help="the board's heat handed to the protocol (as `joulebench check` measures it), "
        "each value off by up to this share; negative: not known (rows as-run)",
    )
    parser.add_argument(
        "--tail-error",
        type=float,
        default=0.10,
        help="the boards' tail handed to the protocol (as `joulebench check` measures it), "
        "each value off by up to this share; negative: not known (the protocol assumes the "
        "largest)",
    )
    parser.add_argument(
        "--refresh-error",
        type=float,
        default=0.0,
        help="the sensor's refresh period the protocol is told, off by this share (signed), "
        "as a check or a published value may be",
    )
    parser.add_argument(
        "--ci-target",
        type=float,
        default=None,
        help="the protocol's ci_target (default: the preset's)",
    )
    parser.add_argument("--max-repeats", type=int, default=None, help="default: the preset's")
    parser.add_argument(
        "--today",
        action="store_true",
        help="the protocol before issue 23 (strict, no spread repeats): no heat known (rows as "
        "run)",
    )
    args = parser.parse_args()
    import yaml

    from joulebench.core.protocol import ProtocolSettings

    overrides = {"preset": "strict", "spread_repeats": 0} if args.today else {"preset": args.preset}
    if args.ci_target is not None:
        overrides["ci_target"] = args.ci_target
    if args.max_repeats is not None:
        overrides["max_repeats"] = args.max_repeats
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = yaml.safe_load(value)
    settings = ProtocolSettings.from_dict(overrides)
    only = {"tail": args.tail}
    if args.generations:
        only["generations"] = args.generations.split(",")
    if args.periods:
        only["periods"] = tuple(float(p) for p in args.periods.split(","))
    heat_error = args.heat_error if args.heat_error >= 0 and not args.today else None
    start = time.perf_counter()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, python {platform.python_version()}")
    print(
        f"heat known to the protocol within: {heat_error}; refresh period told off by "
        f"{args.refresh_error:+.1%}; tail: {args.tail}, known within {args.tail_error}; "
        f"settings: {settings}"
    )
    tail_error = args.tail_error if args.tail_error >= 0 else None
    rows = sweep(args.seeds, args.csv, heat_error, settings, args.refresh_error, tail_error, **only)
    preset_line("today" if args.today else args.preset, rows)
    if args.order_seeds:
        order(args.order_seeds, heat_error, settings)
    print(f"bench wall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
