"""The figures' manifest (report/figure_manifest.py): which figures a study made and why the
others were not, as the end of the run and `snakemake --report` read it."""

from __future__ import annotations

from joulebench.report import figure_manifest as fm
from joulebench.report.figure_names import FIGURE_NAMES

WHY_NOT = {name: "" for name in FIGURE_NAMES} | {
    "power_trace": "No data: the meter\testimates\nenergy",
    "train_vs_inference": "No data: the study measured inference only",
}


def test_it_round_trips_in_figure_order_on_one_line_each(tmp_path):
    shuffled = dict(reversed(list(WHY_NOT.items())))
    path = fm.write_manifest(tmp_path, shuffled)
    assert path == tmp_path / "figures.tsv"
    lines = path.read_text().splitlines()
    assert lines[0].split("\t") == list(fm.COLUMNS) and len(lines) == len(FIGURE_NAMES) + 1
    read = fm.read_manifest(path)
    assert list(read) == list(FIGURE_NAMES)  # the declared order, whatever was handed
    assert read["power_trace"] == "No data: the meter estimates energy"  # tabs, newlines: spaces
    assert read["accuracy_vs_energy"] == ""
    assert not list(tmp_path.glob("*.tmp"))


def test_the_end_of_a_run_names_each_figure_not_made_and_why(tmp_path):
    fm.write_manifest(tmp_path, WHY_NOT)
    lines = fm.not_made_lines(tmp_path)
    assert lines[1].startswith(f"Figures not made (2 of {len(FIGURE_NAMES)}; each file says why")
    assert lines[2:] == [
        "  power_trace: No data: the meter estimates energy",
        "  train_vs_inference: No data: the study measured inference only",
    ]
    fm.write_manifest(tmp_path, {name: "" for name in FIGURE_NAMES})
    assert fm.not_made_lines(tmp_path) == []


def test_the_report_files_a_figure_not_made_apart(tmp_path):
    path = fm.write_manifest(tmp_path, WHY_NOT)
    assert fm.report_category(path, "power_trace") == fm.NOT_MADE == "Figures not made"
    assert fm.report_category(path, "accuracy_vs_energy") == fm.MADE == "Figures"
    assert fm.report_labels(path, "train_vs_inference") == {
        "figure": "train_vs_inference",
        "made": "no: No data: the study measured inference only",
    }
    assert fm.report_labels(path, "method_value") == {"figure": "method_value", "made": "yes"}


def test_a_folder_without_a_manifest_reads_as_all_made(tmp_path):
    """Figures made before the manifest existed: nothing is said not made, and the report
    files them as figures (Snakemake remakes the manifest, a missing output, on the next run)."""
    assert fm.read_manifest(tmp_path / "figures.tsv") == {}
    assert fm.not_made_lines(tmp_path) == []
    assert fm.report_category(tmp_path / "figures.tsv", "power_trace") == fm.MADE


def test_the_snakefile_can_import_it_without_pandas_or_matplotlib():
    import subprocess
    import sys

    code = (
        "import sys, joulebench.report.figure_manifest; "
        "print(sorted({'pandas', 'matplotlib', 'numpy'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
