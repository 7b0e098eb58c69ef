"""A catalog part finishes whatever its models do (jobs.catalog_job, issue 35 D2): a
model whose build ends its process or never returns is a `failed` row with the reason, and
the part keeps every other model's row. The deadline (15 s) leaves a good model room to import
torch on a host busy with other tests."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from conftest import REPO

BAD = REPO / "tests" / "workloads" / "bad.py"
TINY = REPO / "tests" / "workloads" / "tiny_net.py"


@pytest.mark.slow
def test_a_catalog_part_keeps_every_model_whatever_one_does(tmp_path):
    output = tmp_path / "part-0.parquet"
    entries = [
        f"good={BAD}:good",
        f"exits={BAD}:exits_in_build",
        f"sleeps={BAD}:sleeps_in_build",
        f"tiny={TINY}:build",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "joulebench", "catalog", '--settings={"timeout_s": 15}',
         f"--output={output}", "--", *entries],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = pd.read_parquet(output)
    assert rows["model"].tolist() == ["good", "exits", "sleeps", "tiny"]
    assert rows["status"].tolist() == ["ok", "failed", "failed", "ok"]
    reasons = dict(zip(rows["model"], rows["reason"], strict=True))
    assert reasons["exits"] == "crashed: exit 3 (exits: build and count)"
    assert reasons["sleeps"] == "timeout: no progress for 15 s: stopped (sleeps: build and count)"
    assert rows.loc[rows["model"] == "tiny", "params"].iloc[0] > 0
    assert not (tmp_path / "part-0.parquet.parts").exists()
    assert "catalog: 4 models, 2 failed" in done.stderr


def test_a_catalog_worker_announces_each_model_with_its_deadline(tmp_path, monkeypatch, capsys):
    from joulebench.jobs import supervise
    from joulebench.jobs.catalog_job import catalog_worker

    monkeypatch.setenv(supervise.WORKER_ENV, "1")
    catalog_worker([f"a={BAD}:good", f"b={BAD}:good"], tmp_path, start_at=1, timeout_s=7)
    events = [supervise.parse_event(line) for line in capsys.readouterr().out.splitlines()]
    events = [e for e in events if e]
    assert events[0] == {"event": "config", "position": 1, "label": "b",
                         "doing": "build and count", "deadline_s": 7}  # fmt: skip
    assert events[-1] == {"event": "done", "position": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["00001.parquet"]  # model 0 was not redone
