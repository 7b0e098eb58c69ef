# joulebench: energy per image of image-classification models, beside their accuracy.
# The Snakefile is a table of contents; all logic lives in src/joulebench.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The package is importable from a plain clone (no install needed for the workflow).
sys.path.insert(0, str(Path(workflow.basedir) / "src"))


# The default study; --configfile and --config override it (from any working directory).
configfile: Path(workflow.basedir) / "config.yaml"


# A key a study file (--configfile / --config) sets replaces the default's whole, so a study
# can drop the default's devices or methods; keys it leaves out still come from config.yaml.
config.update(workflow.config_settings.overwrite_config)


include: "workflow/rules/common.smk"


# From a summary (from_summary), nothing is measured: no rule may claim the summary's path
# (results/summary.parquet is the README's example), or Snakemake would rebuild it from no
# models and delete the measured tables when that fails.
if not FROM_SUMMARY:

    include: "workflow/rules/catalog.smk"
    include: "workflow/rules/profile.smk"
    include: "workflow/rules/accuracy.smk"
    include: "workflow/rules/summary.smk"


include: "workflow/rules/score.smk"
include: "workflow/rules/figures.smk"


onstart:
    print(printable(start_message(), newlines=True), flush=True)


onsuccess:
    print(printable(end_message(), newlines=True), flush=True)


onerror:
    print("joulebench: a job failed; see its log under logs/ (rerun to resume).")


rule all:
    default_target: True
    input:
        get_final_outputs(),
