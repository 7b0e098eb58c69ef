"""The commands that build a study's tables from models and devices: the catalog, the idle
baseline, the profile (a workflow job, or one model now), `check` and accuracy (stages 1-6).
Each parses its arguments and calls one function of its stage."""

from __future__ import annotations

import sys

from joulebench.cli.common import (
    COUNT,
    POSITIVE,
    add_device,
    add_gpu_uuid,
    add_meter,
    add_protocol,
    add_settings,
    batch_size_type,
    command_settings,
    default,
    json_object,
    number,
    say,
)

TDP_HELP = "CPU power for the estimate meter"


def _cmd_catalog(args) -> int:
    """A catalog part: its models counted by workers it watches (jobs.catalog_job)."""
    from joulebench.catalog.build import catalog_entries, catalog_line
    from joulebench.jobs.catalog_job import supervised_catalog
    from joulebench.jobs.job_runner import Orphaned

    models = catalog_entries(args.models, args.models_file)
    settings = command_settings("catalog", args.settings)
    try:
        df = supervised_catalog(models, args.output, threads=args.threads, log=say, **settings)
    except Orphaned as err:
        say(f"joulebench: {err}", file=sys.stderr)
        return 1
    say(catalog_line(df, args.output), file=sys.stderr)
    return 0


def add_catalog(sub) -> None:
    p = sub.add_parser("catalog", help="static properties (params, FLOPs...) of models")
    p.add_argument("models", nargs="*", help="exact timm names")
    p.add_argument("--models-file", help="a file with one exact timm name per line")
    p.add_argument("--output", "-o", required=True, help="parquet to write")
    p.add_argument("--threads", type=COUNT, default=1, help="torch CPU threads (default 1)")
    add_settings(
        p,
        "timeout_s (the config's catalog.timeout_s): stop a model whose build or count makes "
        "no progress for this long (a failed row; null: 300 s)",
    )
    p.set_defaults(func=_cmd_catalog)


def _cmd_catalog_worker(args) -> int:
    """(internal) One worker of a catalog part: models from a position on, each row written
    to the part's parts folder (jobs.catalog_job)."""
    from joulebench.jobs.catalog_job import catalog_worker
    from joulebench.jobs.heap import freeze_imports

    freeze_imports()
    catalog_worker(
        args.models, args.parts, start_at=args.start_at, threads=args.threads,
        timeout_s=args.timeout_s, log=lambda line: say(line, flush=True),
    )  # fmt: skip
    return 0


def add_catalog_worker(sub) -> None:
    p = sub.add_parser("catalog-worker", help="(internal) one worker of a catalog part")
    p.add_argument("models", nargs="*")
    p.add_argument("--parts", required=True)
    p.add_argument("--start-at", type=number(int, minimum=0), default=0)
    p.add_argument("--threads", type=COUNT, default=1)
    p.add_argument("--timeout-s", type=POSITIVE)
    p.set_defaults(func=_cmd_catalog_worker)


def _cmd_concat(args) -> int:
    from joulebench.tables import concat_tables

    concat_tables(args.table, args.parts, args.output)
    return 0


def add_concat(sub) -> None:
    p = sub.add_parser("concat", help="concatenate per-job tables into one")
    p.add_argument("table", choices=["catalog", "profile", "trace"])
    p.add_argument("parts", nargs="+")
    p.add_argument("--output", "-o", required=True)
    p.set_defaults(func=_cmd_concat)


def _cmd_profile(args) -> int:
    """Ad hoc: measure one model now and print a short table (no Snakemake)."""
    from joulebench.jobs.adhoc import format_rows, profile_now

    rows = profile_now(
        args.model,
        device=args.device,
        methods=args.method or ["fp32"],
        batch_sizes=args.batch_size or [1],
        protocol={
            "preset": args.preset,
            "repeats": args.repeats,
            "min_repeat_s": args.min_repeat_s,
        },
        meter=args.meter,
        tdp_w=args.tdp_w,
        threads=args.threads,
        phases=args.phase or ["inference"],
        optimizer=args.optimizer,
        onnx_cache=args.onnx_cache,
        input_kind=args.input_kind,
        allow_emulated=args.allow_emulated,
        timeout_s=args.timeout_s,
        quiet_wait_s=args.quiet_wait_s,
        output=args.output,
    )
    say(format_rows(rows))
    return _nothing_measured(rows)


def _nothing_measured(rows) -> int:
    """0 when a configuration was measured; else 1, with each reason on stderr."""
    if (rows["status"] == "ok").any():
        return 0
    reasons = dict.fromkeys(
        f"{s}: {r}" for s, r in zip(rows["status"], rows["reason"], strict=True)
    )
    say("joulebench: error: nothing was measured: " + "; ".join(reasons), file=sys.stderr)
    return 1


def add_profile(sub) -> None:
    from joulebench.config_schema import maximum as schema_maximum
    from joulebench.core.methods import PRESETS
    from joulebench.core.train import OPTIMIZERS, TrainSpec
    from joulebench.jobs.job_spec import DEFAULT_ONNX_CACHE, JobSpec
    from joulebench.tables import INPUT_KINDS, PHASES

    p = sub.add_parser("profile", help="measure one model now and print a short table")
    p.add_argument(
        "model", help="a timm name (exact, bare architecture) or a workload (file.py:function)"
    )
    add_device(p)
    p.add_argument(
        "--method", action="append", choices=sorted(PRESETS), help="repeatable (default fp32)"
    )
    p.add_argument(
        "--batch-size", type=batch_size_type(), action="append", help="repeatable (default 1)"
    )
    add_protocol(p)
    add_meter(p, meter_help="force a meter", tdp_help=TDP_HELP)
    p.add_argument("--threads", type=COUNT, help="torch CPU threads")
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
        "--input-kind",
        choices=list(INPUT_KINDS),
        default=JobSpec.input_kind,
        help="synthetic batch",
    )
    p.add_argument(
        "--allow-emulated",
        action="store_true",
        help="measure methods whose precision this device only emulates (default: skipped)",
    )
    p.add_argument(
        "--timeout-s",
        type=POSITIVE,
        help="stop a configuration that makes no progress for this long (a `timeout` row; "
        "default: 10 x its estimate, at least 300 s)",
    )
    p.add_argument(
        "--quiet-wait-s",
        type=number(minimum=0, maximum=schema_maximum("profile.quiet_wait_s")),
        default=JobSpec.quiet_wait_s,
        help="wait up to this long for other processes to leave the device before each "
        "configuration, then measure beside them, the rows flagged (default %(default)s; "
        "0: never wait)",
    )
    p.set_defaults(func=_cmd_profile)


def pinned(args, device: str, holder: str):
    """(a context holding the job's GPU lease, the device pinned to its GPU): the leased GPU
    of `--pool`, else the `--gpu-uuid` one, else the device as it is."""
    import contextlib

    from joulebench.schedule.slots import lease_from_pool, pin_to_gpu

    if not args.pool:
        return contextlib.nullcontext(), pin_to_gpu(device, args.gpu_uuid)
    gpus = json_object("--pool", args.pool).get("gpus") or []
    lease, device, _ = lease_from_pool(gpus, holder, log=say)
    return lease, device


def _cmd_profile_job(args) -> int:
    """One workflow job: all methods x batch sizes of one model on one device (or on a good,
    free GPU of its pool, held until the job ends, moved once if it fails), measured by
    workers it watches."""
    from joulebench.jobs.gpu_failover import failover_for
    from joulebench.jobs.job_runner import Orphaned, supervised_job
    from joulebench.jobs.profile import ProfileJob
    from joulebench.schedule.devices import require_measurable
    from joulebench.schedule.slots import pin_to_gpu

    spec = job_spec_option(args.spec)
    pool = (json_object("--pool", args.pool).get("gpus") or []) if args.pool else []
    spec = spec if pool else spec.pinned(pin_to_gpu(spec.torch_device, args.gpu_uuid))
    holder = f"{args.device_label} {args.model}"
    failover = failover_for(spec, pool, holder, args.device_label, log=say)
    if not failover.start_reason():
        require_measurable(args.device_label, failover.spec.torch_device)
    job = ProfileJob(args.model, args.device_label, failover.spec, threads=args.threads)
    outputs = (args.output, args.repeats_output, args.trace_output)
    with failover:
        try:
            supervised_job(job, idle=args.idle, log=say, outputs=outputs, failover=failover)
        except Orphaned as err:
            say(f"joulebench: {err}", file=sys.stderr)
            return 1
    return 0


def job_spec_option(text: str):
    """The job's `--spec` (jobs.job_spec.JobSpec.from_json: its one reading in a process);
    a bad one is a ConfigError, one line."""
    from joulebench.jobs.job_spec import JobSpec
    from joulebench.study import ConfigError

    try:
        return JobSpec.from_json(text)
    except ValueError as err:
        raise ConfigError(f"--spec: {err}") from None


def _cmd_profile_worker(args) -> int:
    """(internal) One worker of a profile job: configurations from a position on, each
    written to the job's parts folder (jobs.job_runner)."""
    from joulebench.jobs.hangs import parse_hangs
    from joulebench.jobs.job_runner import main_worker
    from joulebench.study import ConfigError

    try:
        args.hangs = parse_hangs(args.hangs)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"--hangs: {err}") from None
    args.spec = job_spec_option(args.spec)
    return main_worker(args)


def add_profile_worker(sub) -> None:
    p = sub.add_parser("profile-worker", help="(internal) one worker of a profile job")
    p.add_argument("model")
    p.add_argument("--device-label", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--idle")
    p.add_argument("--threads", type=COUNT)
    p.add_argument("--parts", required=True)
    p.add_argument("--start-at", type=number(int, minimum=0), default=0)
    p.add_argument("--hangs", help="JSON: the job's hangs so far, [[position, seconds], ...]")
    p.set_defaults(func=_cmd_profile_worker)


def add_profile_job(sub) -> None:
    p = sub.add_parser("profile-job", help="(workflow) all methods x batch sizes of one model")
    p.add_argument("model")
    p.add_argument("--device-label", required=True)
    p.add_argument("--spec", required=True, help="JSON: torch_device, methods, batch_sizes...")
    p.add_argument("--idle", help="the device's idle baseline parquet")
    p.add_argument("--threads", type=COUNT)
    p.add_argument("--output", required=True)
    p.add_argument("--repeats-output", required=True)
    p.add_argument("--trace-output", required=True)
    add_gpu_uuid(p)
    p.set_defaults(func=_cmd_profile_job)


def _cmd_idle(args) -> int:
    """The idle power baseline of a device."""
    from joulebench.jobs.idle import idle_line, run_idle

    settings = command_settings("idle", args.settings)
    lease, device = pinned(args, args.device, f"{args.device_label} idle")
    with lease:
        row = run_idle(args.device_label, device, args.output, **settings)
    say(idle_line(row))
    return 0


def add_idle(sub) -> None:
    p = sub.add_parser("idle", help="measure the idle power baseline of a device")
    p.add_argument("--device-label", required=True)
    add_device(p, default_in_help=False)
    add_settings(
        p,
        "duration_s, meter, tdp_w (the config's idle.duration_s, profile.meter and "
        "profile.estimate.tdp_w: the profile's meter)",
    )
    p.add_argument("--output", required=True)
    add_gpu_uuid(p)
    p.set_defaults(func=_cmd_idle)


def _cmd_check(args) -> int:
    """Can this machine's energy numbers be trusted? A pass/warn/fail table and a JSON report;
    with an external meter, the board calibrated against it instead (jobs.calibration)."""
    if args.external_command or args.external_csv:
        from joulebench.jobs.calibration import run_calibration

        say(run_calibration(args.device, args.external_command, args.external_csv,
                            args.external_accuracy, args.boards_dir))  # fmt: skip
        return 0
    from joulebench.check.command import run_check
    from joulebench.check.report import FAIL, format_table
    from joulebench.core.meters import MeterUnavailable

    def progress(message: str) -> None:
        say(f"check {args.device}: {message}", file=sys.stderr, flush=True)

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
        say(f"check {args.device}: cannot measure: {err}", file=sys.stderr)
        return 2
    say(format_table(report))
    say(f"report -> {path}")
    return 1 if report["verdict"] == FAIL else 0


def add_check(sub) -> None:
    p = sub.add_parser(
        "check", help="can this machine's energy numbers be trusted? (run before a study)"
    )
    add_device(p)
    p.add_argument("--quick", action="store_true", help="short runs: a first look, not a study")
    p.add_argument("--idle-s", type=POSITIVE, help="seconds of idle power (default 10)")
    add_meter(p, meter_help="force one of the device's meters", tdp_help=TDP_HELP)
    p.add_argument("--output", "-o", help="default results/check/<device>.json")
    meter = p.add_mutually_exclusive_group()
    meter.add_argument(
        "--external-command",
        help="calibrate the board: a command (no shell) that prints the watts an external meter "
        "reads on it, run every 0.25 s while the board reads its reference levels",
    )
    meter.add_argument(
        "--external-csv",
        help="calibrate the board: a CSV (time, watts) an external meter logs meanwhile",
    )
    p.add_argument(
        "--external-accuracy",
        type=number(minimum=0, maximum=0.5),
        default=0.01,
        help="the external meter's own relative accuracy (default 0.01)",
    )
    p.add_argument("--boards-dir", default="results/boards", help="where the board's record goes")
    p.set_defaults(func=_cmd_check)


def _cmd_reference(args) -> int:
    """timm's published accuracy for the catalog's models (the shipped copy unless set)."""
    from joulebench.accuracy.reference import run_reference

    run_reference(args.catalog, args.output, **command_settings("reference", args.settings))
    return 0


def add_reference(sub) -> None:
    p = sub.add_parser("reference", help="timm's published accuracy for the catalog's models")
    p.add_argument("--catalog", required=True)
    add_settings(p, "the config's reference section")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_reference)


def _cmd_prepare(args) -> int:
    """Preprocess a dataset once for one input configuration into cached shards."""
    from joulebench.accuracy.shards import prepare

    settings = command_settings("prepare", args.settings)
    shard = prepare(
        json_object("--source", args.source),
        json_object("--input-config", args.input_config),
        args.out_root,
        shard_size=args.shard_size,
        **settings,
    )
    say(f"prepared -> {shard}", file=sys.stderr)
    return 0


def add_prepare(sub) -> None:
    from joulebench.accuracy.shards import prepare

    p = sub.add_parser("prepare", help="preprocess a dataset into shards for one input config")
    p.add_argument("--source", required=True, help="JSON: the config's dataset section")
    p.add_argument("--input-config", required=True, help="JSON: a model's data config")
    p.add_argument("--out-root", default="data/prepared")
    add_settings(p, "workers (the config's dataset.workers)")
    p.add_argument("--shard-size", type=COUNT, default=default(prepare, "shard_size"))
    p.set_defaults(func=_cmd_prepare)


def _cmd_accuracy(args) -> int:
    """Measured top-1/top-5 of models sharing one shard folder, where weights exist locally."""
    from joulebench.accuracy.measured import run_accuracy

    settings = command_settings("accuracy", args.settings)
    run_accuracy(
        args.models, args.shard_dir, args.output, allow_download=args.allow_download, **settings
    )
    return 0


def add_accuracy(sub) -> None:
    p = sub.add_parser("accuracy", help="measured top-1/top-5 on prepared shards")
    p.add_argument("models", nargs="+")
    p.add_argument("--shard-dir", required=True)
    add_settings(
        p,
        "checkpoints, batch_size, device (the config's accuracy section: a folder of "
        "<model>.safetensors / .pth files, the batch, the torch device)",
    )
    p.add_argument("--allow-download", action="store_true")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_accuracy)


def _cmd_accuracy_table(args) -> int:
    """Measured accuracy where there is one, else the reference: every value with its source."""
    from joulebench.accuracy.reference import run_accuracy_table

    run_accuracy_table(args.reference, args.measured, args.output)
    return 0


def add_accuracy_table(sub) -> None:
    p = sub.add_parser("accuracy-table", help="measured accuracy, else the reference")
    p.add_argument("--reference", required=True)
    p.add_argument("measured", nargs="*", default=[], help="measured accuracy tables (after --)")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_accuracy_table)
