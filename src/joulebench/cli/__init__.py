"""The `joulebench` command line: one subcommand per stage, called by the workflow's rules.

Each command parses its arguments and calls one function of the stage's module; the logic
lives there (and is tested there). A rule's `--settings` JSON is exactly that function's
keyword arguments, built from the config (rule_settings; an unknown key is an error). Options
take their defaults from the code's, which the schema decides (joulebench.config_schema).

One module per group of commands, each command's `add_<command>` (its options) beside its
`_cmd_<command>` (what it runs): `measure` (catalog, idle, profile, check, accuracy),
`analysis` (summary, scores, fits, decisions, figures, labels, the page) and `tools`
(resolve, devices, plan, status, columns); `common` holds what they share (printing,
range-checked numbers, the options several commands take). The map of the package:
docs/design.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from joulebench.cli import analysis, measure, tools
from joulebench.cli.common import say, show_warning

# Every subcommand, in the order `joulebench --help` lists them.
COMMANDS = (
    tools.add_resolve,
    measure.add_catalog,
    measure.add_catalog_worker,
    measure.add_concat,
    measure.add_profile,
    measure.add_profile_job,
    measure.add_profile_worker,
    measure.add_reference,
    measure.add_prepare,
    measure.add_accuracy,
    measure.add_accuracy_table,
    analysis.add_summary,
    analysis.add_score,
    analysis.add_fits,
    analysis.add_best_configs,
    analysis.add_recommend,
    analysis.add_label,
    analysis.add_figures,
    analysis.add_webapp,
    analysis.add_predict,
    analysis.add_publish,
    analysis.add_merge,
    measure.add_check,
    measure.add_idle,
    tools.add_devices,
    tools.add_plan,
    tools.add_status,
    tools.add_columns,
)


def build_parser() -> argparse.ArgumentParser:
    """The command line; defaults come from the stage functions (equal to the schema's)."""
    parser = argparse.ArgumentParser(
        prog="joulebench",
        description="Energy per image of image-classification models, beside their accuracy.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS:
        add(sub)
    return parser


# The options that name a file a command writes (label's --output is a stem: its own check).
OUTPUT_OPTIONS = ("output", "repeats_output", "trace_output")


def check_outputs(args: argparse.Namespace) -> None:
    """WriteError now, before minutes of work, for an output that could not be written or
    must not be replaced (a folder, /dev/null, a FIFO: table_io.check_writable)."""
    from joulebench.table_io import check_writable

    for name in OUTPUT_OPTIONS:
        path = getattr(args, name, None)
        if path:
            check_writable(path)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from joulebench.accuracy.datasets import DatasetError
    from joulebench.analysis.best_configs import DecisionError
    from joulebench.analysis.release_files import ReleaseError
    from joulebench.analysis.summary import SummaryError
    from joulebench.catalog.models import ModelSelectionError
    from joulebench.catalog.workloads import WorkloadError
    from joulebench.core.backends import DeviceError
    from joulebench.core.protocol import SettingsError
    from joulebench.jobs.calibration import CalibrationError
    from joulebench.schedule.bad_gpus import NoGoodGpu
    from joulebench.study import ConfigError
    from joulebench.table_io import TableError, WriteError

    try:
        with warnings.catch_warnings():  # restores showwarning after the command
            warnings.showwarning = show_warning
            check_outputs(args)
            return args.func(args)
    except (
        CalibrationError,
        ConfigError,
        DatasetError,
        DecisionError,
        DeviceError,
        ModelSelectionError,
        NoGoodGpu,
        ReleaseError,
        SettingsError,
        SummaryError,
        TableError,
        WorkloadError,
        WriteError,
    ) as exc:
        say(f"joulebench: error: {exc}", file=sys.stderr)  # bad input: no traceback
        return 2
    except BrokenPipeError:  # `joulebench status | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0
    except OSError as exc:
        if exc.filename is None:
            raise  # not about a path the user gave: a bug or the machine, with its traceback
        say(f"joulebench: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
