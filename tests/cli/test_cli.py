"""The command line's input: every bad value is one line (`joulebench: error: ...` or argparse's
usage error), never a traceback; numeric options are range-checked on the way in."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml
from conftest import REPO
from helpers.cli_options import describe
from helpers.decision_rows import decision_summary

from joulebench.analysis.summary import write_summary
from joulebench.cli import build_parser, main


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


def test_every_numeric_option_is_range_checked_one_way():
    """An option taking or defaulting to a number parses with cli's `number` (one way of
    declaring a range), never a bare int or float."""
    unchecked = []
    for name, sub in _subcommands().items():
        for action in sub._actions:
            numeric = isinstance(action.default, int | float) and not isinstance(
                action.default, bool
            )
            if action.type in (int, float) or (numeric and action.type is None):
                unchecked.append(f"{name} {action.option_strings}")
            elif action.type is not None and action.type is not str:
                # numbers through `number`; a duration with its unit (8h) through hours_type,
                # which ranges it with `number` too
                accepted = ("number.<locals>.parse", "hours_type")
                assert action.type.__qualname__ in accepted, (name, action)
    assert unchecked == []


def test_every_command_keeps_its_options():
    """Each subcommand's options (flags, dest, type and range, default, choices, required,
    help) as tests/data/cli_options.json holds them: a change is made on purpose, by writing
    that file again (tests/helpers/cli_options.py says how)."""
    expected = json.loads((REPO / "tests" / "data" / "cli_options.json").read_text())
    got = describe(build_parser())
    assert list(got) == list(expected)  # the commands, in the order --help lists them
    for name, command in expected.items():
        assert got[name] == command, name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["profile", "m", "--min-repeat-s", "-1"], "argument --min-repeat-s: must be >= 0, got -1"),
        (["profile", "m", "--repeats", "0"], "argument --repeats: must be >= 1, got 0"),
        (["profile", "m", "--batch-size", "2.5"], "argument --batch-size: must be a whole number"),
        (["profile", "m", "--tdp-w", "0"], "argument --tdp-w: must be > 0, got 0"),
        (["profile", "m", "--quiet-wait-s", "-1"], "argument --quiet-wait-s: must be >= 0"),
        (["profile", "m", "--quiet-wait-s", "601"], "argument --quiet-wait-s: must be <= 600"),
        (["recommend", "--min-top1", "150"], "argument --min-top1: must be <= 100, got 150"),
        (["check", "--idle-s", "-5"], "argument --idle-s: must be > 0, got -5"),
        (["plan", "--gpus", "0"], "argument --gpus: must be >= 1, got 0"),
        (
            ["profile", "m", "--batch-size", "100000000000"],
            "argument --batch-size: must be <= 65536, got 100000000000",
        ),
        (["label", "m", "--batch-size", "65537"], "argument --batch-size: must be <= 65536"),
    ],
)
def test_out_of_range_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.fixture
def summary(tmp_path):
    path = tmp_path / "summary.parquet"
    write_summary(decision_summary(), path)
    return path


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("{bad", "--settings: not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "--settings: must be a JSON object {...}, not list"),
    ],
)
def test_bad_json_settings_is_one_line(summary, tmp_path, capsys, settings, message):
    out = tmp_path / "scores.parquet"
    assert main(["score", str(summary), "--settings", settings, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"joulebench: error: {message}") and err.count("\n") == 1


def test_a_path_that_does_not_exist_is_named(tmp_path, capsys):
    missing = tmp_path / "models.txt"
    assert main(["catalog", "--models-file", str(missing), "--output", "x.parquet"]) == 2
    assert capsys.readouterr().err == f"joulebench: error: {missing}: No such file or directory\n"


def _cpu_study(tmp_path):
    study = tmp_path / "cpu.yaml"
    study.write_text(yaml.safe_dump({"models": ["resnet18.a1_in1k"], "devices": {"cpu": "cpu"}}))
    return str(study)


def test_plan_gpus_on_a_cpu_study_is_one_line(tmp_path, capsys):
    assert main(["plan", "--configfile", _cpu_study(tmp_path), "--gpus", "2"]) == 2
    assert capsys.readouterr().err == (
        "joulebench: error: --gpus needs a study with a GPU device (its devices: are all cpu)\n"
    )


def test_plan_with_a_profile_folder_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "no-profile"
    assert main(["plan", "--configfile", _cpu_study(tmp_path), "--profile", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"joulebench: error: cannot read config file {missing}/config.yaml: "
        "No such file or directory\n"
    )


class _Stop(Exception):
    pass


@pytest.mark.parametrize(("argv", "wait_s"), [([], 10.0), (["--quiet-wait-s", "0"], 0.0)])
def test_profile_waits_for_quiet_as_long_as_it_is_told(argv, wait_s, monkeypatch):
    """`--quiet-wait-s` reaches the job's spec (core.quiet waits that long); by default the
    study's `profile.quiet_wait_s`."""
    import joulebench.jobs.adhoc as adhoc

    def job_of(job, **kw):
        raise _Stop(job.spec.quiet_wait_s)

    monkeypatch.setattr(adhoc, "supervised_job", job_of)
    with pytest.raises(_Stop) as stop:
        main(["profile", "resnet18.a1_in1k", *argv])
    assert stop.value.args == (wait_s,)


def test_profile_that_measured_nothing_exits_non_zero_with_the_reason(tmp_path, capsys):
    workload = tmp_path / "broken.py"
    workload.write_text("def build():\n    raise RuntimeError('cannot build this model')\n")
    argv = ["profile", f"{workload}:build", "--repeats", "1", "--min-repeat-s", "0.05"]
    argv += ["--quiet-wait-s", "0"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "build-error" in captured.out  # the table still shows the row
    assert captured.err.splitlines()[-1] == (
        "joulebench: error: nothing was measured: build-error: "
        "RuntimeError: cannot build this model"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            '{"grade_thresholds": [0.1, 0.5]}',
            "--settings: grade_thresholds: grade thresholds need 6 numbers (A..F): [0.1, 0.5]",
        ),
        ('{"max_energy_cv": -1}', "--settings: max_energy_cv: max_energy_cv must be a positive"),
        ('{"energy_scope": "rack"}', "--settings: energy_scope: energy_scope must be one of"),
    ],
)
def test_a_setting_its_stage_refuses_is_one_line_with_rc_2(
    summary, tmp_path, capsys, settings, message
):
    out = tmp_path / "scores.parquet"
    assert main(["score", str(summary), "--settings", settings, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"joulebench: error: {message}") and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["idle", "--device-label=c", "--output=o", '--settings={"duration_s": 1e999}'], "finite"),
        (["idle", "--device-label=c", "--output=o", '--settings={"duration_s": "10"}'], "number"),
        (["idle", "--device-label=c", "--output=o", '--settings={"tdp_w": 0}'], "must be > 0"),
        (["catalog", "m", "--output=o", '--settings={"timeout_s": -1}'], "must be > 0, got -1"),
        (
            ["accuracy", "m", "--shard-dir=d", "--output=o", '--settings={"batch_size": 2.5}'],
            "whole",
        ),
        (["accuracy", "m", "--shard-dir=d", "--output=o", '--settings={"device": "tpu"}'], "tpu"),
        (["prepare", "--source={}", "--input-config={}", '--settings={"workers": 0}'], ">= 1"),
        (["idle", "--device-label=c", "--output=o", '--settings={"seconds": 1}'], "unknown"),
    ],
)
def test_a_rules_settings_are_checked_as_its_options_were(argv, message, capsys):
    """Idle, catalog and accuracy rules hand their numbers in --settings: range-checked as an
    option's, one line, before the stage runs."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("joulebench: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("source", "input_config", "message"),
    [
        ("{}", "{}", "an input config needs img_size, input_size, or input_height and input_width"),
        ('{"kind": "tape"}', '{"img_size": 224}', "dataset kind 'tape' is not one of"),
    ],
)
def test_prepare_with_a_bad_source_or_input_config_is_one_line(
    tmp_path, capsys, source, input_config, message
):
    argv = ["prepare", "--source", source, "--input-config", input_config]
    assert main([*argv, "--out-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"joulebench: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize("command", ["plan", "devices", "status"])
def test_a_study_file_the_bounded_reader_refuses_is_one_line_in_every_command(
    tmp_path, capsys, command
):
    """An alias bomb once grew to a MemoryError, 5,000 levels to a RecursionError, and a
    file of `name:...:` lines was echoed line by line as unknown keys."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x]\nb: &b [*a, *a]\nmodels: *b\n")
    deep = tmp_path / "deep.yaml"
    deep.write_text("models: " + "[" * 5000 + "]" * 5000 + "\n")
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$secret:19000:0:99999:7:::\n")
    for study, words in [(bomb, "YAML aliases"), (deep, "nested deeper"), (shadow, "not a study")]:
        argv = [command, "--configfile", str(study)]
        assert main([*argv, *(["-d", str(tmp_path)] if command == "status" else [])]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"joulebench: error: {study}") and err.count("\n") == 1
        assert words in err and "secret" not in err


_DEEP = '{"reference_model": ' + "[" * 20000 + "]" * 20000 + "}"


@pytest.mark.parametrize(
    ("command", "settings", "message"),
    [
        ("score", '{"reference_model": {"$ne": 1}}', "reference_model: must be a text or null"),
        ("score", '{"energy": "bogus"}', "energy: energy must be one of ('total', 'dynamic')"),
        ("score", '{"invalid_flags": null}', "invalid_flags: must be a list of texts, got null"),
        ("score", '{"invalid_flags": "other-load"}', "invalid_flags: must be a list of texts"),
        (
            "score",
            '{"invalid_flags": ["other-lod"]}',
            "unknown flag 'other-lod' (closest: 'other-load')",
        ),
        ("score", _DEEP, "--settings: nested too deep"),
        ("score", '{"max_energy_cv": NaN}', "--settings: NaN is not a number a setting can be"),
        ("score", '{"energy": "total", "energy": "dynamic"}', "key 'energy' is given twice"),
        ("fits", '{"min_models": -5}', "min_models: must be >= 2, got -5"),
        ("best-configs", '{"max_latency_ms": "abc"}', "max_latency_ms: must be a list of numbers"),
        ("best-configs", '{"max_latency_ms": [-1]}', "values must be numbers > 0, got -1"),
        ("webapp", '{"protocol": "x"}', 'protocol: must be an object {...} or null, got "x"'),
        ("webapp", '{"protocol": {"preset": "turbo"}}', "protocol: "),
        ("reference", '{"commit": "../../etc/passwd"}', "must be a full 40-hex-digit timm commit"),
    ],
)
def test_every_settings_value_is_checked_in_one_line(
    summary, tmp_path, capsys, command, settings, message
):
    """Issue 40 items 5, 7 and 10: what ended in a traceback, or was read letter by letter."""
    out = tmp_path / "out.parquet"
    args = {
        "score": ["score", str(summary)],
        "fits": ["fits", str(summary), "--outdir", str(tmp_path / "fits")],
        "best-configs": ["best-configs", str(summary)],
        "webapp": ["webapp", "--summary", str(summary), "--scores", str(summary)],
        "reference": ["reference", "--catalog", str(summary)],
    }[command]
    argv = [*args, "--settings", settings]
    if command not in ("fits",):
        argv += ["--output", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("joulebench: error: --settings: ") and err.count("\n") == 1, err[:300]
    assert message in err
    assert not out.exists()
