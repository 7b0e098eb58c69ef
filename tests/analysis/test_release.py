"""Releases others can load, check and merge (issue 41 items 4-5): `joulebench publish`,
`joulebench.load`, `--from-release`, `joulebench merge`, and a simulated two-lab merge."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from helpers.decision_rows import decision_summary, profile_row

from joulebench.analysis.boards import apply_board_factors
from joulebench.analysis.merge import Run, merge, run_factors
from joulebench.analysis.release import load, publish
from joulebench.analysis.release_files import ReleaseError, verify
from joulebench.analysis.summary import write_summary
from joulebench.cli import main
from joulebench.core.protocol import ProtocolSettings
from joulebench.sim.board_experiment import PoolCase


def _run(folder, summary=None):
    """A finished run's folder: its summary and what lies beside it."""
    results = folder / "results"
    (results / "figures").mkdir(parents=True)
    (results / "check" / "gpus").mkdir(parents=True)
    write_summary(
        summary if summary is not None else decision_summary(), results / "summary.parquet"
    )
    (results / "figures" / "accuracy_vs_energy.png").write_bytes(b"\x89PNG fake figure")
    (results / "figures" / "figures.tsv").write_text("figure\tmade\n")
    (results / "check" / "gpus" / "GPU-1.json").write_text('{"check_id": "x"}')
    return folder


def _files(folder) -> dict:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_release_is_the_same_bytes_each_time_and_loads_as_the_summary(tmp_path):
    run = _run(tmp_path / "lab-a")
    first = publish(run, tmp_path / "rel", name="lab-a")
    files = _files(first)
    made = {"summary.parquet", "summary.csv", "COLUMNS.md", "DATASHEET.md", "release.json"}
    copied = {"SHA256SUMS", "figures/accuracy_vs_energy.png", "check/gpus/GPU-1.json"}
    assert made | copied <= set(files)
    again = publish(run, tmp_path / "rel", name="lab-a")  # over the former release
    assert _files(again) == files
    manifest = verify(again)
    assert manifest["release_version"] == 1 and manifest["name"] == "lab-a"
    assert manifest["measured_rows"] == 12 and manifest["fingerprints"]
    table = load(again)
    assert len(table) == len(decision_summary()) and table["energy_per_image_j"].dtype == "float64"
    assert len(load(again, ok=True)) == 12
    fingerprint = table["protocol_fingerprint"].dropna().iloc[0]
    assert len(load(again, fingerprint=fingerprint)) == 12
    text = files["DATASHEET.md"].decode()
    assert "## What was measured" in text and "## Known limits" in text and "CC-BY-4.0" in text
    assert "`energy_per_image_j`" in files["COLUMNS.md"].decode()


def test_a_damaged_or_unknown_release_is_refused_in_one_line(tmp_path, capsys):
    release = publish(_run(tmp_path / "run"), tmp_path / "rel")
    (release / "figures" / "accuracy_vs_energy.png").write_bytes(b"changed")
    with pytest.raises(ReleaseError, match="figures/accuracy_vs_energy.png fails its checksum"):
        load(release)
    assert main(["recommend", "--from-release", str(release), "--min-top1", "50"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("joulebench: error: ") and "fails its checksum" in err
    assert err.count("\n") == 1
    release = publish(_run(tmp_path / "run2"), tmp_path / "rel2")
    manifest = json.loads((release / "release.json").read_text())
    (release / "release.json").write_text(json.dumps({**manifest, "release_version": 9}))
    with pytest.raises(ReleaseError, match="release version 9 is not one this joulebench reads"):
        load(release)
    with pytest.raises(ReleaseError, match="no .*summary.parquet .run the study first"):
        publish(tmp_path / "empty", tmp_path / "rel3")


def test_publish_never_replaces_a_folder_that_is_not_a_release(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    argv = ["publish", "--run", str(_run(tmp_path / "run")), "--output", str(mine)]
    assert main(argv) == 2
    assert "a folder that is not a release" in capsys.readouterr().err
    assert (mine / "notes.txt").read_text() == "keep me"


def test_the_api_loads_a_release_in_a_fresh_process(tmp_path):
    release = publish(_run(tmp_path / "run"), tmp_path / "rel")
    code = (
        f"import joulebench; t = joulebench.load({str(release)!r}, comparable=True); print(len(t))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "12", res.stderr


def _other_lab(preset: str | None = None, scale: float = 1.0) -> pd.DataFrame:
    """decision_summary as another run measured it: energies `scale`d, another preset."""
    rows = decision_summary()
    rows["energy_per_image_j"] *= scale
    for col in ("energy_per_image_ci95_low_j", "energy_per_image_ci95_high_j"):
        rows[col] *= scale
    if preset is not None:
        rows["protocol_preset"] = preset
    from joulebench.tables import protocol_fingerprint

    return rows.assign(protocol_fingerprint=protocol_fingerprint(rows))


def test_merge_compares_one_setup_and_keeps_another_apart(tmp_path):
    a = _run(tmp_path / "lab-a")
    same = _run(tmp_path / "lab-b", _other_lab(scale=1.3))  # same setup, 30 % higher: disagree
    other = _run(tmp_path / "lab-c", _other_lab(preset="fast"))  # another preset: kept apart
    text = merge([str(a), str(same), str(other)], tmp_path / "merged")
    merged = load(tmp_path / "merged")
    assert len(merged[merged["status"] == "ok"]) == 24  # a's 12, c's 12 apart, b's compared
    assert set(merged["device_label"].dropna()) == {"gpu", "gpu@lab-c"}
    assert merged.loc[merged["device_label"] == "gpu", "flags"].str.contains("runs-disagree").all()
    comparisons = pd.read_csv(tmp_path / "merged" / "comparisons.csv")
    assert (comparisons["outcome"] == "compared").sum() == 12
    assert not comparisons.loc[comparisons["outcome"] == "compared", "agree"].any()
    assert comparisons["outcome"].str.startswith("kept apart: protocol_preset").sum() == 12
    assert "12 do not (flagged runs-disagree)" in text and "kept apart under gpu@lab-c" in text
    # the scores, decisions and page work on a merged table
    assert main(["score", str(tmp_path / "merged"), "--output", str(tmp_path / "s.parquet")]) == 0


def test_a_simulated_two_lab_merge_agrees_within_a_percent_after_the_run_factor():
    """Two labs, each its own boards (gains, offsets, silicon drawn), each reading the same
    reference levels: lab 2's rows stated as lab 1's reference board reads them."""
    from joulebench.sim.board_experiment import board_rows

    labs = []
    for seed in (1, 2):
        case = PoolCase(boards=3, seed=seed)
        strict = ProtocolSettings.from_dict({"preset": "strict"})
        records, rows = {}, []
        for i in range(case.boards):
            record, board = board_rows(case, i, strict)
            records[record["uuid"]] = record
            rows += board
        frame = pd.DataFrame(rows).assign(status="ok", device_pool="pool", device_name="H100")
        frame["energy_gpu_per_image_j"] = frame["energy_node_per_image_j"] = float("nan")
        labs.append(Run(f"lab{seed}", apply_board_factors(frame, records), records))
    one, two = labs
    before = _apart(one.summary, two.summary)
    said = run_factors(two, one)
    after = _apart(one.summary, two.summary)
    assert said and before.quantile(0.95) > 0.03
    assert after.quantile(0.95) < 0.015


def _apart(a: pd.DataFrame, b: pd.DataFrame) -> pd.Series:
    """|E_a - E_b| / mean for every workload on every pair of boards across the two labs."""
    pairs = a.merge(b, on="workload", suffixes=("_a", "_b"))
    ea, eb = pairs["energy_per_image_j_a"], pairs["energy_per_image_j_b"]
    return (ea - eb).abs() / ((ea + eb) / 2)


def test_a_summary_row_from_another_joulebench_keeps_merging(tmp_path):
    """A bare summary file is an input too (no boards, no factor)."""
    path = tmp_path / "s.parquet"
    write_summary(decision_summary([profile_row("tiny", "fp32", 1, 0.001, 0.0001, 1.0, 1e3)]), path)
    merge([str(_run(tmp_path / "lab-a")), str(path)], tmp_path / "m")
    assert "tiny" in set(load(tmp_path / "m")["model"])
