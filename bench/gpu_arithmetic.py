"""For a session lent one NVIDIA GPU: what arithmetic, cuDNN autotuning and CUDA graphs do to
energy per image (issue 33, items 1 and 3), measured through the profile job itself
(joulebench.jobs.profile: the arithmetic set and restored, the graph captured before
warm-up), with a short protocol (3 windows of >= 1 s, the `fast` preset's sensor settings):

1. arithmetic: resnet50 and vit_base at batch 64 and 8 in fp32 (IEEE), tf32 and fp16 by
   autocast, cuDNN autotuning on (the default);
2. autotuning: resnet50 in tf32 and fp16 with cudnn_autotune: false, beside (1);
3. CUDA graphs: three small models at batch 1 and 8, fp16 by autocast, eager and replayed.

Writes under --out: arithmetic.csv (every profile column of every row) and arithmetic.md
(three short tables: energy and throughput, each against its reference). About 5 minutes
on an H100 (28 configurations). Models have random weights (timm names).

    PYTHONPATH=src python3 bench/gpu_arithmetic.py --out "$OUT" --device cuda:0

A dry run of the same code on a simulated GPU (the model on this CPU; its rows say
is_simulated, tf32 runs in IEEE there and CUDA graphs are skipped):

    PYTHONPATH=src python3 bench/gpu_arithmetic.py --out /tmp/a --device sim:h100 \\
        --large resnet18.a1_in1k --large-batches 1 --small mobilenetv3_small_100.lamb_in1k \\
        --small-batches 1
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

LARGE = ["resnet50.a1_in1k", "vit_base_patch16_224.augreg2_in21k_ft_in1k"]
SMALL = ["resnet18.a1_in1k", "mobilenetv3_small_100.lamb_in1k", "efficientnet_b0.ra_in1k"]
# The `fast` preset's sensor settings, with exactly 3 windows of >= 1 s and a short warm-up.
PROTOCOL = {
    "preset": "fast",
    "repeats": 3,
    "ci_target": None,
    "max_repeats": 3,
    "spread_repeats": 3,
    "min_repeat_s": 1.0,
    "warmup_min_s": 1.0,
    "warmup_max_s": 15.0,
    "pause_s": [0.1, 0.2],
}
ARITHMETIC = {
    "fp32": {"precision": "fp32"},
    "tf32": {"precision": "tf32"},
    "fp16-amp": {"precision": "fp16"},
}
NO_AUTOTUNE = {
    "tf32-no-autotune": {"precision": "tf32", "cudnn_autotune": False},
    "fp16-amp-no-autotune": {"precision": "fp16", "cudnn_autotune": False},
}
GRAPHS = {
    "fp16-amp": {"precision": "fp16"},
    "fp16-amp-graphs": {"precision": "fp16", "cuda_graphs": True},
}
SHOWN = [
    "section",
    "model",
    "method",
    "batch_size",
    "status",
    "fp32_math",
    "cudnn_autotune",
    "cuda_graphs",
    "energy_per_image_j",
    "energy_per_image_ci95_high_j",
    "throughput_img_s",
    "power_mean_w",
    "cuda_graph_capture_s",
    "runtime_check_rel_err",
    "reason",
]


def arguments(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for arithmetic.csv and arithmetic.md")
    p.add_argument("--device", default="cuda:0", help="a CUDA device (sim:<gpu>: a dry run)")
    p.add_argument("--large", nargs="+", default=LARGE, help="models of (1); the first: (2)")
    p.add_argument("--large-batches", nargs="+", type=int, default=[64, 8])
    p.add_argument("--small", nargs="+", default=SMALL, help="models of (3)")
    p.add_argument("--small-batches", nargs="+", type=int, default=[1, 8])
    return p.parse_args(argv)


def gpu_problem(device: str) -> str:
    """Why `device` cannot run this bench here (one line), or ""."""
    import torch

    from joulebench.core.backends import DeviceError, backend_for
    from joulebench.schedule.devices import require_measurable

    try:
        backend = backend_for(device)
    except (DeviceError, ValueError) as err:
        return str(err)
    if backend.runs_on_gpu and not torch.cuda.is_available():
        return (
            f"no CUDA GPU visible to torch {torch.__version__} (torch.cuda.is_available() is "
            f"False): run on one NVIDIA GPU, or --device sim:h100 for a dry run"
        )
    try:
        require_measurable(device.replace(":", ""), device)
    except (DeviceError, ValueError) as err:
        return "; ".join(str(err).splitlines())
    return ""


def jobs(args) -> list[tuple[str, str, dict, list[int]]]:
    """(section, model, methods, batch sizes): one profile job each, in the order run."""
    out = []
    for i, model in enumerate(args.large):
        methods = {**ARITHMETIC, **(NO_AUTOTUNE if i == 0 else {})}
        out.append(("arithmetic", model, methods, args.large_batches))
    out += [("graphs", model, GRAPHS, args.small_batches) for model in args.small]
    return out


def run(args, log):
    """Every job's rows (a DataFrame) through the profile code (job_spec,
    run_profile)."""
    import pandas as pd

    from joulebench.catalog.models import resolve_models
    from joulebench.jobs.job_spec import job_spec
    from joulebench.jobs.profile import ProfileJob, run_profile

    frames = []
    label = args.device.replace(":", "")
    for section, entry, methods, batches in jobs(args):
        model = resolve_models([entry])[0]
        study = {
            "methods": methods,
            "batch_sizes": batches,
            "protocol": PROTOCOL,
            # a kept check of this GPU (gpu_check.py --keep) states the rows; none is run here
            "profile": {"idle_pre_s": 1.0, "check_first": "off"},
        }
        spec = job_spec(args.device, study)
        rows = run_profile(ProfileJob(model, label, spec), log=log).rows
        frames.append(rows.assign(section=section))
    return pd.concat(frames, ignore_index=True)


def _mj(row) -> str:
    energy = row["energy_per_image_j"]
    if not math.isfinite(energy):
        return f"{row['status']}: {str(row['reason'])[:80]}" if row["status"] != "ok" else "?"
    half = row["energy_per_image_ci95_high_j"] - energy
    return f"{energy * 1e3:.3f} ± {half * 1e3:.3f}"


def _cell(value, spec: str = "") -> str:
    """A table cell: empty for a missing value (a skipped row's), else `value` formatted."""
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return format(value, spec)


def _ratio(value: float, reference: float) -> str:
    ok = math.isfinite(value) and math.isfinite(reference) and reference > 0
    return f"{value / reference:.2f}" if ok else ""


def table(rows, reference: dict[str, str], title: str) -> list[str]:
    """A markdown table of `rows`: each method's energy and throughput beside its reference
    method's (reference: method -> the method it is compared with) of the same model and
    batch size."""
    lines = [f"### {title}", ""]
    lines.append(
        "| model | batch | method | fp32_math | autotune | mJ/image (95% CI) | img/s | W | "
        "energy / ref | img/s / ref |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    key = rows.set_index(["model", "batch_size_requested", "method"])
    for _, row in rows.iterrows():
        ref_name = reference.get(row["method"], "")
        ref = key.loc[(row["model"], row["batch_size_requested"], ref_name)] if ref_name else None
        energy_ratio = (
            _ratio(row["energy_per_image_j"], ref["energy_per_image_j"]) if ref_name else ""
        )
        speed_ratio = _ratio(row["throughput_img_s"], ref["throughput_img_s"]) if ref_name else ""
        lines.append(
            f"| {row['model']} | {row['batch_size']} | {row['method']} | "
            f"{_cell(row['fp32_math'])} | {_cell(row['cudnn_autotune'])} | {_mj(row)} | "
            f"{_cell(row['throughput_img_s'], '.0f')} | {_cell(row['power_mean_w'], '.0f')} | "
            f"{energy_ratio} | {speed_ratio} |"
        )
    return [*lines, ""]


def report(rows, args, took_s: float) -> str:
    """arithmetic.md: what ran where, and the three tables."""
    import torch

    first = rows.iloc[0]
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else "none"
    lines = [
        "## GPU arithmetic, cuDNN autotuning and CUDA graphs (bench/gpu_arithmetic.py)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {first['device_name']} "
        f"({args.device}); driver {first['driver_version']}; torch {first['torch_version']}, "
        f"CUDA {first['cuda_version']}, cuDNN {cudnn}, timm {first['timm_version']}; "
        f"random weights; 3 windows of >= 1 s; {took_s / 60:.1f} min in all.",
        "",
    ]
    if bool(first["is_simulated"]):
        lines += ["**A dry run on a simulated GPU: the model ran on the CPU.**", ""]
    arithmetic = rows[rows["section"] == "arithmetic"]
    lines += table(
        arithmetic[~arithmetic["method"].str.endswith("no-autotune")],
        {"tf32": "fp32", "fp16-amp": "fp32"},
        "Arithmetic: fp32 (IEEE) vs tf32 vs fp16 by autocast (ref: fp32)",
    )
    tuned = arithmetic[arithmetic["model"] == arithmetic["model"].iloc[0]]
    tuned = tuned[tuned["method"].isin(["tf32", "fp16-amp", *NO_AUTOTUNE])]
    lines += table(
        tuned,
        {"tf32-no-autotune": "tf32", "fp16-amp-no-autotune": "fp16-amp"},
        "cuDNN autotuning off vs on (ref: the same precision, autotuned)",
    )
    graphs = rows[rows["section"] == "graphs"]
    lines += table(
        graphs, {"fp16-amp-graphs": "fp16-amp"}, "CUDA graphs vs eager, fp16 (ref: eager)"
    )
    captured = graphs[graphs["cuda_graphs"].astype(bool) & (graphs["status"] == "ok")]
    for _, row in captured.iterrows():
        lines.append(
            f"- {row['model']} bs{row['batch_size']}: capture {row['cuda_graph_capture_s']:.2f} s, "
            f"replay vs eager max rel err {row['runtime_check_rel_err']:.2g}"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = arguments(argv)
    problem = gpu_problem(args.device)
    if problem:
        print(f"gpu_arithmetic: error: {problem}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    rows = run(args, log=lambda line: print(line, file=sys.stderr, flush=True))
    took_s = time.monotonic() - start
    rows.to_csv(out / "arithmetic.csv", index=False)
    text = report(rows, args, took_s)
    (out / "arithmetic.md").write_text(text)
    print(text)
    print(rows[[c for c in SHOWN if c in rows]].to_string(index=False), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
