# Config validation, model resolution and every input/params function (get_<what>).
import os
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


wildcard_constraints:
    part=r"\d{4}",


def get_final_outputs():
    return ["results/catalog.parquet"]


def get_catalog_part_models(wildcards):
    """The models of one catalog job, shell-quoted."""
    return " ".join(shlex.quote(m) for m in CATALOG_PARTS[int(wildcards.part)])


def get_catalog_parts(wildcards):
    return expand("results/catalog/part-{part}.parquet", part=PART_IDS)
