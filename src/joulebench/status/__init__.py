"""`joulebench status`: a live view of a long run, read from its working directory.

`observe` reads what a run leaves on disk while it goes on, and only reads: the profile
rows (a few columns of each model's file), the profile jobs' logs (their last lines), this
host's measuring markers (`jobs.concurrency`), Snakemake's incomplete marks and locks,
and on SLURM the executor's job logs and `squeue`. Half-written temp files, files that
appear or vanish mid-read and a missing `results/` are expected, never errors. `progress`
sets that beside the study's plan (`joulebench.plan`): per device, configurations done, not
ok and left, measured against planned time, an ETA, what is measured now and the last
failures, as a dict (`--json`) or text. Nothing here imports torch (docs/status.md). The
map of the package: docs/design.md.
"""
