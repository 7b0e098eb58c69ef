"""The commands that look at a study rather than run a stage: which models its entries
select (`resolve`), its devices, what it costs (`plan`), a run's progress (`status`) and
every output table's columns."""

from __future__ import annotations

import sys

from joulebench.cli.common import COUNT, POSITIVE, default, hours_type, say


def _cmd_resolve(args) -> int:
    from joulebench.catalog.models import ModelSelectionError, resolve_models

    try:
        names = resolve_models(args.entries)
    except ModelSelectionError as exc:
        say(exc, file=sys.stderr)
        return 2
    say("\n".join(names))
    return 0


def add_resolve(sub) -> None:
    p = sub.add_parser("resolve", help="print the exact timm names that model entries select")
    p.add_argument("entries", nargs="+", help="names, bare architectures, globs, all-pretrained")
    p.set_defaults(func=_cmd_resolve)


def _cmd_devices(args) -> int:
    """What `devices: auto` (or the study's devices) picks, and each device's meter."""
    from joulebench.prerun import load_study
    from joulebench.schedule.devices import devices_for

    study = load_study(args.configfile) if args.configfile else None
    text, measurable = devices_for(study, simulated=args.sim)
    say(text)
    return 0 if measurable else 2


def add_devices(sub) -> None:
    p = sub.add_parser("devices", help="the devices a study measures and each one's meter")
    p.add_argument("--configfile", help="a study file (default: devices: auto)")
    p.add_argument("--sim", action="store_true", help="also list the simulated GPUs (sim:<gpu>)")
    p.set_defaults(func=_cmd_devices)


def _cmd_plan(args) -> int:
    """The cost of a study before it runs: configurations, measuring and wall time."""
    from joulebench.plan import plan_for

    if args.calibrate:  # it builds a model per configuration in this process
        from joulebench.jobs.heap import freeze_imports

        freeze_imports()

    def progress(line: str) -> None:
        say(line, file=sys.stderr, flush=True)

    say(plan_for(args.configfile, args.profile, args.gpus, args.calibrate, progress, args.budget))
    return 0


def add_plan(sub) -> None:
    p = sub.add_parser("plan", help="what a study costs: configurations and time, before it runs")
    p.add_argument("--configfile", help="a study file over config.yaml (default: config.yaml)")
    p.add_argument("--profile", help="the SLURM profile folder (default: profiles/slurm)")
    p.add_argument("--gpus", type=COUNT, help="as on a node with this many GPUs like the study's")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="run each configuration for a moment on its device first (a few s per model): "
        "the estimate then follows its measured step time",
    )
    p.add_argument(
        "--budget",
        type=hours_type,
        help="what a budget of device time buys (8h, 90m, 3600s; a number is hours): the "
        "models measured in the study's order, the rest predicted",
    )
    p.set_defaults(func=_cmd_plan)


def _cmd_status(args) -> int:
    """A live view of a run: done, failed and left per device, ETA, what is measured now."""
    from pathlib import Path

    from joulebench.status.view import run_status

    if not Path(args.directory).is_dir():
        say(f"joulebench: error: --directory {args.directory}: no such folder", file=sys.stderr)
        return 2
    return run_status(
        args.directory,
        args.configfile,
        as_json=args.json,
        watch_s=args.watch,
        failures=args.failures,
        say=say,
    )


def add_status(sub) -> None:
    from joulebench.status.view import run_status

    p = sub.add_parser("status", help="a live view of a run: done, failed, left, ETA (read-only)")
    p.add_argument("--configfile", help="the run's study file over config.yaml")
    p.add_argument("--directory", "-d", default=".", help="the run's working folder (default .)")
    p.add_argument("--json", action="store_true", help="the same as one JSON object")
    p.add_argument("--watch", type=POSITIVE, metavar="SECONDS", help="refresh until Ctrl-C")
    p.add_argument(
        "--failures",
        type=COUNT,
        default=default(run_status, "failures"),
        help="how many of the last failures to show",
    )
    p.set_defaults(func=_cmd_status)


def _cmd_columns(args) -> int:
    """Every output table's columns (the registry in joulebench.tables)."""
    from joulebench.tables import columns_markdown, columns_text

    say(columns_markdown() if args.markdown else columns_text(args.table), end="")
    return 0


def add_columns(sub) -> None:
    from joulebench.tables import TABLES

    p = sub.add_parser("columns", help="every output table's columns: unit, meaning, producer")
    p.add_argument("--markdown", action="store_true", help="as docs/columns.md")
    p.add_argument("--table", choices=list(TABLES), help="only this table")
    p.set_defaults(func=_cmd_columns)
