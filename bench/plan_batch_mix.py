"""The paper-size study's 8-GPU plan under assumed batch periods (issue 24): what `joulebench
plan --gpus 8` says when each configuration's step time is given, as `--calibrate` would
measure it on the GPU, instead of unknown (windows then sized for short batches).

    PYTHONPATH=src .venv/bin/python bench/plan_batch_mix.py

The step times are SCENARIOS, not measurements: seconds per batch at batch 1 / 8 / 64 / 256
for fp32 (fp16 and bf16 methods half as long), every model alike. Only `plan --calibrate` on
the GPU gives the real mix.
"""

from __future__ import annotations

from joulebench.catalog.models import resolve_models
from joulebench.core.methods import expand_methods
from joulebench.jobs.calibrate import StepTime
from joulebench.plan import plan_study, with_gpus
from joulebench.prerun import load_study
from joulebench.schedule.devices import resolve_pools

STUDY = "studies/hidden-joules.yaml"
SCENARIOS = {  # assumed fp32 seconds per batch, by batch size
    "small models": {1: 0.002, 8: 0.003, 64: 0.012, 256: 0.045},
    "mid-size models": {1: 0.004, 8: 0.006, 64: 0.030, 256: 0.110},
    "large models": {1: 0.008, 8: 0.020, 64: 0.140, 256: 0.550},
}


def main() -> None:
    config = load_study(STUDY)
    models = resolve_models(config["models"])
    devices = with_gpus(resolve_pools(config["devices"]), 8)
    label = next(iter(devices))
    methods = list(expand_methods(config["methods"]))
    base = plan_study(config, models, devices, None, None, None, {})
    print("| step times | 8 GPUs | per configuration |\n|---|---|---|")
    hours, per_s = base.total_s / 3600, base.config_estimate_s
    print(f"| unknown (the plan's default) | {hours:.1f} h | {per_s:.1f} s |")
    for name, per_batch in SCENARIOS.items():
        steps = {
            (label, model): {
                ("inference", method, batch): StepTime(
                    step_s=step_s * (0.5 if "16" in method else 1.0), build_s=1.0
                )
                for method in methods
                for batch, step_s in per_batch.items()
            }
            for model in models
        }
        plan = plan_study(config, models, devices, None, None, steps, {})
        print(
            f"| {name} (assumed) | {plan.total_s / 3600:.1f} h | {plan.calibrated_config_s:.1f} s |"
        )


if __name__ == "__main__":
    main()
