"""Stages 7-8, analysis: from published tables to numbers a reader compares.

`summary` joins catalog, profile and accuracy into one checked table; `score` finds the
Pareto front, efficiency index and grades; `fits` fits energy against model size and
accuracy against energy; `best_models` the end-of-run table. (The repeat statistics are
joulebench.stats, what a study costs joulebench.plan.) Nothing here imports torch or timm
(a test checks it): a published summary is analysed anywhere (docs/scoring.md). The map of
the package: docs/design.md.
"""
