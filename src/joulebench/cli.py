"""The `joulebench` command line: one subcommand per stage, called by the workflow's rules."""

from __future__ import annotations

import argparse
import shlex
import sys

# Methods the ad-hoc `profile` command knows by name (the workflow reads `methods:`).
PRESETS = {
    "fp32": {"precision": "fp32"},
    "fp16-amp": {"precision": "fp16"},
    "bf16": {"precision": "bf16"},
    "fp32-channels-last": {"precision": "fp32", "channels_last": True},
    "fp16-amp-channels-last": {"precision": "fp16", "channels_last": True},
    "fp32-compile": {"precision": "fp32", "compile": "default"},
    "ort": {"runtime": "onnxruntime"},
    "trt": {"runtime": "tensorrt"},
    "trt-fp16": {"runtime": "tensorrt", "precision": "fp16"},
}


def _cmd_resolve(args) -> int:
    from joulebench.catalog.models import ModelSelectionError, resolve_models

    try:
        names = resolve_models(args.entries)
    except ModelSelectionError as exc:
        print(exc, file=sys.stderr)
        return 2
    print("\n".join(names))
    return 0


def _cmd_catalog(args) -> int:
    import torch

    from joulebench.catalog.build import build_catalog
    from joulebench.tables import CATALOG_COLUMNS, write_table

    torch.set_num_threads(args.threads)
    models = list(args.models)
    if args.models_file:
        with open(args.models_file) as fh:
            models += [line.strip() for line in fh if line.strip()]
    df = build_catalog(models)
    write_table(df, args.output, CATALOG_COLUMNS)
    failed = int((df["status"] != "ok").sum())
    print(f"catalog: {len(df)} models, {failed} failed -> {args.output}", file=sys.stderr)
    return 0


def _job_from_spec(model: str, device_label: str, spec: dict, idle_power_w: float, threads):
    from joulebench.measure.methods import parse_methods
    from joulebench.measure.profile import ProfileJob, job_fields_from_spec
    from joulebench.measure.protocol import ProtocolSettings

    estimate = {k: v for k, v in (spec.get("estimate") or {}).items() if v is not None}
    return ProfileJob(
        model=model,
        device_label=device_label,
        torch_device=spec["torch_device"],
        methods=list(parse_methods(spec["methods"]).values()),
        batch_sizes=[int(b) for b in spec["batch_sizes"]],
        settings=ProtocolSettings.from_dict(spec.get("protocol")),
        idle_power_w=idle_power_w,
        idle_pre_s=float(spec.get("idle_pre_s", 2.0)),
        threads=threads,
        oom_retry=bool(spec.get("oom_retry", True)),
        meter=spec.get("meter"),
        meter_options=estimate,
        **job_fields_from_spec(spec),  # phases, train, workload, onnx_cache
    )


def _unmeasurable(label: str, device: str) -> bool:
    """Say what is missing (one line, no traceback) when `device` cannot be measured here."""
    from joulebench.measure.devices import check_devices

    problems = check_devices({label: device})
    for problem in problems:
        print(f"joulebench: error: {problem}", file=sys.stderr)
    return bool(problems)


def _cmd_profile_job(args) -> int:
    """One workflow job: all methods x batch sizes of one model on one device."""
    import json

    from joulebench.measure.profile import run_profile
    from joulebench.tables import (
        PROFILE_COLUMNS,
        REPEAT_TABLE_COLUMNS,
        TRACE_TABLE_COLUMNS,
        read_table,
        write_table,
    )

    spec = json.loads(args.spec)
    if _unmeasurable(args.device_label, spec["torch_device"]):
        return 2
    idle_power_w = float("nan")
    if args.idle:
        idle_power_w = float(read_table(args.idle)["idle_power_w"].iloc[0])
    job = _job_from_spec(args.model, args.device_label, spec, idle_power_w, args.threads)
    out = run_profile(job)
    # The trace and repeats first: the rows file is the job's "done" marker.
    write_table(out.trace, args.trace_output, TRACE_TABLE_COLUMNS)
    write_table(out.repeats, args.repeats_output, REPEAT_TABLE_COLUMNS)
    write_table(out.rows, args.output, PROFILE_COLUMNS)
    return 0


def _cmd_profile(args) -> int:
    """Ad hoc: measure one model now and print a short table (no Snakemake)."""
    from joulebench.catalog.models import resolve_models
    from joulebench.catalog.workloads import is_workload
    from joulebench.measure.profile import run_profile
    from joulebench.tables import PROFILE_COLUMNS, write_table

    if _unmeasurable(args.device, args.device):
        return 2
    model = resolve_models([args.model])[0]
    methods = {m: PRESETS[m] for m in args.method}
    protocol = {"repeats": args.repeats, "min_repeat_s": args.min_repeat_s}
    spec = {
        "torch_device": args.device,
        "methods": methods,
        "batch_sizes": args.batch_size,
        "protocol": protocol,
        "meter": args.meter,
        "estimate": {"tdp_w": args.tdp_w},
        "phases": args.phase or ["inference"],
        "train": {"optimizer": args.optimizer},
        "workload": args.model if is_workload(args.model) else None,
        "onnx_cache": args.onnx_cache,
        "input_kind": args.input_kind,
    }
    job = _job_from_spec(model, args.device.replace(":", ""), spec, float("nan"), args.threads)
    out = run_profile(job)
    rows = out.rows
    table = rows[["model", "phase", "method", "batch_size", "status", "meter"]].copy()
    table["mJ/image"] = rows["energy_per_image_j"] * 1e3
    table["CI95 mJ"] = (rows["energy_per_image_ci95_high_j"] - rows["energy_per_image_j"]) * 1e3
    table["CV %"] = rows["energy_per_image_cv"] * 100
    table["img/s"] = rows["throughput_img_s"]
    table["W"] = rows["power_mean_w"]
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if rows["is_estimate"].fillna(False).any():
        print("energy is ESTIMATED (no hardware counter readable); see meter_reasons.")
    if args.output:
        write_table(rows, args.output, PROFILE_COLUMNS)
    return 0


def _cmd_idle(args) -> int:
    """The idle power baseline of a device."""
    import pandas as pd

    from joulebench.measure.meters import select_meter
    from joulebench.measure.protocol import measure_idle
    from joulebench.measure.provenance import device_name, software, utc_now
    from joulebench.tables import IDLE_COLUMNS, write_table

    if _unmeasurable(args.device_label, args.device):
        return 2
    if args.device.startswith("cuda"):
        import torch

        torch.zeros(1, device=args.device)  # the CUDA context, as during profiling
    started = utc_now()
    estimate = {"tdp_w": args.tdp_w} if args.tdp_w else {}
    meter, reasons = select_meter(args.device, prefer=args.meter, **estimate)
    with meter:
        idle = measure_idle(meter, args.duration_s)
    row = {
        "device_label": args.device_label,
        "torch_device": args.device,
        "device_name": device_name(args.device),
        "meter": idle.meter,
        "is_estimate": idle.is_estimate,
        "meter_reasons": "; ".join(reasons),
        "idle_power_w": idle.power_w,
        "duration_s": idle.duration_s,
        "energy_j": idle.energy_j,
        "flags": ";".join(idle.flags),
        "host": software()["host"],
        "start_time_utc": started,
    }
    write_table(pd.DataFrame([row]), args.output, IDLE_COLUMNS)
    label = "estimated " if idle.is_estimate else ""
    print(f"{args.device_label}: {label}idle power {idle.power_w:.2f} W ({idle.meter})")
    return 0


def _cmd_check(args) -> int:
    """Can this machine's energy numbers be trusted? A pass/warn/fail table and a JSON report."""
    import re

    from joulebench.measure.check import CheckSettings, check_cpu, check_gpu
    from joulebench.measure.check_report import FAIL, format_table, report_path, write_report

    device = "cuda:0" if args.device == "cuda" else args.device
    if not re.fullmatch(r"cpu|cuda:\d+", device):
        print(f"check: --device must be cpu, cuda or cuda:N, not {args.device!r}", file=sys.stderr)
        return 2
    settings = CheckSettings.quick() if args.quick else CheckSettings()
    if args.idle_s is not None:
        if not 0 < args.idle_s <= 3600:
            print("check: --idle-s must be in (0, 3600]", file=sys.stderr)
            return 2
        settings.idle_s = args.idle_s

    def progress(message: str) -> None:
        print(f"check {device}: {message}", file=sys.stderr, flush=True)

    if device == "cpu":
        options = {"tdp_w": args.tdp_w} if args.tdp_w else {}
        report = check_cpu(settings, progress, prefer=args.meter, **options)
    else:
        from joulebench.measure.check_targets import TorchGpuTarget
        from joulebench.measure.meters import MeterUnavailable

        try:
            import torch

            if not torch.cuda.is_available():
                raise MeterUnavailable("no-device", "torch sees no CUDA device")
            report = check_gpu(TorchGpuTarget(device), settings, progress)
        except MeterUnavailable as err:
            print(f"check {device}: cannot measure: {err}", file=sys.stderr)
            return 2
    data = report.as_dict()
    path = write_report(data, args.output or report_path(device))
    print(format_table(data))
    print(f"report -> {path}")
    return 1 if data["verdict"] == FAIL else 0


def _cmd_summary(args) -> int:
    """One tidy table: catalog + profile + accuracy."""
    from joulebench.analysis.summary import build_summary, write_summary
    from joulebench.tables import read_table

    catalog = read_table(args.catalog) if args.catalog else None
    accuracy = read_table(args.accuracy) if args.accuracy else None
    summary = build_summary(read_table(args.profile), catalog, accuracy)
    write_summary(summary, args.output, args.csv)
    print(f"summary: {len(summary)} rows -> {args.output}", file=sys.stderr)
    return 0


def _cmd_score(args) -> int:
    import json

    from joulebench.analysis.score import (
        DEFAULT_INVALID_FLAGS,
        DEFAULT_MAX_ENERGY_CV,
        SCORE_COLUMNS,
        score_summary,
    )
    from joulebench.analysis.summary import read_summary
    from joulebench.tables import write_table

    settings = json.loads(args.settings)
    scores = score_summary(
        read_summary(args.summary),
        grade_thresholds=settings.get("grade_thresholds"),
        reference_model=settings.get("reference_model"),
        energy=settings.get("energy", "total"),
        invalid_flags=settings.get("invalid_flags", DEFAULT_INVALID_FLAGS),
        max_energy_cv=settings.get("max_energy_cv", DEFAULT_MAX_ENERGY_CV),
    )
    write_table(scores, args.output, SCORE_COLUMNS)
    graded = int(scores["grade"].notna().sum()) if "grade" in scores else 0
    print(f"scores: {len(scores)} rows, {graded} graded -> {args.output}", file=sys.stderr)
    return 0


def _cmd_fits(args) -> int:
    import json

    from joulebench.analysis.fits import all_fits, write_fits
    from joulebench.analysis.score import DEFAULT_INVALID_FLAGS, DEFAULT_MAX_ENERGY_CV
    from joulebench.analysis.summary import read_summary

    settings = json.loads(args.settings)
    summary = read_summary(args.summary)
    methods = list(summary["method"].dropna().unique())
    baseline = settings.get("baseline_method")
    if baseline not in methods:  # unset, or a published summary without it: its first method
        if baseline:
            print(f"fits: baseline method {baseline!r} not in the summary", file=sys.stderr)
        baseline = methods[0] if methods else None
    tables = all_fits(
        summary,
        baseline_method=baseline,
        energy=settings.get("energy", "total"),
        min_n=int(settings.get("min_models", 3)),
        invalid_flags=settings.get("invalid_flags", DEFAULT_INVALID_FLAGS),
        max_energy_cv=settings.get("max_energy_cv", DEFAULT_MAX_ENERGY_CV),
    )
    for path in write_fits(tables, args.outdir):
        print(f"fits -> {path}", file=sys.stderr)
    return 0


def _cmd_figures(args) -> int:
    import json

    from joulebench.analysis.fits import read_fits
    from joulebench.analysis.summary import read_summary
    from joulebench.report.figures import render_all
    from joulebench.tables import read_table

    settings = json.loads(args.settings)
    trace = read_table(args.trace) if args.trace else None
    paths = render_all(
        read_summary(args.summary),
        read_table(args.scores),
        read_fits(args.fits_dir),
        trace,
        args.outdir,
        group={k: v for k, v in (settings.get("group") or {}).items() if v is not None},
        trace_config={k: v for k, v in (settings.get("trace") or {}).items() if v is not None},
    )
    print(f"figures: {len(paths)} -> {args.outdir}", file=sys.stderr)
    return 0


def _cmd_reference(args) -> int:
    """timm's published accuracy for the catalog's models (the shipped copy unless set)."""
    import json

    from joulebench.accuracy.reference import (
        img_sizes_from_catalog,
        load_tables,
        reference_accuracy,
    )
    from joulebench.tables import ACCURACY_COLUMNS, read_table, write_table

    settings = json.loads(args.settings)
    catalog = read_table(args.catalog)
    tables = load_tables(
        settings.get("cache_dir", "data/reference"),
        local_dir=settings.get("local_dir"),
        commit=settings.get("commit"),
        timeout_s=float(settings.get("timeout_s", 10.0)),
        offline=bool(settings.get("offline", False)),
    )
    rows = reference_accuracy(list(catalog["model"]), img_sizes_from_catalog(catalog), tables)
    write_table(rows, args.output, ACCURACY_COLUMNS)
    found = int(rows["top1"].notna().sum())
    print(
        f"reference accuracy ({tables.origin}): {found} of {len(rows)} models -> {args.output}",
        file=sys.stderr,
    )
    return 0


def _cmd_prepare(args) -> int:
    """Preprocess a dataset once for one input configuration into cached shards."""
    import json

    from joulebench.accuracy.shards import prepare

    shard = prepare(
        json.loads(args.source),
        json.loads(args.input_config),
        args.out_root,
        workers=args.workers,
        shard_size=args.shard_size,
    )
    print(f"prepared -> {shard}", file=sys.stderr)
    return 0


def _cmd_accuracy(args) -> int:
    """Measured top-1/top-5 of models sharing one shard folder, where weights exist locally."""
    from joulebench.accuracy.measured import measure_models
    from joulebench.tables import ACCURACY_COLUMNS, write_table

    rows = measure_models(
        args.models,
        args.shard_dir,
        checkpoints=args.checkpoints,
        batch_size=args.batch_size,
        device=args.device,
        allow_download=args.allow_download,
    )
    write_table(rows, args.output, ACCURACY_COLUMNS)
    return 0


def _cmd_accuracy_table(args) -> int:
    """Measured accuracy where there is one, else the reference: every value with its source."""
    import pandas as pd

    from joulebench.accuracy.reference import combine
    from joulebench.tables import ACCURACY_COLUMNS, read_table, write_table

    measured = [read_table(p) for p in args.measured]
    measured = pd.concat(measured, ignore_index=True) if measured else None
    rows = combine(measured, read_table(args.reference))
    write_table(rows, args.output, ACCURACY_COLUMNS)
    counts = rows["accuracy_source"].value_counts().to_dict()
    print(f"accuracy: {counts} -> {args.output}", file=sys.stderr)
    return 0


def _cmd_webapp(args) -> int:
    """The study as one self-contained HTML page (works from file://, no network)."""
    import json

    from joulebench.analysis.summary import read_summary
    from joulebench.report.webapp import build_page
    from joulebench.tables import read_table

    settings = json.loads(args.settings)
    path = build_page(
        read_summary(args.summary),
        read_table(args.scores),
        args.output,
        grade_thresholds=settings.get("grade_thresholds"),
    )
    print(f"web page -> {path}", file=sys.stderr)
    return 0


def _cmd_concat(args) -> int:
    import pandas as pd

    from joulebench.tables import (
        CATALOG_COLUMNS,
        PROFILE_COLUMNS,
        TableError,
        read_table,
        write_table,
    )

    columns = {"catalog": CATALOG_COLUMNS, "profile": PROFILE_COLUMNS}[args.table]
    parts, damaged = [], []
    for path in args.parts:
        try:
            parts.append(read_table(path))
        except TableError as exc:
            damaged.append((path, exc))
    if damaged:
        for _, exc in damaged:
            print(f"joulebench: error: {exc}", file=sys.stderr)
        redo = "measures" if args.table == "profile" else "counts"
        print(
            f"Delete the damaged file(s), and the next run {redo} those models again:\n  rm "
            + " ".join(shlex.quote(path) for path, _ in damaged),
            file=sys.stderr,
        )
        return 2
    write_table(pd.concat(parts, ignore_index=True), args.output, columns)
    return 0


def _cmd_devices(args) -> int:
    """What `devices: auto` (or the study's devices) picks, and each device's meter."""
    from joulebench.measure.devices import describe_devices, format_devices
    from joulebench.study import load_study

    spec = load_study(args.configfile)["devices"] if args.configfile else "auto"
    infos, why_no_gpu = describe_devices(spec)
    print(format_devices(infos, why_no_gpu, spec))
    return 2 if any(info.problems for info in infos) else 0


def _cmd_plan(args) -> int:
    """The cost of a study before it runs: configurations, measuring and wall time."""
    from pathlib import Path

    from joulebench.analysis.plan import format_plan, plan_study
    from joulebench.catalog.models import resolve_models
    from joulebench.measure.devices import resolve_devices
    from joulebench.study import load_study, workflow_root

    config = load_study(args.configfile)
    if config.get("from_summary"):
        print("from_summary: nothing is measured (scores, fits, figures and the page only)")
        return 0
    models = resolve_models(config["models"])
    devices = resolve_devices(config["devices"])
    profile = Path(args.profile or workflow_root() / "profiles" / "slurm")
    if profile.resolve().is_relative_to(Path.cwd()):
        profile = profile.resolve().relative_to(Path.cwd())
    study = args.configfile or "config.yaml (the default study)"
    print(f"study: {study}")
    print(format_plan(plan_study(config, models, devices, profile)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="joulebench",
        description="Energy per image of image-classification models, beside their accuracy.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("resolve", help="print the exact timm names that model entries select")
    p.add_argument("entries", nargs="+", help="names, bare architectures, globs, all-pretrained")
    p.set_defaults(func=_cmd_resolve)

    p = sub.add_parser("catalog", help="static properties (params, FLOPs...) of models")
    p.add_argument("models", nargs="*", help="exact timm names")
    p.add_argument("--models-file", help="a file with one exact timm name per line")
    p.add_argument("--output", "-o", required=True, help="parquet to write")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.set_defaults(func=_cmd_catalog)

    p = sub.add_parser("concat", help="concatenate per-job tables into one")
    p.add_argument("table", choices=["catalog", "profile"])
    p.add_argument("parts", nargs="+")
    p.add_argument("--output", "-o", required=True)
    p.set_defaults(func=_cmd_concat)

    p = sub.add_parser("profile", help="measure one model now and print a short table")
    p.add_argument(
        "model", help="a timm name (exact, bare architecture) or a workload (file.py:function)"
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument(
        "--method", action="append", choices=sorted(PRESETS), help="repeatable (default fp32)"
    )
    p.add_argument("--batch-size", type=int, action="append", help="repeatable (default 1)")
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--min-repeat-s", type=float, default=5.0)
    p.add_argument("--meter", choices=["nvml", "rapl", "estimate"], help="force a meter")
    p.add_argument("--tdp-w", type=float, help="CPU power for the estimate meter")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.add_argument("--output", "-o", help="also write the rows to this parquet")
    p.add_argument(
        "--phase",
        action="append",
        choices=["inference", "train"],
        help="repeatable (default inference)",
    )
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd", help="train phase")
    p.add_argument("--onnx-cache", default="data/onnx", help="exported models (runtime methods)")
    p.add_argument(
        "--input-kind", choices=["random", "zeros"], default="random", help="synthetic batch"
    )
    p.set_defaults(func=_cmd_profile, method=None, batch_size=None)

    p = sub.add_parser("profile-job", help="(workflow) all methods x batch sizes of one model")
    p.add_argument("model")
    p.add_argument("--device-label", required=True)
    p.add_argument("--spec", required=True, help="JSON: torch_device, methods, batch_sizes...")
    p.add_argument("--idle", help="the device's idle baseline parquet")
    p.add_argument("--threads", type=int)
    p.add_argument("--output", required=True)
    p.add_argument("--repeats-output", required=True)
    p.add_argument("--trace-output", required=True)
    p.set_defaults(func=_cmd_profile_job)

    p = sub.add_parser("reference", help="timm's published accuracy for the catalog's models")
    p.add_argument("--catalog", required=True)
    p.add_argument("--settings", default="{}", help="JSON: the config's reference section")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_reference)

    p = sub.add_parser("prepare", help="preprocess a dataset into shards for one input config")
    p.add_argument("--source", required=True, help="JSON: the config's dataset section")
    p.add_argument("--input-config", required=True, help="JSON: a model's data config")
    p.add_argument("--out-root", default="data/prepared")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--shard-size", type=int, default=512)
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser("accuracy", help="measured top-1/top-5 on prepared shards")
    p.add_argument("models", nargs="+")
    p.add_argument("--shard-dir", required=True)
    p.add_argument("--checkpoints", help="a folder of <model>.safetensors / .pth files")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default="cpu")
    p.add_argument("--allow-download", action="store_true")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_accuracy)

    p = sub.add_parser("accuracy-table", help="measured accuracy, else the reference")
    p.add_argument("--reference", required=True)
    p.add_argument("--measured", nargs="*", default=[])
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_accuracy_table)

    p = sub.add_parser("summary", help="join catalog, profile and accuracy into one table")
    p.add_argument("--profile", required=True)
    p.add_argument("--catalog")
    p.add_argument("--accuracy")
    p.add_argument("--output", required=True, help="summary parquet")
    p.add_argument("--csv", help="also write the summary as CSV")
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser("score", help="Pareto front, efficiency index, grades, energy index")
    p.add_argument("summary", help="a summary parquet or csv (ours or published)")
    p.add_argument("--settings", default="{}", help="JSON: the config's score section")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("fits", help="energy vs FLOPs/params/activations, accuracy vs energy")
    p.add_argument("summary")
    p.add_argument("--settings", default="{}", help="JSON: the config's fits section")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_fits)

    p = sub.add_parser("figures", help="every figure of the study, PDF and PNG")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument("--fits-dir", required=True)
    p.add_argument("--trace", help="a power-trace parquet for the trace figure")
    p.add_argument("--settings", default="{}", help="JSON: the config's figures section")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_figures)

    p = sub.add_parser("webapp", help="the interactive web page, one offline HTML file")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument("--settings", default="{}", help="JSON: the config's score section")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_webapp)

    p = sub.add_parser(
        "check", help="can this machine's energy numbers be trusted? (run before a study)"
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--quick", action="store_true", help="short runs: a first look, not a study")
    p.add_argument("--idle-s", type=float, help="seconds of idle power (default 10)")
    p.add_argument("--meter", choices=["rapl", "estimate"], help="CPU: force a meter")
    p.add_argument("--tdp-w", type=float, help="CPU power for the estimate meter")
    p.add_argument("--output", "-o", help="default results/check/<device>.json")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("idle", help="measure the idle power baseline of a device")
    p.add_argument("--device-label", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--duration-s", type=float, default=10.0)
    p.add_argument("--meter", choices=["nvml", "rapl", "estimate"])
    p.add_argument("--tdp-w", type=float)
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_idle)

    p = sub.add_parser("devices", help="the devices a study measures and each one's meter")
    p.add_argument("--configfile", help="a study file (default: devices: auto)")
    p.set_defaults(func=_cmd_devices)

    p = sub.add_parser("plan", help="what a study costs: configurations and time, before it runs")
    p.add_argument("--configfile", help="a study file over config.yaml (default: config.yaml)")
    p.add_argument("--profile", help="the SLURM profile folder (default: profiles/slurm)")
    p.set_defaults(func=_cmd_plan)

    args = parser.parse_args(argv)
    if args.command == "profile":
        args.method = args.method or ["fp32"]
        args.batch_size = args.batch_size or [1]
    from joulebench.catalog.models import ModelSelectionError
    from joulebench.study import ConfigError
    from joulebench.tables import TableError

    try:
        return args.func(args)
    except (ConfigError, ModelSelectionError, TableError) as exc:
        print(f"joulebench: error: {exc}", file=sys.stderr)  # bad input: no traceback
        return 2


if __name__ == "__main__":
    sys.exit(main())
