"""Stages 7-8, analysis: from published tables to numbers a reader compares.

`summary` joins catalog, profile and accuracy into one checked table; `score` finds the
Pareto front, efficiency index and grades; `fits` fits energy against model size and
accuracy against energy; `stats` holds the repeat statistics; `best_models` the end-of-run
table; `plan` what a study costs before it runs. Nothing here imports torch or timm (a test
checks it): a published summary is analysed anywhere (docs/scoring.md, docs/plan.md). The
map of the package: docs/design.md.
"""
