"""`joulebench status` on a fake run's working directory: counts against the plan, what is
measured now and why, the ETA's source, failures, SLURM, and that it only ever reads."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from io import StringIO

import pandas as pd
import pytest
import yaml

from joulebench.cli import main
from joulebench.jobs.concurrency import NodeMeasurements, live_markers
from joulebench.jobs.config_time import format_duration
from joulebench.status import observe
from joulebench.status.plan_view import parse_duration, study_plan
from joulebench.status.progress import MIN_ACTIVE_S, status_of
from joulebench.status.view import format_status, watch
from joulebench.table_io import write_table
from joulebench.tables import PROFILE_COLUMNS

MODELS = ["m1.a", "m2.b", "m3.c", "m4.d"]
STUDY = {
    "models": MODELS,
    "devices": {"cpu": "cpu"},
    "methods": {"fp32": {"precision": "fp32"}, "bf16": {"precision": "bf16"}},
    "batch_sizes": [1, 8],
}  # 4 configurations per model, 16 on the one device
CONFIG_S = 10.0  # each fake row took this long
EVIL = "bad\x1b[2J\u202eweights"  # a reason from data: an escape and a bidi override


def _rows(model: str, statuses: list[str], device: str = "cpu", start: int = 0, **extra):
    """Profile rows as measure_configs writes them (the declared columns; times ISO UTC)."""
    configs = [(m, b) for m in ("fp32", "bf16") for b in (1, 8)][: len(statuses)]
    base = pd.Timestamp("2026-12-01T10:00:00Z") + pd.Timedelta(seconds=start)
    rows = []
    for i, ((method, batch), status) in enumerate(zip(configs, statuses, strict=True)):
        begin = base + pd.Timedelta(seconds=i * CONFIG_S)
        rows.append(
            {
                "device_label": device,
                "torch_device": "cpu",
                "model": model,
                "phase": "inference",
                "method": method,
                "batch_size_requested": batch,
                "batch_size": batch,
                "status": status,
                "reason": "" if status == "ok" else EVIL,
                "start_time_utc": begin.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "end_time_utc": (begin + pd.Timedelta(seconds=CONFIG_S)).strftime(
                    "%Y-%m-%dT%H:%M:%S.%fZ"
                ),
                **extra,
            }
        )
    return pd.DataFrame(rows).reindex(columns=list(PROFILE_COLUMNS))


def _write_rows(run, model, statuses, device="cpu", **kw):
    path = run / "results" / "profile" / device / "rows" / f"{model}.parquet"
    write_table(_rows(model, statuses, device, **kw), path, PROFILE_COLUMNS)
    return path


def _log(run, model, lines, age_s=0.0, device="cpu"):
    path = run / "logs" / "profile" / device / f"{model}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


@pytest.fixture
def snakemake_runs(tmp_path, tmp_path_factory):
    """A Snakemake running in the run's folder (tmp_path): the lock it holds there, and a
    process that is one as /proc shows it (`python .../snakemake`, working in that folder),
    sleeping until killed (the tests that kill it -9 say so)."""
    script = tmp_path_factory.mktemp("bin") / "snakemake"
    script.write_text("import time\ntime.sleep(600)\n")
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".snakemake" / "locks" / "0.input.lock").write_text("results/x\n")
    process = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def run(tmp_path, snakemake_runs):
    """A run mid-way, its Snakemake running: m1 done, m2 done with an oom, m3 measuring
    (growing log), m4's job crashed two hours ago, and a half-written temp file beside the
    rows."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    _write_rows(tmp_path, "m1.a", ["ok"] * 4)
    _write_rows(tmp_path, "m2.b", ["ok", "ok", "ok", "oom"], start=100)
    rows_dir = tmp_path / "results" / "profile" / "cpu" / "rows"
    (rows_dir / ".m3.c.parquet.k2j4.tmp").write_bytes(b"PAR1\x15\x04half")  # atomic_write's
    _log(
        tmp_path,
        "m3.c",
        [
            "m3.c: idle 3.1 W before the model (estimate:tdp-linear)",
            "config 1/4 m3.c fp32 bs1, elapsed 0 s, ETA 2 min 40 s",
            "[1/4] m3.c fp32 bs1: ok 12.00 mJ/image (CV 1.0%), 40.0 img/s",
            "config 2/4 m3.c fp32 bs8, elapsed 11 s, ETA 33 s",
        ],
    )
    _log(
        tmp_path,
        "m4.d",
        [
            "config 1/4 m4.d fp32 bs1, elapsed 0 s, ETA 2 min 40 s",
            "Traceback (most recent call last):",
            "MemoryError",
        ],
        age_s=7200,
    )
    return tmp_path


def _status(run, **kw):
    kw.setdefault("markers", [])  # this host's real markers belong to other runs
    return status_of(run, "study.yaml", **kw)


def _tree(folder):
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def test_counts_against_the_plan(run):
    status = _status(run)
    (cpu,) = status["devices"]
    assert status["plan"]["models"] == 4 and status["plan"]["configs_per_model"] == 4
    assert cpu["planned"] == 16
    assert cpu["ok"] == 7 and cpu["not_ok"] == 1 and cpu["not_ok_by_status"] == {"oom": 1}
    assert cpu["in_running_jobs"] == 1  # m3 finished its first configuration
    assert cpu["left"] == 16 - 8 - 1
    assert status["total"]["left"] == cpu["left"]
    assert status["row_files"] == 2 and status["unreadable"] == []  # the temp file unread


def test_measured_time_eta_and_its_source(run):
    status = _status(run)
    (cpu,) = status["devices"]
    assert cpu["measured_s"] == pytest.approx(8 * CONFIG_S)
    plan = study_plan(run, "study.yaml", {})
    assert cpu["planned_s"] == pytest.approx(8 * plan.config_estimate_s)
    assert cpu["eta_source"] == "measured"
    unstarted = 1  # m4: its job stopped; m1, m2 have rows and m3 runs
    expected = cpu["left"] * CONFIG_S + unstarted * plan.job_overhead_s
    assert cpu["eta_s"] == pytest.approx(expected)


def test_a_gpu_is_planned_with_its_sensors_windows(tmp_path):
    """A GPU's windows follow its sensor's refreshes (phase shifts, lead-ins, the repeats
    its CV needs): its rows are planned as the plan plans a GPU, not as a CPU's."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({**STUDY, "devices": {"h100": "sim:h100"}}))
    _write_rows(tmp_path, "m1.a", ["ok"] * 4, device="h100")
    plan = study_plan(tmp_path, "study.yaml", {})
    (gpu,) = _status(tmp_path)["devices"]
    assert gpu["planned_s"] == pytest.approx(4 * plan.config_estimate_s)
    (tmp_path / "cpu.yaml").write_text(yaml.safe_dump(STUDY))
    on_cpu = study_plan(tmp_path, "cpu.yaml", {})
    assert plan.config_estimate_s > on_cpu.config_estimate_s
    assert plan.method_estimates("sim:h100") == plan.gpu_method_estimate_s
    pool = {"pool": ["sim:h100:0", "sim:h100:1"]}  # a pool's `devices:` value, as status has it
    assert plan.method_estimates(pool) == plan.gpu_method_estimate_s
    assert plan.method_estimates("?") == plan.method_estimate_s  # unknown: as a CPU


def test_eta_from_the_plan_before_any_row(tmp_path):
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    status = _status(tmp_path)  # no results/, no logs/: a run about to start
    (cpu,) = status["devices"]
    plan = study_plan(tmp_path, "study.yaml", {})
    assert cpu["eta_source"] == "plan" and cpu["left"] == 16
    assert cpu["eta_s"] == pytest.approx(16 * plan.config_estimate_s + 4 * plan.job_overhead_s)
    assert status["running"] == status["stopped"] == status["failures"] == []
    assert "measuring now: nothing" in format_status(status)


def test_in_progress_from_a_growing_log_and_a_crash_is_stopped(run):
    status = _status(run)
    (job,) = status["running"]
    assert (job["model"], job["config"], job["configs"]) == ("m3.c", 2, 4)
    assert job["current"] == "fp32 bs8" and job["finished"] == 1
    assert job["eta"] == "33 s" and job["eta_s"] == pytest.approx(33.0, abs=1)  # as of now
    assert job["evidence"].startswith("its log was written")
    (stopped,) = status["stopped"]
    assert stopped["model"] == "m4.d" and stopped["last_line"] == "MemoryError"
    text = format_status(status)
    assert "m3.c: config 2/4 fp32 bs8, elapsed 11 s, ETA 33 s" in text
    assert "stopped without rows" in text and "m4.d" in text


def test_a_running_jobs_elapsed_and_eta_are_as_of_now_and_it_counts_as_running(
    tmp_path, snakemake_runs
):
    """A job writes its line as a configuration starts: 16 s later it has run 16 s more, and
    the device line says a job runs though it has finished no configuration yet."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    _log(tmp_path, "m1.a", ["config 1/4 m1.a fp32 bs1, elapsed 0 s, ETA 2 min 40 s"], age_s=16)
    status = _status(tmp_path)
    (job,) = status["running"]
    assert (job["elapsed"], job["eta"]) == ("16 s", "2 min 24 s")
    assert job["elapsed_s"] == pytest.approx(16, abs=1) and job["eta_s"] == pytest.approx(
        144, abs=1
    )
    (cpu,) = status["devices"]
    assert (cpu["running_jobs"], cpu["in_running_jobs"]) == (1, 0)
    text = format_status(status)
    assert "m1.a: config 1/4 fp32 bs1, elapsed 16 s, ETA 2 min 24 s" in text
    for device in ("cpu ", "total "):
        assert "0 done in 1 job " in next(t for t in text.splitlines() if t.startswith(device))


def test_a_quiet_log_is_stopped_unless_a_process_of_this_run_measures_it(run, tmp_path_factory):
    old = MIN_ACTIVE_S + 60
    _log(run, "m3.c", ["config 3/4 m3.c bf16 bs1, elapsed 30 s, ETA 20 s"], age_s=old)
    assert [j["model"] for j in _status(run)["stopped"]] == ["m3.c", "m4.d"]
    # A live measuring job of this run: its marker, its folder and its output say so.
    output = "results/profile/cpu/rows/m3.c.parquet"
    job = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--output", output], cwd=run
    )
    elsewhere = tmp_path_factory.mktemp("other-run")
    other = subprocess.Popen(  # another run's job on the same label: not ours
        [sys.executable, "-c", "import time; time.sleep(60)", "--output", output], cwd=elsewhere
    )
    try:
        time.sleep(0.2)
        status = _status(run, markers=[(job.pid, "cpu"), (other.pid, "cpu")])
    finally:
        job.kill(), other.kill(), job.wait(), other.wait()
    (running,) = status["running"]
    assert (
        running["model"] == "m3.c" and running["evidence"] == f"process {job.pid} is measuring it"
    )
    assert [j["model"] for j in status["stopped"]] == ["m4.d"]


def test_a_marker_whose_process_cannot_be_read_counts_for_the_newest_log(run, monkeypatch):
    _log(run, "m3.c", ["config 3/4 m3.c bf16 bs1, elapsed 30 s, ETA 20 s"], age_s=MIN_ACTIVE_S * 2)
    monkeypatch.setattr(os, "readlink", lambda path: (_ for _ in ()).throw(PermissionError()))
    status = _status(run, markers=[(os.getpid(), "cpu")])
    assert [j["model"] for j in status["running"]] == ["m3.c"]
    assert status["running"][0]["evidence"] == "a live measuring marker on this host"
    assert [j["model"] for j in status["stopped"]] == ["m4.d"]


def test_live_markers_are_this_hosts_live_processes(tmp_path):
    host = os.uname().nodename
    (tmp_path / f"{host}-999999999-gone").write_text("")
    (tmp_path / f"otherhost-{os.getppid()}-g1").write_text("")
    (tmp_path / f"{host}-{os.getppid()}-h200").write_text("")
    with NodeMeasurements("cpu", tmp_path):
        assert live_markers(tmp_path) == sorted([(os.getppid(), "h200"), (os.getpid(), "cpu")])
    assert live_markers(tmp_path / "missing") == []


def test_failures_newest_first_with_printable_reasons(run):
    _write_rows(run, "m4.d", ["ok", "ok", "error", "skipped"], start=500)
    status = _status(run)
    failures = status["failures"]
    # a skip (say, a precision the device only emulates) is counted, not listed as failed
    assert [(f["model"], f["status"]) for f in failures] == [("m4.d", "error"), ("m2.b", "oom")]
    assert failures[0]["reason"] == "bad\\x1b[2J\\u202eweights"
    assert status["devices"][0]["not_ok_by_status"] == {"error": 1, "oom": 1, "skipped": 1}
    text = format_status(status)
    assert "\x1b" not in text and "\u202e" not in text
    assert "m4.d  bf16 bs1: error: bad\\x1b[2J\\u202eweights" in text
    assert ": skipped:" not in text


def test_status_never_writes(run):
    before = _tree(run)
    _status(run)
    assert main(["status", "--directory", str(run), "--configfile", "study.yaml"]) == 0
    assert main(["status", "-d", str(run), "--configfile", "study.yaml", "--json"]) == 0
    assert _tree(run) == before


def test_damaged_and_vanishing_files_are_left_out(run, monkeypatch):
    rows_dir = run / "results" / "profile" / "cpu" / "rows"
    whole = (rows_dir / "m1.a.parquet").read_bytes()
    (rows_dir / "m4.d.parquet").write_bytes(whole[: len(whole) // 2])  # cut short
    real = observe.row_files

    def with_a_ghost(directory):  # a file listed, then gone before it is read
        return [*real(directory), rows_dir / "gone.parquet"]

    monkeypatch.setattr(observe, "row_files", with_a_ghost)
    status = _status(run)
    assert sorted(status["unreadable"]) == [
        "results/profile/cpu/rows/gone.parquet",
        "results/profile/cpu/rows/m4.d.parquet",
    ]
    assert status["devices"][0]["ok"] == 7  # the readable rows still count
    assert "unreadable now" in format_status(status)


def test_watch_reads_a_rows_file_again_only_when_it_changes(run, monkeypatch):
    reads = []
    real = observe._read_columns
    monkeypatch.setattr(observe, "_read_columns", lambda p: reads.append(p.stem) or real(p))
    cache: dict = {}
    assert _status(run, cache=cache)["devices"][0]["ok"] == 7
    assert sorted(reads) == ["m1.a", "m2.b"]
    reads.clear()
    _write_rows(run, "m2.b", ["ok"] * 4, start=100)  # replaced (a rerun)
    assert _status(run, cache=cache)["devices"][0]["ok"] == 8
    assert reads == ["m2.b"]


def test_a_log_that_vanishes_mid_read_is_skipped(run, monkeypatch):
    real = observe._tail
    monkeypatch.setattr(observe, "_tail", lambda p: None if p.stem == "m3.c" else real(p))
    assert [j["model"] for j in _status(run)["stopped"]] == ["m4.d"]


def test_json_is_the_same_as_a_dict(run, capsys):
    assert main(["status", "--directory", str(run), "--configfile", "study.yaml", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(json.dumps(_status(run)))
    for key in ("devices", "total", "failures", "plan"):
        assert printed[key] == expected[key], key
    assert [j["model"] for j in printed["stopped"]] == ["m4.d"]  # its age moved on


def test_the_text_view(run):
    text = format_status(_status(run))
    lines = text.splitlines()
    assert lines[0].startswith(f"joulebench status of {run}")
    study = run / "study.yaml"  # found in the run's folder
    assert f"study: {study}: 4 models (the study's names) x 4 configurations each" in text
    cpu = next(line for line in lines if line.startswith("cpu "))
    assert cpu.split()[:8] == ["cpu", "cpu", "16", "7", "1", "(oom", "1)", "1"]
    assert "(measured)" in cpu


def test_a_pool_counts_per_gpu_and_its_jobs_at_once(tmp_path):
    study = {**STUDY, "devices": {"h200": "cuda"}}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    for i, model in enumerate(MODELS[:2]):
        frame = _rows(model, ["ok", "ok", "ok", "oom"], device="h200").assign(gpu_index=i)
        path = tmp_path / "results" / "profile" / "h200" / "rows" / f"{model}.parquet"
        write_table(frame, path)  # a column tables.py does not declare yet (issue 24 item 1)
    (h200,) = _status(tmp_path)["devices"]
    assert h200["gpus"] == [{"gpu": "0", "ok": 3, "not_ok": 1}, {"gpu": "1", "ok": 3, "not_ok": 1}]
    assert h200["jobs_at_once"] == 2
    plan = study_plan(tmp_path, "study.yaml", {})
    expected = (8 * CONFIG_S + 2 * plan.job_overhead_s) / 2
    assert h200["eta_s"] == pytest.approx(expected)
    assert "h200 gpu 1: ok 3, not ok 1" in format_status(_status(tmp_path))


def test_a_split_models_methods_are_jobs_of_their_own(tmp_path, snakemake_runs):
    """A pool's job per model and method (rows/<model>+<method>.parquet, its own log): a
    method done is not shown as a stopped job, the one running is, and the model counts as
    started once."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    model = MODELS[0]
    path = tmp_path / "results" / "profile" / "cpu" / "rows" / f"{model}+fp32.parquet"
    write_table(_rows(model, ["ok", "ok"]), path, PROFILE_COLUMNS)
    _log(tmp_path, f"{model}+fp32", [f"[2/2] {model} fp32 bs8: ok 1.00 mJ/image"], age_s=7200)
    _log(tmp_path, f"{model}+bf16", [f"config 1/2 {model} bf16 bs1, elapsed 0 s, ETA 20 s"])
    status = _status(tmp_path)
    (job,) = status["running"]
    assert job["model"] == f"{model}+bf16" and status["stopped"] == []
    (cpu,) = status["devices"]
    plan = study_plan(tmp_path, "study.yaml", {})
    unstarted = len(plan.models) - 1  # the split model runs and has rows: counted once
    assert cpu["eta_s"] == pytest.approx(cpu["left"] * CONFIG_S + unstarted * plan.job_overhead_s)


def test_devices_auto_are_the_labels_the_run_started(tmp_path):
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({**STUDY, "devices": "auto"}))
    assert _status(tmp_path)["devices"] == []
    assert "no device has started yet; each measures 16" in format_status(_status(tmp_path))
    _write_rows(tmp_path, "m1.a", ["ok"] * 4, device="h100-1")
    (tmp_path / "logs" / "idle").mkdir(parents=True)
    (tmp_path / "logs" / "idle" / "h100-0.log").write_text("")
    labels = [d["label"] for d in _status(tmp_path)["devices"]]
    assert labels == ["h100-0", "h100-1"]
    assert [d["planned"] for d in _status(tmp_path)["devices"]] == [16, 16]


def test_models_that_need_timm_are_resolved_in_a_child_or_left_unknown(tmp_path):
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({**STUDY, "models": ["m*"]}))
    plan = study_plan(tmp_path, "study.yaml", {}, resolve=lambda entries, d: MODELS[:3])
    assert plan.models == MODELS[:3] and "timm" in plan.models_source

    def fails(entries, directory):
        raise ValueError("models: 'm*' glob matches no timm model.")

    plan = study_plan(tmp_path, "study.yaml", {}, resolve=fails)
    status = _status(tmp_path, plan=plan)
    assert plan.models is None and status["devices"][0]["left"] is None
    assert "? models (unknown" in format_status(status)


def _b64(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode()


def test_slurm_jobs_from_squeue_and_snakemake_marks(run):
    (run / ".snakemake" / "slurm_logs" / "group_measure" / "x").mkdir(parents=True)
    (run / ".snakemake" / "slurm_logs" / "group_measure" / "x" / "41.log").write_text("")
    incomplete = run / ".snakemake" / "incomplete"
    incomplete.mkdir()
    (incomplete / _b64("results/profile/cpu/rows/m4.d.parquet")).write_text(
        json.dumps({"external_jobid": "42"})
    )
    (run / ".snakemake" / "locks" / "0.output.lock").write_text("results/x\n")
    here = os.path.realpath(run)
    squeue = f"42|RUNNING|{here}\n43|PENDING|{here}\n44|PENDING|{here}\n45|RUNNING|/elsewhere\n"
    calls = []

    def fake_squeue(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, squeue, "")

    status = _status(run, slurm_run=fake_squeue)
    assert calls[0][:2] == ["squeue", "--me"]
    assert status["slurm"]["pending"] == 2 and status["slurm"]["running"] == 1
    assert status["slurm"]["job_logs"] == 1
    assert (status["snakemake"]["locked"], status["snakemake"]["incomplete"]) == (True, 1)
    # m4.d's job crashed in its log, but SLURM says its allocation runs (a retry): running
    running = {j["model"]: j["evidence"] for j in status["running"]}
    assert running["m4.d"] == "SLURM job 42 is running"
    assert "SLURM: 2 pending, 1 running" in format_status(status)


def test_without_squeue_slurm_counts_are_said_to_be_unknown(run):
    (run / ".snakemake" / "slurm_logs").mkdir(parents=True)

    def missing(cmd, **kw):
        raise FileNotFoundError(2, "No such file or directory", "squeue")

    status = _status(run, slurm_run=missing)
    assert status["slurm"]["pending"] is None and "squeue not available" in status["slurm"]["note"]
    assert "SLURM: job counts unknown" in format_status(status)
    assert _status(run)["slurm"] is not None  # the real squeue: absent here, never an error


def test_not_a_slurm_run_has_no_slurm_section(run):
    assert _status(run)["slurm"] is None


def test_durations_read_back():
    for seconds in (0, 42, 61, 599, 660, 3600 * 2 + 300, 86400 * 8 + 3600 * 11):
        text = format_duration(seconds)
        assert parse_duration(text) == pytest.approx(seconds, rel=0.02, abs=31), text
    assert parse_duration("?") is None and parse_duration("soon") is None


def test_the_log_parser_reads_the_jobs_lines():
    log = observe.parse_progress(
        observe.JobLog("cpu", "m", "p", 0.0),
        "config 3/8 m bf16 train bs8, elapsed 1 min 02 s, ETA 3 min 10 s\n"
        "  bf16 train bs8: out of memory, retrying at half the batch\n",
    )
    assert (log.config, log.configs, log.current) == (3, 8, "bf16 train bs8")
    assert (log.elapsed, log.eta, log.finished, log.crashed) == (
        "1 min 02 s",
        "3 min 10 s",
        0,
        False,
    )
    ended = observe.parse_progress(
        observe.JobLog("cpu", "m", "p", 0.0),
        "config 2/2 m fp32 bs8, elapsed 5 s, ETA 5 s\n[2/2] m fp32 bs8: ok 1 mJ\n"
        "m: 2 configurations in 10 s\n",
    )
    assert ended.finished == 2 and ended.ended
    one = observe.parse_progress(
        observe.JobLog("cpu", "m", "p", 0.0),
        "[1/1] m fp32 bs8: ok 1 mJ\nm: 1 configuration in 3 s\n",  # singular: its job says so
    )
    assert one.finished == 1 and one.ended


def test_watch_refreshes_until_ctrl_c():
    shown, sleeps = [], []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 2:
            raise KeyboardInterrupt

    assert watch(lambda: shown.append(1), 3.0, out=StringIO(), clock=sleep) == 0
    assert shown == [1, 1] and sleeps == [3.0, 3.0]


def test_status_imports_no_torch(run):
    code = (
        "import sys\n"
        "from joulebench.cli import main\n"
        f"assert main(['status', '-d', {str(run)!r}, '--configfile', 'study.yaml']) == 0\n"
        "bad = [m for m in ('torch', 'timm', 'torchvision') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "m3.c: config 2/4" in res.stdout


def test_a_missing_directory_is_one_line(tmp_path, capsys):
    assert main(["status", "--directory", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip().endswith("no such folder")


def test_a_cpus_rows_with_empty_gpu_columns_list_no_gpu(tmp_path):
    """A CPU's rows carry the GPU columns empty (''), as the default study writes them: no
    `cpu gpu : ok 6` line (seen mid-run on a fresh clone)."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    frame = _rows(MODELS[0], ["ok", "ok"], device="cpu").assign(gpu_uuid="", gpu_index=pd.NA)
    write_table(frame, tmp_path / "results" / "profile" / "cpu" / "rows" / f"{MODELS[0]}.parquet")
    (cpu,) = _status(tmp_path)["devices"]
    assert cpu["gpus"] == []
    assert " gpu " not in format_status(_status(tmp_path))


def test_without_snakemake_a_recent_log_is_a_stopped_job_not_measuring_now(run, snakemake_runs):
    """A job that crashed a minute ago (its log fresh, its process and Snakemake gone) is
    stopped, never "measuring now ... ETA 6 s" beside "no Snakemake lock here"."""
    (run / ".snakemake" / "locks" / "0.input.lock").unlink()
    snakemake_runs.kill()
    snakemake_runs.wait()
    status = _status(run)
    assert status["running"] == []
    assert [j["model"] for j in status["stopped"]] == ["m3.c", "m4.d"]
    text = format_status(status)
    assert "measuring now: nothing" in text and "no Snakemake lock here" in text


def _kill_9(process) -> int:
    process.kill()  # SIGKILL: it leaves its lock behind, as kill -9 of Snakemake does
    process.wait()
    return process.pid


def test_after_kill_9_of_snakemake_its_lock_is_stale_and_its_job_stopped(run, snakemake_runs):
    """Issue 40 item 6: Snakemake killed -9 leaves its lock; its job ends, its log's last line
    saying so. Status says the run is stopped, the lock stale and how to resume, and lists
    the job as stopped, never "measuring now ... ETA 0 s"."""
    pid = _kill_9(snakemake_runs)
    _log(run, "m3.c", [
        "config 2/4 m3.c fp32 bs8, elapsed 11 s, ETA 0 s",
        f"joulebench: m3.c: stopped: its Snakemake (pid {pid}) is gone",
    ])  # fmt: skip
    before = _tree(run)
    status = _status(run)
    assert _tree(run) == before  # still only reads: the lock is left to `snakemake --unlock`
    assert status["running"] == [] and [j["model"] for j in status["stopped"]] == ["m3.c", "m4.d"]
    snake = status["snakemake"]
    assert snake["locked"] and snake["stale_lock"] and snake["running"] is False
    assert snake["evidence"] == f"logs/profile/cpu/m3.c.log ends: its Snakemake (pid {pid}) is gone"
    text = format_status(status)
    assert "snakemake: not running (stopped): its lock is stale (logs/profile/cpu/m3.c.log" in text
    assert "to resume: snakemake --unlock (with the run's options), then the run's command" in text
    assert "measuring now: nothing (the run is stopped)" in text and "ETA 0 s" not in text
    assert "m3.c: log last written 0 s ago; last line: joulebench: m3.c: stopped: its " in text


def test_a_lock_whose_snakemake_is_gone_from_this_host_is_stale(run, snakemake_runs):
    """The whole process group killed (a power cut of the run, scancel): no job said why. In
    a local run no Snakemake runs in the directory on this host, so its lock is stale; on
    SLURM its Snakemake may run on another login node, so the lock still counts."""
    assert _status(run)["snakemake"]["running"] and _status(run)["running"]
    _kill_9(snakemake_runs)
    status = _status(run)
    assert status["snakemake"]["stale_lock"] and status["running"] == []
    assert status["snakemake"]["evidence"] == "no Snakemake runs in this directory on this host"
    (run / ".snakemake" / "slurm_logs").mkdir()
    slurm = _status(run)
    assert not slurm["snakemake"]["stale_lock"] and slurm["snakemake"]["running"]
    assert [j["model"] for j in slurm["running"]] == ["m3.c"]


def test_the_stopped_line_makes_a_lock_stale_only_if_written_after_it():
    """Where /proc cannot be read (not Linux), the job's line decides; a lock taken after
    it (a new Snakemake, after --unlock) is not the dead one's."""
    from joulebench.status.progress import snakemake_state

    log = observe.parse_progress(
        observe.JobLog("cpu", "m", "logs/profile/cpu/m.log", 30.0),
        "joulebench: m: stopped: its Snakemake (pid 77) is gone\n",
    )
    assert log.snakemake_gone == 77
    now = 1000.0
    old_lock = observe.SnakemakeMarks(True, {}, lock_mtime=now - 60)
    new_lock = observe.SnakemakeMarks(True, {}, lock_mtime=now - 10)
    assert snakemake_state(old_lock, None, [log], None, now)["stale_lock"]
    assert not snakemake_state(new_lock, None, [log], None, now)["stale_lock"]
    assert snakemake_state(new_lock, None, [log], None, now)["running"]
    assert snakemake_state(old_lock, [5], [log], None, now)["running"]  # a live one here


def test_a_cpu_measures_one_job_at_a_time(run):
    """Two CPU logs running at once (a killed run's and a new one's) do not make the CPU
    measure two jobs at once: its ETA is for one."""
    _log(run, "m4.d", ["config 1/4 m4.d fp32 bs1, elapsed 0 s, ETA 2 min 40 s"])
    status = _status(run)
    assert len(status["running"]) == 2
    (cpu,) = status["devices"]
    assert cpu["jobs_at_once"] == 1
    assert "jobs at once" not in format_status(status)


def test_gpus_that_failed_are_listed_with_their_evidence(run):
    """A GPU marked bad in this run (schedule.bad_gpus, issue 35 item 4) is shown with why."""
    from joulebench.schedule.bad_gpus import mark_bad

    mark_bad({"uuid": "GPU-dead", "index": 3}, "xid", "GPU has fallen off the bus",
             directory=run, device_label="h200", job="h200 m1.a")  # fmt: skip
    status = _status(run)
    assert [g["uuid"] for g in status["bad_gpus"]] == ["GPU-dead"]
    text = format_status(status)
    assert "GPUs that failed (no model is given to them again in this run):" in text
    assert "h200  GPU-dead (index 3)  xid at " in text
    assert "(h200 m1.a): GPU has fallen off the bus" in text
