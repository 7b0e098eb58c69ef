"""The commands that turn measured (or published) tables into results: the summary, scores,
fits, best configurations, recommendations, and the report's figures, labels and page
(stages 7-10). Each parses its arguments and calls one function of its stage."""

from __future__ import annotations

from joulebench.cli.common import (
    COUNT,
    POSITIVE,
    add_settings,
    add_summary_input,
    batch_size_type,
    command_settings,
    number,
    say,
)
from joulebench.safe_text import quantity


def _cmd_summary(args) -> int:
    """One tidy table: catalog + profile + accuracy."""
    from joulebench.analysis.summary import run_summary

    run_summary(
        args.profile,
        args.output,
        catalog=args.catalog,
        accuracy=args.accuracy,
        csv=args.csv,
        boards=args.boards,
    )
    return 0


def add_summary(sub) -> None:
    p = sub.add_parser("summary", help="join catalog, profile and accuracy into one table")
    p.add_argument("--profile", required=True)
    p.add_argument("--catalog")
    p.add_argument("--accuracy")
    p.add_argument("--output", required=True, help="summary parquet")
    p.add_argument("--csv", help="also write the summary as CSV")
    p.add_argument(
        "--boards",
        help="the GPUs' reference readings (results/boards): a pool's rows as its reference "
        "board reads them",
    )
    p.set_defaults(func=_cmd_summary)


def _cmd_score(args) -> int:
    from joulebench.analysis.score import run_score

    run_score(args.summary, args.output, **command_settings("score", args.settings))
    return 0


def add_score(sub) -> None:
    p = sub.add_parser("score", help="Pareto front, efficiency index, grades, energy index")
    p.add_argument("summary", help="a summary parquet or csv (ours or published)")
    add_settings(p, "score section, energy_scope, carbon")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_score)


def _cmd_fits(args) -> int:
    from joulebench.analysis.fits import run_fits

    run_fits(args.summary, args.outdir, **command_settings("fits", args.settings))
    return 0


def add_fits(sub) -> None:
    p = sub.add_parser("fits", help="energy vs FLOPs/params/activations, accuracy vs energy")
    p.add_argument("summary")
    add_settings(p, "the config's fits section")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_fits)


def _cmd_best_configs(args) -> int:
    from joulebench.analysis.best_configs import run_best_configs

    settings = command_settings("best-configs", args.settings)
    if args.include_simulated:  # the option says what decisions.include_simulated: true does
        settings["include_simulated"] = True
    run_best_configs(args.summary, args.output, **settings)
    return 0


def add_include_simulated(p) -> None:
    """`--include-simulated`: rank a simulated GPU's rows too (best-configs, recommend)."""
    p.add_argument(
        "--include-simulated",
        action="store_true",
        help="rank a simulated GPU's rows too (sim:<gpu>; never scored), only beside each "
        "other and labelled (simulated); as decisions.include_simulated: true",
    )


def add_best_configs(sub) -> None:
    p = sub.add_parser(
        "best-configs", help="each model's least-energy configuration, overall and constrained"
    )
    p.add_argument("summary", help="a summary parquet or csv (ours or published)")
    add_settings(p, "the config's decisions section (+ score rules)")
    add_include_simulated(p)
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_best_configs)


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
        include_simulated=args.include_simulated,
        predicted=_predicted(args.predicted, args.energy_scope),
    )
    say(format_recommendation(rec, top=args.top))
    return 0


def _predicted(path, energy_scope: str):
    """The predicted table `recommend --predicted` names apart (the device's own energy:
    none beside a node-scope ranking)."""
    from joulebench.table_io import read_table

    if path is None:
        return None
    if energy_scope != "device":
        say("recommend: predictions are of the device's energy: not shown beside node scope")
        return None
    return read_table(path)


def add_recommend(sub) -> None:
    p = sub.add_parser(
        "recommend", help="which model and configuration for an accuracy and latency budget"
    )
    add_summary_input(p)
    p.add_argument(
        "--min-top1", type=number(minimum=0, maximum=100), help="top-1 accuracy floor, percent"
    )
    p.add_argument("--max-latency-ms", type=POSITIVE, help="time per batch budget, ms")
    p.add_argument("--min-throughput", type=POSITIVE, help="images per second floor")
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
    add_include_simulated(p)
    p.add_argument("--top", type=COUNT, default=10, help="rows shown per device (10)")
    p.add_argument(
        "--predicted",
        help="results/predicted.parquet: name the predicted configurations that might spend "
        "less, apart and as predictions (never ranked)",
    )
    p.set_defaults(func=_cmd_recommend)


def _cmd_label(args) -> int:
    """One model's energy label: a card (SVG and PNG) with energy, uncertainty, provenance."""
    from joulebench.report.label import run_label

    paths = run_label(
        args.summary,
        args.model,
        device=args.device,
        method=args.method,
        batch_size=args.batch_size,
        output=args.output_stem,
    )
    say("\n".join(str(p) for p in paths))
    return 0


def add_label(sub) -> None:
    p = sub.add_parser("label", help="a model's energy label: SVG and PNG card to share")
    p.add_argument("model", help="a model of the summary")
    add_summary_input(p)
    p.add_argument("--device", help="device label (default: where its energy is least)")
    p.add_argument("--method", help="method (default: its least-energy configuration)")
    p.add_argument("--batch-size", type=batch_size_type(), help="requested batch size")
    p.add_argument(
        "--output",
        "-o",
        dest="output_stem",
        help="path stem (default results/labels/<device>/<model>)",
    )
    p.set_defaults(func=_cmd_label)


def _cmd_figures(args) -> int:
    from joulebench.report.figures import run_figures

    settings = command_settings("figures", args.settings)
    run_figures(
        args.summary,
        args.scores,
        args.fits_dir,
        args.outdir,
        trace_path=args.trace,
        best_configs_path=args.best_configs,
        predicted_path=args.predicted,
        **settings,
    )
    return 0


def add_figures(sub) -> None:
    p = sub.add_parser("figures", help="every figure of the study, PDF and PNG")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument("--fits-dir", required=True)
    p.add_argument("--trace", help="a power-trace parquet for the trace figure")
    p.add_argument("--best-configs", help="best_configs parquet (default: from the summary)")
    p.add_argument(
        "--predicted",
        help="joulebench predict's table: the accuracy-vs-energy figure draws the models not "
        "measured hollow, with their interval",
    )
    add_settings(p, "figures section, less trace_table")
    p.add_argument("--outdir", required=True)
    p.set_defaults(func=_cmd_figures)


def _cmd_webapp(args) -> int:
    """The study as one self-contained HTML page (works from file://, no network)."""
    from joulebench.report.webapp import run_webapp

    settings = command_settings("webapp", args.settings)
    run_webapp(args.summary, args.scores, args.output, predicted_path=args.predicted, **settings)
    return 0


def add_webapp(sub) -> None:
    p = sub.add_parser("webapp", help="the interactive web page, one offline HTML file")
    p.add_argument("--summary", required=True)
    p.add_argument("--scores", required=True)
    p.add_argument(
        "--predicted",
        help="joulebench predict's table: the models not measured, drawn apart (hollow, with "
        "their interval and a grade range, never a grade)",
    )
    add_settings(p, "the score's grade_thresholds")
    p.add_argument("--output", required=True)
    p.set_defaults(func=_cmd_webapp)


def _cmd_predict(args) -> int:
    """Every catalog model not measured, predicted with an interval (docs/predictions.md)."""
    from joulebench.analysis.predict import PI_LEVEL, run_predict

    level = PI_LEVEL if args.level is None else args.level
    out = run_predict(args.rows, args.catalog, args.output, level=level)
    done = out["energy_per_image_j"].notna()
    groups = out.groupby(["phase", "device_label", "method", "batch_size_requested"]).ngroups
    rows, groups = quantity(len(out), "row"), quantity(groups, "group")
    say(
        f"predicted {done.sum():,} of {rows} in {groups} at "
        f"{level:.0%} (the rest say why in `note`) -> {args.output}"
    )
    return 0


def add_predict(sub) -> None:
    p = sub.add_parser(
        "predict", help="predict the models a run did not measure, with checked intervals"
    )
    p.add_argument("--rows", required=True, help="a profile or summary table: its ok rows")
    p.add_argument("--catalog", required=True, help="a catalog table (results/catalog.parquet)")
    p.add_argument("--output", "-o", required=True, help="the predictions' parquet")
    p.add_argument(
        "--level",
        type=number(minimum=0.5, maximum=0.99),
        help="the intervals' level (default: analysis.predict.PI_LEVEL, 0.9)",
    )
    p.set_defaults(func=_cmd_predict)


def _cmd_publish(args) -> int:
    """A finished run as a release folder others can load, check and merge."""
    from joulebench.analysis.release import publish

    path = publish(args.run, args.release_dir, name=args.name)
    say(f"release -> {path} (checked by: sha256sum -c SHA256SUMS, or joulebench.load)")
    return 0


def add_publish(sub) -> None:
    p = sub.add_parser("publish", help="a finished run as a versioned release folder")
    p.add_argument("--run", default=".", help="the run's folder (holding results/)")
    p.add_argument(
        "--output", "-o", dest="release_dir", required=True, help="the release folder to write"
    )
    p.add_argument("--name", help="the release's name (default: the run folder's)")
    p.set_defaults(func=_cmd_publish)


def _cmd_merge(args) -> int:
    """Runs and releases joined: what agrees, what is kept apart, what disagrees."""
    from joulebench.analysis.merge import merge

    report = merge(args.inputs, args.release_dir, name=args.name)
    say(report)
    return 0


def add_merge(sub) -> None:
    p = sub.add_parser("merge", help="join runs and releases into one release folder")
    p.add_argument("inputs", nargs="+", help="release folders, run folders or summaries")
    p.add_argument(
        "--output", "-o", dest="release_dir", required=True, help="the merged release's folder"
    )
    p.add_argument("--name", help="the merged release's name (default: the output folder's)")
    p.set_defaults(func=_cmd_merge)
