"""What a model that hangs costs its GPU in one profile job, before and after the hang rule
(src/joulebench/jobs/hangs.py, issue 40 item 9), from the deadlines' arithmetic alone: each
configuration's deadline is supervise.deadline_s over its estimate (config_time.config_cost
as the job counts it: a GPU's sensor refreshing every 0.1 s, full or short warm-up,
torch.compile), as a worker emits it.

    .venv/bin/python bench/bench_hangs.py [--study studies/hidden-joules.yaml] [--model M]

Prints, for the study's methods x batch sizes under its protocol: the worst case (a model
that hangs at every configuration, in the worst measuring order: hangs.worst_case_s), and
two models in `--model`'s own measuring order: one that hangs at every configuration and
one that hangs only at the largest batch size (hung configurations' deadlines only; a
new worker's start, seconds each, is not counted).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

GPU_REFRESH_S = 0.1  # plan.DEFAULT_REFRESH_S: the plan's GPU sensor


def job_deadlines(study: dict, model: str):
    """(rule over the job's configurations, their deadlines and estimates in measuring
    order, the protocol's longest warm-up)."""
    from joulebench.core.protocol import ProtocolSettings
    from joulebench.jobs.config_time import config_cost, warmup_kinds
    from joulebench.jobs.hangs import HangRule
    from joulebench.jobs.job_spec import job_spec
    from joulebench.jobs.profile import ProfileJob
    from joulebench.jobs.supervise import deadline_s

    spec = job_spec("cuda", {k: study[k] for k in ("methods", "batch_sizes")})
    job = ProfileJob(model, "gpu", spec)
    settings = ProtocolSettings.from_dict(study.get("protocol"), "sensor")
    configs = [job.configs()[i] for i in job.measurement_order()]
    kinds = warmup_kinds([(phase, method.name) for phase, method, _ in configs])
    estimates = [
        config_cost(settings, refresh_s=GPU_REFRESH_S, warmup=kind, compile_=m.compile).total_s
        for (_, m, _), kind in zip(configs, kinds, strict=True)
    ]
    deadlines = [deadline_s(s) for s in estimates]
    return HangRule.for_job(job), deadlines, settings.warmup_max_s


def walk(rule, deadlines, warmup_max_s, hangs) -> tuple[float, list[str]]:
    """Seconds the hung configurations cost with the rule, and each configuration's end."""
    spent, ends = 0.0, []
    for position, own_s in enumerate(deadlines):
        if rule.not_tried(position):
            ends.append("not-measured")
        elif hangs(position):
            spent += rule.deadline_s(own_s, warmup_max_s)
            rule.record(position, rule.deadline_s(own_s, warmup_max_s))
            ends.append("timeout")
        else:
            ends.append("measured")
    return spent, ends


def main() -> None:
    from joulebench.jobs.config_time import format_duration
    from joulebench.jobs.hangs import HangRule, worst_case_s

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default=str(REPO / "studies" / "hidden-joules.yaml"))
    parser.add_argument("--model", default="resnet50.a1_in1k")
    args = parser.parse_args()
    study = yaml.safe_load(Path(args.study).read_text())
    rule, deadlines, warmup_max_s = job_deadlines(study, args.model)
    n = len(deadlines)
    before, after = worst_case_s(deadlines, warmup_max_s)
    print(f"{Path(args.study).name}: {n} configurations a job; deadlines (s): "
          f"{sorted({round(d, 1) for d in deadlines})}")  # fmt: skip
    saved = f"{before / after:.1f}x less"
    print(f"worst case (hangs everywhere): before {before:,.0f} s ({format_duration(before)}), "
          f"after {after:,.0f} s ({format_duration(after)}), {saved}")  # fmt: skip
    largest = max(b for _, b in rule.configs)
    cases = {
        "hangs at every configuration": lambda p: True,
        f"hangs only at batch {largest}": lambda p: rule.configs[p][1] == largest,
    }
    for name, hangs in cases.items():
        old = sum(d for p, d in enumerate(deadlines) if hangs(p))
        spent, ends = walk(HangRule(rule.configs), deadlines, warmup_max_s, hangs)
        counts = ", ".join(f"{e} {ends.count(e)}" for e in sorted(set(ends)))
        print(f"{args.model}, {name}: before {old:,.0f} s ({format_duration(old)}), "
              f"after {spent:,.0f} s ({format_duration(spent)}): {counts}")  # fmt: skip


if __name__ == "__main__":
    main()
