"""The `joulebench` command line: one subcommand per stage, called by the workflow's rules.

Each command parses its arguments and calls one function of the stage's module; the logic
lives there (and is tested there). A rule's `--settings` JSON is exactly that function's
keyword arguments, built from the config (rule_settings; an unknown key is an error). Defaults
of options equal the schema's (workflow/schemas/config.schema.yaml; tests/test_config.py).
The map of the package: docs/design.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable

from joulebench.safe_text import printable


def _say(text, *, file=None, **kwargs) -> None:
    """Print for a person at a terminal: names from data (a published summary's) may hold
    escape sequences, so every control, bidi or invisible character is shown as its escape
    (safe_text.printable); line breaks stay. Every output of a command goes through here."""
    print(printable(text, newlines=True), file=file or sys.stdout, **kwargs)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """warnings.showwarning through printable (a warning may quote a summary's column names)."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    _say(text, file=file or sys.stderr, end="")


def _number(
    kind: type = float, *, minimum=None, above=None, maximum=None
) -> Callable[[str], float]:
    """An argparse `type=` for a finite number of `kind` in range, named as the schema names
    ranges (minimum, exclusive minimum `above`, maximum): the one way every numeric option
    is range-checked on the way in, so a bad value is a one-line usage error."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            word = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {word}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be > {above}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {text}")
        return value

    return parse


_COUNT = _number(int, minimum=1)  # threads, batch sizes, repeats, workers, GPUs, rows
_POSITIVE = _number(above=0)  # watts, seconds, ms, images per second


def _json(option: str, text: str) -> dict:
    """A JSON-object option (`--settings`, `--spec`, ...); ConfigError, one line, if it is not."""
    from joulebench.study import ConfigError

    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{option}: not valid JSON ({err.msg} at character {err.pos})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option}: must be a JSON object {{...}}, not {type(value).__name__}")
    return value


def _settings(command: str, text: str) -> dict:
    """`--settings` JSON as the keyword arguments of the function `command` calls, as the
    workflow builds them (rule_settings); a key it does not take is an error."""
    from joulebench.rule_settings import keywords
    from joulebench.study import settings_for

    return settings_for(command, _json("--settings", text), keywords(command))


def _cmd_resolve(args) -> int:
    from joulebench.catalog.models import ModelSelectionError, resolve_models

    try:
        names = resolve_models(args.entries)
    except ModelSelectionError as exc:
        _say(exc, file=sys.stderr)
        return 2
    _say("\n".join(names))
    return 0


def _cmd_catalog(args) -> int:
    from joulebench.catalog.build import run_catalog

    run_catalog(args.models, args.output, models_file=args.models_file, threads=args.threads)
    return 0


def _cmd_concat(args) -> int:
    from joulebench.tables import concat_tables

    concat_tables(args.table, args.parts, args.output)
    return 0


def _cmd_profile_job(args) -> int:
    """One workflow job: all methods x batch sizes of one model on one device."""
    from joulebench.measure.devices import pin_to_gpu
    from joulebench.measure.profile import run_job

    run_job(
        args.model,
        args.device_label,
        pin_to_gpu(_json("--spec", args.spec), args.gpu_uuid),
        idle=args.idle,
        threads=args.threads,
        output=args.output,
        repeats_output=args.repeats_output,
        trace_output=args.trace_output,
    )
    return 0


def _cmd_profile(args) -> int:
    """Ad hoc: measure one model now and print a short table (no Snakemake)."""
    from joulebench.measure.profile import format_rows, profile_now

    rows = profile_now(
        args.model,
        device=args.device,
        methods=args.method or ["fp32"],
        batch_sizes=args.batch_size or [1],
        repeats=args.repeats,
        min_repeat_s=args.min_repeat_s,
        meter=args.meter,
        tdp_w=args.tdp_w,
        threads=args.threads,
        phases=args.phase or ["inference"],
        optimizer=args.optimizer,
        onnx_cache=args.onnx_cache,
        input_kind=args.input_kind,
        output=args.output,
    )
    _say(format_rows(rows))
    return _nothing_measured(rows)


def _nothing_measured(rows) -> int:
    """0 when a configuration was measured; else 1, with each reason on stderr."""
    if (rows["status"] == "ok").any():
        return 0
    reasons = dict.fromkeys(
        f"{s}: {r}" for s, r in zip(rows["status"], rows["reason"], strict=True)
    )
    _say("joulebench: error: nothing was measured: " + "; ".join(reasons), file=sys.stderr)
    return 1


def _cmd_idle(args) -> int:
    """The idle power baseline of a device."""
    from joulebench.measure.devices import pin_to_gpu
    from joulebench.measure.idle import idle_line, run_idle

    row = run_idle(
        args.device_label,
        pin_to_gpu({"torch_device": args.device}, args.gpu_uuid)["torch_device"],
        args.output,
        duration_s=args.duration_s,
        meter=args.meter,
        tdp_w=args.tdp_w,
    )
    _say(idle_line(row))
    return 0


def _cmd_check(args) -> int:
    """Can this machine's energy numbers be trusted? A pass/warn/fail table and a JSON report."""
    from joulebench.measure.check.command import run_check
    from joulebench.measure.check.report import FAIL, format_table
    from joulebench.measure.meters import MeterUnavailable

    def progress(message: str) -> None:
        _say(f"check {args.device}: {message}", file=sys.stderr, flush=True)

    try:
        report, path = run_check(
            args.device,
            quick=args.quick,
            idle_s=args.idle_s,
            meter=args.meter,
            tdp_w=args.tdp_w,
            output=args.output,
            progress=progress,
        )
    except MeterUnavailable as err:
        _say(f"check {args.device}: cannot measure: {err}", file=sys.stderr)
        return 2
    _say(format_table(report))
    _say(f"report -> {path}")
    return 1 if report["verdict"] == FAIL else 0


def _cmd_summary(args) -> int:
    """One tidy table: catalog + profile + accuracy."""
    from joulebench.analysis.summary import run_summary

    run_summary(
        args.profile, args.output, catalog=args.catalog, accuracy=args.accuracy, csv=args.csv
    )
    return 0


def _cmd_score(args) -> int:
    from joulebench.analysis.score import run_score

    run_score(args.summary, args.output, **_settings("score", args.settings))
    return 0


def _cmd_fits(args) -> int:
    from joulebench.analysis.fits import run_fits

    run_fits(args.summary, args.outdir, **_settings("fits", args.settings))
    return 0


def _cmd_best_configs(args) -> int:
    from joulebench.analysis.best_configs import run_best_configs

    run_best_configs(args.summary, args.output, **_settings("best-configs", args.settings))
    return 0


def _cmd_recommend(args) -> int:
    """Models and configurations meeting the constraints, ranked by energy per image."""
    from joulebench.analysis.best_configs import scoped
    from joulebench.analysis.recommend import format_recommendation, recommend
    from joulebench.analysis.summary import read_summary

    rec = recommend(
        scoped(read_summary(args.summary), args.energy_scope, args.energy),
        min_top1=args.min_top1,
        max_latency_ms=args.max_latency_ms,
        min_throughput_img_s=args.min_throughput,
        device=args.device,
        current=args.current,
        energy=args.energy,
        all_configs=args.all,
    )
    _say(format_recommendation(rec, top=args.top))
    return 0


def _cmd_label(args) -> int:
    """One model's energy label: a card (SVG and PNG) with energy, uncertainty, provenance."""
    from joulebench.report.label import run_label

    paths = run_label(
        args.summary,
        args.model,
        device=args.device,
        method=args.method,
        batch_size=args.batch_size,
        output=args.output,
    )
    _say("\n".join(str(p) for p in paths))
    return 0


def _cmd_figures(args) -> int:
    from joulebench.report.figures import run_figures

    settings = _settings("figures", args.settings)
    run_figures(
        args.summary,
        args.scores,
        args.fits_dir,
        args.outdir,
        trace_path=args.trace,
        best_configs_path=args.best_configs,
        **settings,
    )
    return 0


def _cmd_reference(args) -> int:
    """timm's published accuracy for the catalog's models (the shipped copy unless set)."""
    from joulebench.accuracy.reference import run_reference

    run_reference(args.catalog, args.output, **_settings("reference", args.settings))
    return 0


def _cmd_prepare(args) -> int:
    """Preprocess a dataset once for one input configuration into cached shards."""
    from joulebench.accuracy.shards import prepare

    shard = prepare(
        _json("--source", args.source),
        _json("--input-config", args.input_config),
        args.out_root,
        workers=args.workers,
        shard_size=args.shard_size,
    )
    _say(f"prepared -> {shard}", file=sys.stderr)
    return 0


def _cmd_accuracy(args) -> int:
    """Measured top-1/top-5 of models sharing one shard folder, where weights exist locally."""
    from joulebench.accuracy.measured import run_accuracy

    run_accuracy(
        args.models,
        args.shard_dir,
        args.output,
        checkpoints=args.checkpoints,
        batch_size=args.batch_size,
        device=args.device,
        allow_download=args.allow_download,
    )
    return 0


def _cmd_accuracy_table(args) -> int:
    """Measured accuracy where there is one, else the reference: every value with its source."""
    from joulebench.accuracy.reference import run_accuracy_table

    run_accuracy_table(args.reference, args.measured, args.output)
    return 0


def _cmd_webapp(args) -> int:
    """The study as one self-contained HTML page (works from file://, no network)."""
    from joulebench.report.webapp import run_webapp

    run_webapp(args.summary, args.scores, args.output, **_settings("webapp", args.settings))
    return 0


def _cmd_devices(args) -> int:
    """What `devices: auto` (or the study's devices) picks, and each device's meter."""
    from joulebench.measure.devices import devices_for
    from joulebench.prerun import load_study

    study = load_study(args.configfile) if args.configfile else None
    text, measurable = devices_for(study, simulated=args.sim)
    _say(text)
    return 0 if measurable else 2


def _cmd_plan(args) -> int:
    """The cost of a study before it runs: configurations, measuring and wall time."""
    from joulebench.plan import plan_for

    _say(plan_for(args.configfile, args.profile, args.gpus))
    return 0


def _cmd_status(args) -> int:
    """A live view of a run: done, failed and left per device, ETA, what is measured now."""
    from pathlib import Path

    from joulebench.status.view import run_status

    if not Path(args.directory).is_dir():
        _say(f"joulebench: error: --directory {args.directory}: no such folder", file=sys.stderr)
        return 2
    return run_status(
        args.directory,
        args.configfile,
        as_json=args.json,
        watch_s=args.watch,
        failures=args.failures,
        say=_say,
    )


def _cmd_columns(args) -> int:
    """Every output table's columns (the registry in joulebench.tables)."""
    from joulebench.tables import columns_markdown, columns_text

    _say(columns_markdown() if args.markdown else columns_text(args.table), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line; defaults come from the stage functions (equal to the schema's)."""
    from joulebench.accuracy.measured import measure_models
    from joulebench.accuracy.shards import prepare
    from joulebench.measure.backends import meter_names, spellings
    from joulebench.measure.methods import PRESETS
    from joulebench.measure.profile import DEFAULT_ONNX_CACHE, ProtocolSettings
    from joulebench.measure.train import OPTIMIZERS, TrainSpec
    from joulebench.status.view import run_status
    from joulebench.study import IDLE_DURATION_S
    from joulebench.tables import INPUT_KINDS, PHASES, TABLES

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
    p.add_argument("--threads", type=_COUNT, default=1, help="torch CPU threads (default 1)")
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
    p.add_argument("--device", default="cpu", help=f"{spellings()} (default cpu)")
    p.add_argument(
        "--method", action="append", choices=sorted(PRESETS), help="repeatable (default fp32)"
    )
    p.add_argument("--batch-size", type=_COUNT, action="append", help="repeatable (default 1)")
    p.add_argument("--repeats", type=_COUNT, default=ProtocolSettings.repeats)
    p.add_argument("--min-repeat-s", type=_number(minimum=0), default=ProtocolSettings.min_repeat_s)
    p.add_argument("--meter", choices=meter_names(), help="force a meter")
    p.add_argument("--tdp-w", type=_POSITIVE, help="CPU power for the estimate meter")
    p.add_argument("--threads", type=_COUNT, help="torch CPU threads")
    p.add_argument("--output", "-o", help="also write the rows to this parquet")
    p.add_argument(
        "--phase", action="append", choices=list(PHASES), help="repeatable (default inference)"
    )
    p.add_argument(
        "--optimizer", choices=list(OPTIMIZERS), default=TrainSpec.optimizer, help="train phase"
    )
    p.add_argument(
        "--onnx-cache", default=DEFAULT_ONNX_CACHE, help="exported models (runtime methods)"
    )
    p.add_argument(
        "--input-kind", choices=list(INPUT_KINDS), default=INPUT_KINDS[0], help="synthetic batch"
    )
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("profile-job", help="(workflow) all methods x batch sizes of one model")
    p.add_argument("model")
    p.add_argument("--device-label", required=True)
    p.add_argument("--spec", required=True, help="JSON: torch_device, methods, batch_sizes...")
    p.add_argument("--idle", help="the device's idle baseline parquet")
    p.add_argument("--threads", type=_COUNT)
    p.add_argument("--output", required=True)
    p.add_argument("--repeats-output", required=True)
    p.add_argument("--trace-output", required=True)
    p.add_argument("--gpu-uuid", help="pin to this GPU (CUDA_VISIBLE_DEVICES); it is cuda:0")
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
    p.add_argument("--workers", type=_COUNT, default=_default(prepare, "workers"))
    p.add_argument("--shard-size", type=_COUNT, default=_default(prepare, "shard_size"))
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser("accuracy", help="measured top-1/top-5 on prepared shards")
    p.add_argument("models", nargs="+")
    p.add_argument("--shard-dir", required=True)
    p.add_argument("--checkpoints", help="a folder of <model>.safetensors / .pth files")
    p.add_argument("--batch-size", type=_COUNT, default=_default(measure_models, "batch_size"))
    p.add_argument("--device", default=_default(measure_models, "device"))
    p.add_argument("--allow-download", action="store_true")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_accuracy)

    p = sub.add_parser("accuracy-table", help="measured accuracy, else the reference")
    p.add_argument("--reference", required=True)
    p.add_argument("measured", nargs="*", default=[], help="measured accuracy tables (after --)")
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
    p.add_argument("--settings", default="{}", help="JSON: score section, energy_scope, carbon")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("fits", help="energy vs FLOPs/params/activations, accuracy vs energy")
    p.add_argument("summary")
    p.add_argument("--settings", default="{}", help="JSON: the config's fits section")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_fits)

    p = sub.add_parser(
        "best-configs", help="each model's least-energy configuration, overall and constrained"
    )
    p.add_argument("summary", help="a summary parquet or csv (ours or published)")
    p.add_argument(
        "--settings", default="{}", help="JSON: the config's decisions section (+ score rules)"
    )
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_best_configs)

    p = sub.add_parser(
        "recommend", help="which model and configuration for an accuracy and latency budget"
    )
    p.add_argument("--summary", default="results/summary.parquet", help="ours or published")
    p.add_argument(
        "--min-top1", type=_number(minimum=0, maximum=100), help="top-1 accuracy floor, percent"
    )
    p.add_argument("--max-latency-ms", type=_POSITIVE, help="time per batch budget, ms")
    p.add_argument("--min-throughput", type=_POSITIVE, help="images per second floor")
    p.add_argument("--device", help="only this device label (e.g. cpu, h200)")
    p.add_argument("--current", help="MODEL:METHOD:BATCH run today: show each saving against it")
    p.add_argument("--energy", choices=["total", "dynamic"], default="total")
    p.add_argument(
        "--energy-scope",
        choices=["device", "node"],
        default="device",
        help="rank by the device's energy or the whole node's (GPU + CPU + DRAM)",
    )
    p.add_argument("--all", action="store_true", help="every configuration, not one per model")
    p.add_argument("--top", type=_COUNT, default=10, help="rows shown per device (10)")
    p.set_defaults(func=_cmd_recommend)

    p = sub.add_parser("label", help="a model's energy label: SVG and PNG card to share")
    p.add_argument("model", help="a model of the summary")
    p.add_argument("--summary", default="results/summary.parquet", help="ours or published")
    p.add_argument("--device", help="device label (default: where its energy is least)")
    p.add_argument("--method", help="method (default: its least-energy configuration)")
    p.add_argument("--batch-size", type=_COUNT, help="requested batch size")
    p.add_argument("--output", "-o", help="path stem (default results/labels/<device>/<model>)")
    p.set_defaults(func=_cmd_label)

    p = sub.add_parser("figures", help="every figure of the study, PDF and PNG")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument("--fits-dir", required=True)
    p.add_argument("--trace", help="a power-trace parquet for the trace figure")
    p.add_argument("--best-configs", help="best_configs parquet (default: from the summary)")
    p.add_argument("--settings", default="{}", help="JSON: figures section, less trace_table")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_figures)

    p = sub.add_parser("webapp", help="the interactive web page, one offline HTML file")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument("--settings", default="{}", help="JSON: the score's grade_thresholds")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_webapp)

    p = sub.add_parser(
        "check", help="can this machine's energy numbers be trusted? (run before a study)"
    )
    p.add_argument("--device", default="cpu", help=f"{spellings()} (default cpu)")
    p.add_argument("--quick", action="store_true", help="short runs: a first look, not a study")
    p.add_argument("--idle-s", type=_POSITIVE, help="seconds of idle power (default 10)")
    p.add_argument("--meter", choices=meter_names(), help="force one of the device's meters")
    p.add_argument("--tdp-w", type=_POSITIVE, help="CPU power for the estimate meter")
    p.add_argument("--output", "-o", help="default results/check/<device>.json")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("idle", help="measure the idle power baseline of a device")
    p.add_argument("--device-label", required=True)
    p.add_argument("--device", default="cpu", help=spellings())
    p.add_argument("--duration-s", type=_POSITIVE, default=IDLE_DURATION_S)
    p.add_argument("--meter", choices=meter_names())
    p.add_argument("--tdp-w", type=_POSITIVE)
    p.add_argument("--output", required=True)
    p.add_argument("--gpu-uuid", help="pin to this GPU (CUDA_VISIBLE_DEVICES); it is cuda:0")
    p.set_defaults(func=_cmd_idle)

    p = sub.add_parser("devices", help="the devices a study measures and each one's meter")
    p.add_argument("--configfile", help="a study file (default: devices: auto)")
    p.add_argument("--sim", action="store_true", help="also list the simulated GPUs (sim:<gpu>)")
    p.set_defaults(func=_cmd_devices)

    p = sub.add_parser("plan", help="what a study costs: configurations and time, before it runs")
    p.add_argument("--configfile", help="a study file over config.yaml (default: config.yaml)")
    p.add_argument("--profile", help="the SLURM profile folder (default: profiles/slurm)")
    p.add_argument("--gpus", type=_COUNT, help="as on a node with this many GPUs like the study's")
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser("status", help="a live view of a run: done, failed, left, ETA (read-only)")
    p.add_argument("--configfile", help="the run's study file over config.yaml")
    p.add_argument("--directory", "-d", default=".", help="the run's working folder (default .)")
    p.add_argument("--json", action="store_true", help="the same as one JSON object")
    p.add_argument("--watch", type=_POSITIVE, metavar="SECONDS", help="refresh until Ctrl-C")
    p.add_argument(
        "--failures",
        type=_COUNT,
        default=_default(run_status, "failures"),
        help="how many of the last failures to show",
    )
    p.set_defaults(func=_cmd_status)

    p = sub.add_parser("columns", help="every output table's columns: unit, meaning, producer")
    p.add_argument("--markdown", action="store_true", help="as docs/columns.md")
    p.add_argument("--table", choices=list(TABLES), help="only this table")
    p.set_defaults(func=_cmd_columns)
    return parser


def _default(func, name: str):
    """The default of `func`'s parameter `name`: one place in the code holds it."""
    import inspect

    return inspect.signature(func).parameters[name].default


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from joulebench.analysis.best_configs import DecisionError
    from joulebench.analysis.summary import SummaryError
    from joulebench.catalog.models import ModelSelectionError
    from joulebench.catalog.workloads import WorkloadError
    from joulebench.measure.backends import DeviceError
    from joulebench.measure.protocol import SettingsError
    from joulebench.study import ConfigError
    from joulebench.table_io import TableError, WriteError

    try:
        with warnings.catch_warnings():  # restores showwarning after the command
            warnings.showwarning = _show_warning
            return args.func(args)
    except (
        ConfigError,
        DecisionError,
        DeviceError,
        ModelSelectionError,
        SettingsError,
        SummaryError,
        TableError,
        WorkloadError,
        WriteError,
    ) as exc:
        _say(f"joulebench: error: {exc}", file=sys.stderr)  # bad input: no traceback
        return 2
    except BrokenPipeError:  # `joulebench status | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0
    except OSError as exc:
        if exc.filename is None:
            raise  # not about a path the user gave: a bug or the machine, with its traceback
        _say(f"joulebench: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
