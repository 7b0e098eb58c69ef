# Config validation, model resolution and every input/params function (get_<what>).
import json
import os
import re
import shlex

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from joulebench.models import ModelSelectionError, chunk, resolve_models

validate(config, schema="../schemas/config.schema.yaml")


# Jobs run `python -m joulebench` from this clone, in a venv or a conda env alike.
SRC_DIR = str(Path(workflow.basedir) / "src")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in [SRC_DIR, os.environ.get("PYTHONPATH", "")] if p
)


# PYTHONPATH is passed on to jobs on other hosts (cluster executors), too.
envvars:
    "PYTHONPATH",


ENV = "../../envs/joulebench.yaml"

try:
    MODELS = resolve_models(config["models"])
except ModelSelectionError as exc:
    raise WorkflowError(f"Invalid model selection in config:\n{exc}")

CATALOG_PARTS = chunk(MODELS, config["catalog"]["models_per_job"])
PART_IDS = [f"{i:04d}" for i in range(len(CATALOG_PARTS))]


DEVICES = config["devices"]  # label -> torch device


wildcard_constraints:
    part=r"\d{4}",
    device="|".join(map(re.escape, DEVICES)),
    model=r"[A-Za-z0-9_.\-]+",


def get_final_outputs():
    return ["results/catalog.parquet", "results/profile.parquet"]


def get_catalog_part_models(wildcards):
    """The models of one catalog job, shell-quoted."""
    return " ".join(shlex.quote(m) for m in CATALOG_PARTS[int(wildcards.part)])


def get_catalog_parts(wildcards):
    return expand("results/catalog/part-{part}.parquet", part=PART_IDS)


def get_torch_device(wildcards):
    return DEVICES[wildcards.device]


def get_measure_threads(wildcards):
    """A CPU measurement takes every core: nothing else may run beside it."""
    return workflow.cores if DEVICES[wildcards.device] == "cpu" else 2


def get_meter_options(wildcards):
    meter = config["profile"]["meter"]
    tdp_w = config["profile"]["estimate"]["tdp_w"]
    options = f"--meter {meter}" if meter else ""
    return options + (f" --tdp-w {tdp_w}" if tdp_w else "")


def get_profile_spec(wildcards):
    """Everything a profile job needs, as JSON (a change reruns the affected jobs)."""
    return json.dumps(
        {
            "torch_device": DEVICES[wildcards.device],
            "methods": config["methods"],
            "batch_sizes": config["batch_sizes"],
            "protocol": config["protocol"],
            "idle_pre_s": config["profile"]["idle_pre_s"],
            "oom_retry": config["profile"]["oom_retry"],
            "meter": config["profile"]["meter"],
            "estimate": config["profile"]["estimate"],
        },
        sort_keys=True,
    )


def get_profile_rows(wildcards):
    return expand(
        "results/profile/{device}/rows/{model}.parquet", device=DEVICES, model=MODELS
    )
