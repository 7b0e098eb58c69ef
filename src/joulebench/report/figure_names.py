"""The figures' names, in the order they are drawn: declared here, importable without matplotlib.

The workflow reads them on every parse of the Snakefile (every cluster job re-parses it), so
this module imports nothing. Each figure module registers under one of these names
(`report.figures.registry.figure` refuses any other), and a test checks that the figures
registered are exactly these, each with its caption in workflow/report/<name>.rst.
"""

FIGURE_NAMES = (
    "accuracy_vs_energy",
    "energy_vs_factors",
    "method_savings",
    "energy_vs_batch_size",
    "power_trace",
    "throughput_vs_energy",
    "train_vs_inference",
    "energy_optimal_front",
    "method_value",
    "power_limit_sweep",
)
