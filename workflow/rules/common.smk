# Config validation, model resolution and every input/params function (get_<what>).
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

from joulebench.analysis.best_models import end_of_run
from joulebench.schedule.devices import (
    RESOLVED_ENV,
    DeviceError,
    check_devices,
    pool_of,
    representatives,
    resolve_pools,
)
from joulebench.schedule.slots import (
    measure_threads,
    measuring_resources,
    pinned_uuids,
    pool_leases,
    slot_limits,
)
from joulebench.core.emulation import native_by_label
from joulebench.jobs.job_spec import job_spec
from joulebench.schedule.job_parts import job_keys, job_methods, parse_job_key
from joulebench.report.figure_names import FIGURE_NAMES as FIGURES
from joulebench.report.figure_manifest import (
    MANIFEST as FIGURE_MANIFEST,
    not_made_lines,
    report_category,
    report_labels,
)
from joulebench.analysis.fits import FIT_TABLE_COLUMNS
from joulebench.catalog.models import ModelSelectionError, chunk, resolve_models
from joulebench.core.quiet import cpu_others_share
from joulebench.jobs.board_reference import BOARDS_DIR
from joulebench.plan import HostLoad, measured_rows, one_line, plan_study
from joulebench.prerun import (
    DRAWN_TRACE,
    RUN_SUMMARY,
    check_published,
    check_settings,
    replot_inputs,
)
from joulebench.study import (
    ConfigError,
    check_config,
    check_input_path,
    job_shell_prefix,
    load_schema,
    read_config,
    shell_option,
)
from joulebench.safe_text import printable  # every message printed (Snakefile)
from joulebench.catalog.workloads import named_entry, parse_entry, workload_entries
from joulebench.rule_settings import settings_json
from joulebench.plan import model_costs_s
from joulebench.selection import Selection, select


def get_config_sources():
    """Where each key can come from, so an error can name the file that set it."""
    files = [
        Path(workflow.basedir) / "config.yaml",
        *workflow.config_settings.configfiles,
    ]
    sources = [(str(f), read_config(f)) for f in files]
    sources.append(("--config", dict(workflow.config_settings.config)))
    return sources


# One short message per problem (key, where, which file, closest valid key), then defaults;
# then what each stage would refuse later (prerun.check_settings) and, with from_summary, the
# published summary read once: all before any job, a dry run too.
# Each config file is read bounded first (study.read_config: no alias, deep nesting or key
# given twice), before the schema walks what Snakemake loaded.
try:
    CONFIG_SOURCES = get_config_sources()
    check_config(config, load_schema(), CONFIG_SOURCES)
except ConfigError as exc:
    raise WorkflowError(printable(str(exc), newlines=True))
validate(config, schema="../schemas/config.schema.yaml")
try:
    check_settings(config, CONFIG_SOURCES)
    for note in check_published(config, CONFIG_SOURCES):
        print(printable(note), file=sys.stderr)
except ConfigError as exc:
    raise WorkflowError(printable(str(exc), newlines=True))


# Every rule's `joulebench ...` runs the package with the Python that runs Snakemake (on
# every host: cluster jobs re-read this file), or with the rule's env under --sdm conda.
shell.prefix(
    job_shell_prefix(
        DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    )
)

# The package runs from this clone, in a venv or a conda env alike.
SRC_DIR = str(Path(workflow.basedir) / "src")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [SRC_DIR, os.environ.get("PYTHONPATH", "")] if p
)

ENV = "../../envs/joulebench.yaml"

# Figures from existing data: a published summary -> scores, fits, figures; nothing measured.
FROM_SUMMARY = config.get("from_summary")  # checked above (check_published)
# What a replot draws from: a run's own summary in its folder named as the run named it, with
# the trace the run drew (the same inputs: nothing reruns); else the summary given.
REPLOT_SUMMARY, REPLOT_TRACE = replot_inputs(config) if FROM_SUMMARY else (None, None)
if not FROM_SUMMARY and not config.get("models"):
    raise WorkflowError(
        "The config needs `models:` (or `from_summary:` to replot a summary)."
    )

# label -> its devices (one, or a pool of identical GPUs); `auto` resolved here once, and
# handed to jobs on other hosts. DEVICES: label -> its (first) torch device.
try:
    POOLS = {} if FROM_SUMMARY else resolve_pools(config["devices"])
    POOL_OF = (
        {}
        if FROM_SUMMARY or config["devices"] == "auto"
        else pool_of(config["devices"])
    )
except DeviceError as exc:
    raise WorkflowError(printable(str(exc), newlines=True))
DEVICES = representatives(POOLS)
os.environ[RESOLVED_ENV] = json.dumps(POOLS)


# One measuring slot per device or pool, its limit the pool's GPU count: the GPUs measure at
# once, one job each, and a CPU measurement takes every slot whole
# (docs/profiling.md#every-gpu-at-once). The slots are scoped local: a local run tallies
# them; a cluster run's Snakemake does not (it submits every allocation at once) while each
# allocation tallies its own (one job at a time per device).
# (workflow.local_exec cannot tell the two apart here: the executor is set after parsing.)
MEASURING = measuring_resources(POOLS)
workflow.resourcescope(**{slot: "local" for slot in slot_limits(POOLS)})
for _slot, _limit in slot_limits(POOLS).items():
    if _slot not in workflow.global_resources:  # `--resources` may set its own
        workflow.register_resource(_slot, _limit)
# Each local GPU job sees only its GPU (CUDA_VISIBLE_DEVICES from its UUID); a pool's job
# leases a free GPU of its pool and pins to it (LEASES: the pool's GPUs, by UUID).
_SINGLE = {label: DEVICES[label] for label in POOLS if len(POOLS[label]) == 1}
_MANY = sum(map(len, POOLS.values())) > 1
PINNED = pinned_uuids(_SINGLE) if workflow.local_exec and _MANY else {}
LEASES = pool_leases(POOLS) if workflow.local_exec else {}


# Passed on to jobs on other hosts (cluster executors), too.
envvars:
    "PYTHONPATH",
    RESOLVED_ENV,


try:
    MODELS = [] if FROM_SUMMARY else resolve_models(config["models"])
except ModelSelectionError as exc:
    raise WorkflowError(
        printable(f"Invalid model selection in config:\n{exc}", newlines=True)
    )
FIT_TABLES = list(FIT_TABLE_COLUMNS)
# Custom workloads (docs/workloads.md): name -> entry; jobs get the entry, files the name.
WORKLOADS = {} if FROM_SUMMARY else workload_entries(config["models"])

# Which models are measured, in what order (order, budget: joulebench.selection); the rest
# are catalogued and predicted. Decided where the DAG is built, not in a cluster's job.
SELECTION = (
    select(config, MODELS, POOLS, costs_s=model_costs_s)
    if workflow.local_exec and not FROM_SUMMARY
    else Selection(MODELS)
)
MEASURED_MODELS = SELECTION.models

# label -> its profile jobs' keys: one per model, or one per model and method where a pool
# shares few models (schedule.job_parts; profile: {split: ...}).
JOBS = {
    label: job_keys(
        MEASURED_MODELS,
        job_methods(
            config["profile"]["split"],
            len(MEASURED_MODELS),
            len(POOLS[label]),
            list(config["methods"]),
        ),
    )
    for label in DEVICES
}

CATALOG_PARTS = chunk(MODELS, config["catalog"]["models_per_job"])
PART_IDS = [f"{i:04d}" for i in range(len(CATALOG_PARTS))]


wildcard_constraints:
    part=r"\d{4}",
    shard=r"[A-Za-z0-9_.\-]+",
    device="|".join(map(re.escape, DEVICES)),
    model=r"[A-Za-z0-9_.][A-Za-z0-9_.\-]*",
    job=r"[A-Za-z0-9_.][A-Za-z0-9_.\-]*(\+[A-Za-z0-9_][A-Za-z0-9_\-]*)?",


def get_final_outputs():
    analysis = [
        "results/scores.parquet",
        "results/best_configs.parquet",
        *expand("results/figures/{name}.png", name=FIGURES),
        "results/webapp/index.html",
    ]
    if FROM_SUMMARY:
        return analysis
    measured = ["results/catalog.parquet", "results/profile.parquet"]
    return [*measured, "results/predicted.parquet", *analysis]


# Each rule's `--settings`: exactly the keyword arguments of the function its command calls
# (joulebench.rule_settings builds them; tests/test_config.py checks every rule's keys). Every
# rule hands its command the config's settings this way; the profile job alone takes a --spec.
def get_catalog_part_settings():
    """How long a model's build or count may make no progress (catalog.timeout_s)."""
    return settings_json("catalog", config)


def get_idle_settings():
    """The baseline's length, on the profile's meter (profile.meter, estimate.tdp_w)."""
    return settings_json("idle", config)


def get_prepare_settings():
    """The processes that decode a dataset (dataset.workers)."""
    return settings_json("prepare", config)


def get_measured_accuracy_settings():
    """The accuracy section: local weights, batch size and device."""
    return settings_json("accuracy", config)


def get_reference_accuracy_settings():
    """The reference section: where timm's published accuracy comes from."""
    return settings_json("reference", config)


def get_score_settings():
    """The score section with the headline energy (energy_scope) and the carbon figures."""
    return settings_json("score", config)


def get_fits_settings():
    """The fits section with the score's rules of which rows count; the baseline of method
    savings defaults to the first method."""
    return settings_json("fits", config)


def get_best_configs_settings():
    """The constraints (decisions:) with the score's rules of which rows count and its energy."""
    return settings_json("best-configs", config)


def get_figures_settings():
    """The figures section but its trace_table (an input, see get_trace)."""
    return settings_json("figures", config)


def get_webapp_settings():
    """The grade thresholds the page prints."""
    return settings_json("webapp", config)


def get_summary(wildcards):
    """The summary the analysis reads: ours, or a published one (from_summary)."""
    return REPLOT_SUMMARY or RUN_SUMMARY


# The predictions (stage 7b), drawn apart on the figures and the page; none for a published
# summary (from_summary: no catalog to predict from), but a replot of the run's own summary
# draws the run's own, as the run drew them (so it reruns nothing).
PREDICTED = "results/predicted.parquet"
DRAWS_PREDICTED = not FROM_SUMMARY or (
    REPLOT_SUMMARY == RUN_SUMMARY and Path(PREDICTED).is_file()
)


def get_webapp_inputs(wildcards):
    inputs = {"summary": get_summary(wildcards), "scores": "results/scores.parquet"}
    if DRAWS_PREDICTED:
        inputs["predicted"] = PREDICTED
    return inputs


def get_predicted_option(wildcards, input):
    """--predicted for figures and webapp where the DAG made predictions."""
    return (
        shell_option("predicted", input.predicted)
        if "predicted" in input.keys()
        else ""
    )


def get_figure_inputs(wildcards):
    inputs = {
        "summary": get_summary(wildcards),
        "scores": "results/scores.parquet",
        "fits": expand("results/fits/{table}.parquet", table=FIT_TABLES),
        "best_configs": "results/best_configs.parquet",
    }
    trace = get_trace(wildcards)
    if trace:
        inputs["trace"] = trace
    if DRAWS_PREDICTED:
        inputs["predicted"] = PREDICTED
    return inputs


def get_trace(wildcards):
    """The power trace the trace figure shows: the run's copy of one job's (rule
    drawn_trace), or the replot's (REPLOT_TRACE; none where it has none)."""
    return REPLOT_TRACE if FROM_SUMMARY else DRAWN_TRACE


def get_job_trace(wildcards):
    """The profile job's trace the figures draw (figures.trace; default the first model's on
    the first device)."""
    want = config["figures"]["trace"]
    device = want["device_label"] or next(iter(DEVICES))
    model = want["model"] or MEASURED_MODELS[0]
    # its job, or its first method's where a pool splits models by method
    job = next(k for k in JOBS[device] if parse_job_key(k)[0] == model)
    return f"results/profile/{device}/trace/{job}.parquet"


def get_catalog_part_models(wildcards):
    """The models of one catalog job, shell-quoted (a custom workload as `name=entry`)."""
    models = CATALOG_PARTS[int(wildcards.part)]
    entries = [named_entry(WORKLOADS[m]) if m in WORKLOADS else m for m in models]
    return " ".join(shlex.quote(e) for e in entries)


def get_catalog_parts(wildcards):
    return expand("results/catalog/part-{part}.parquet", part=PART_IDS)


def get_torch_device(wildcards):
    return DEVICES[wildcards.device]


def get_measure_threads(wildcards):
    """A CPU measurement takes every core; each GPU (of every pool) its share of them."""
    return measure_threads(POOLS, wildcards.device, workflow.cores)


# Options built here are `--name=value`, shell-quoted (study.shell_option): no value from
# the config or a device can be read as an option.
def get_pin_option(wildcards):
    """`--pool={"gpus": ...}` for a pool's job (it leases a free GPU, see LEASES),
    `--gpu-uuid=GPU-...` for a pinned GPU job (see PINNED); else empty."""
    if wildcards.device in LEASES:
        return shell_option("pool", json.dumps({"gpus": LEASES[wildcards.device]}))
    uuid = PINNED.get(wildcards.device)
    return shell_option("gpu-uuid", uuid) if uuid else ""


def get_job_model(wildcards):
    """The model a profile job measures (its key: the model, or model+method)."""
    return parse_job_key(wildcards.job)[0]


def get_profile_priority(wildcards):
    """Earlier in the study's order, sooner measured (order: informative)."""
    return SELECTION.priority(parse_job_key(wildcards.job)[0])


def get_profile_spec(wildcards):
    """The job's spec (joulebench.jobs.job_spec) as JSON: a change reruns the affected
    jobs; a method's job gets that method alone."""
    model, method = parse_job_key(wildcards.job)
    pool = POOL_OF.get(wildcards.device, wildcards.device)
    spec = job_spec(
        DEVICES[wildcards.device],
        config,
        method=method,
        workload=WORKLOADS.get(model),
        device_pool=pool if pool != wildcards.device else "",  # one of k GPUs per model
    )
    return spec.to_json()


def _workload_file(entry):
    """The file of a custom workload entry (catalog.workloads' parser); None for a module."""
    parsed = parse_entry(entry)
    return parsed.target if parsed.is_file else None


def get_workload_files(wildcards):
    """A custom workload's file, so that editing it reruns the model's jobs."""
    entry = WORKLOADS.get(get_job_model(wildcards))
    file = _workload_file(entry) if entry else None
    return [file] if file else []


# A workload file is an input: { } in its path would read as a wildcard.
try:
    for _entry in WORKLOADS.values():
        if _workload_file(_entry):
            check_input_path(f"models: {_entry}", _workload_file(_entry))
except ConfigError as exc:
    raise WorkflowError(printable(str(exc), newlines=True))


def get_profile_rows(wildcards):
    return [
        f"results/profile/{device}/rows/{job}.parquet"
        for device in DEVICES
        for job in JOBS[device]
    ]


# Prepared datasets: models that share an input configuration share one shard folder.
def _shards():
    """shard key -> (input config, models); empty for the synthetic dataset."""
    if FROM_SUMMARY or config["dataset"]["kind"] == "synthetic":
        return {}
    import timm

    from joulebench.accuracy.shards import input_config_key, shard_key

    shards = {}
    for model in [m for m in MODELS if m not in WORKLOADS]:  # no preprocessing known
        cfg = timm.data.resolve_data_config(
            pretrained_cfg=timm.models.get_pretrained_cfg(model).to_dict()
        )
        key = shard_key(config["dataset"], cfg)
        shards.setdefault(key, (input_config_key(cfg)[0], []))[1].append(model)
    return shards


SHARDS = _shards()


def get_shard_input_config(wildcards):
    return json.dumps(SHARDS[wildcards.shard][0], sort_keys=True)


def get_shard_models(wildcards):
    return " ".join(shlex.quote(m) for m in SHARDS[wildcards.shard][1])


def get_prepare_source():
    """The dataset section as the source to prepare (its workers are --settings)."""
    source = {k: v for k, v in config["dataset"].items() if k != "workers"}
    return json.dumps(source, sort_keys=True)


def get_prepared_root(wildcards, output):
    """The folder of every shard folder (data/prepared)."""
    return os.path.dirname(os.path.dirname(output[0]))


def get_shard_dir(wildcards, input):
    return os.path.dirname(input[0])


def get_measured_accuracy(wildcards):
    return expand("results/accuracy/measured/{shard}.parquet", shard=SHARDS)


def get_fits_outdir(wildcards, output):
    return os.path.dirname(output[0])


def get_fits_dir(wildcards, input):
    """The folder of the fit tables the figures read."""
    return os.path.dirname(input.fits[0])


def get_figures_outdir(wildcards, output):
    return os.path.dirname(output.pdf[0])


# A figure's place in `snakemake --report`, read from the figures' manifest when the report is
# made (a function of the job's output, so the DAG and its up-to-date checks never read it).
def get_figure_category(name):
    """Its category: Figures, or Figures not made (it only says why)."""
    return lambda wildcards, output: report_category(output.manifest, name)


def get_figure_labels(name):
    """The figure's name, and whether it was made (and why not)."""
    return lambda wildcards, output: report_labels(output.manifest, name)


def get_trace_option(wildcards, input):
    """`--trace=PATH` when the figures have a power trace to draw."""
    return shell_option("trace", input.trace) if "trace" in input.keys() else ""


# The workflow's first and last words.
def start_message():
    """Stop before any job when a device cannot be measured here; else say what the run costs."""
    if FROM_SUMMARY:
        return f"joulebench: scores and figures from {FROM_SUMMARY} -> results/"
    if workflow.local_exec:
        problems = check_devices(POOLS)
        if problems:
            raise WorkflowError(printable("\n".join(problems), newlines=True))
    elif config["devices"] == "auto":
        raise WorkflowError(
            f"devices: auto looks at this host ({', '.join(DEVICES)}), not at the cluster's "
            "nodes: name the device in the study, e.g. devices: {h200: cuda}"
        )
    elif any(len(members) > 1 for members in POOLS.values()):
        raise WorkflowError(
            "devices: a pool shares one host's GPUs; on a cluster each allocation measures "
            "one GPU: name one device per label, e.g. devices: {h200: cuda}"
        )
    native = native_by_label(DEVICES) if workflow.local_exec else None  # this host's
    done = measured_rows(Path.cwd(), POOLS)  # a resumed run: what is left
    load = (
        HostLoad(cpu_others_share()) if workflow.local_exec else None
    )  # this host, now
    plan = plan_study(
        config, MEASURED_MODELS, POOLS, None, native, done=done, load=load
    )
    line = f"joulebench: {one_line(plan)}"
    if SELECTION.left:
        line += (
            f"; {SELECTION.left} more models predicted, not measured (budget: "
            f"{config['budget']['gpu_h']:g} device-hours)"
        )
    return line


def end_message():
    """The outputs and best models (best_models.end_of_run), then the figures not made."""
    return "\n".join([end_of_run("results"), *not_made_lines("results/figures")])
