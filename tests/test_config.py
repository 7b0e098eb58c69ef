"""Config validation: the schema's defaults and messages, and errors before any job runs."""

import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from joulebench import rule_settings
from joulebench.rule_settings import COMMANDS

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")


def check(config):
    validate(config, SCHEMA)
    return config


def test_default_config_is_valid_and_gets_defaults():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config.pop("catalog", None)
    check(config)
    assert config["catalog"]["models_per_job"] == 100


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"models": ["resnet18"], "bogus": 1}, "'bogus' was unexpected"),
        ({"models": "resnet18"}, "is not of type 'array'"),
        ({"models": []}, "should be non-empty"),
        ({"models": ["resnet18"], "catalog": {"models_per_job": 0}}, "minimum of 1"),
        ({"models": ["resnet18"], "catalog": {"models_per_job": "x"}}, "not of type 'integer'"),
    ],
)
def test_schema_errors(config, message):
    with pytest.raises(WorkflowError) as err:
        check(config)
    assert message in str(err.value.args[0])


def test_workflow_stops_on_unknown_model_before_any_job(run_workflow):
    result = run_workflow({"models": ["resnet18.a1_in1k", "resnet5O"]}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "'resnet5O' is no timm model" in output
    assert "Closest valid names: resnet50" in output
    assert not Path(run_workflow.workdir, "results").exists()


def test_workflow_stops_on_unknown_key(run_workflow):
    result = run_workflow({"models": ["resnet18"], "modles": ["x"]}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "'modles' was unexpected" in output
    config = run_workflow.workdir / "test-config.yaml"
    assert f"unknown key 'modles' at the top level (set in {config})" in output
    assert "closest valid key: 'models'" in output
    assert len(output.splitlines()) < 20, output  # the key, not the 900-line schema


def test_workflow_refuses_a_model_entry_that_reads_as_an_option(run_workflow):
    result = run_workflow({"models": ["--help=models/m.py:f"]}, "-n")
    assert result.returncode != 0
    assert "'--help=models/m.py:f' starts with '-'" in result.stdout + result.stderr


def test_workflow_stops_on_a_device_it_cannot_measure_before_any_job(run_workflow):
    """cuda:99 exists nowhere: the run stops before its first job, naming what is missing."""
    config = {"models": ["resnet18.a1_in1k"], "devices": {"gpu": "cuda:99"}, "batch_sizes": [1]}
    result = run_workflow(config)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "devices: 'gpu' is cuda:99, but" in output
    assert "Traceback" not in output
    assert not Path(run_workflow.workdir, "results").exists()
    assert not Path(run_workflow.workdir, "logs").exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("summary.parquet", b"PK\x03\x04 a spreadsheet", "not a parquet file"),
        ("summary.xlsx", b"PK\x03\x04 a spreadsheet", "not a parquet file"),
        ("summary.csv", "model,top1\nr\xe9snet,70\n".encode("latin-1"), "not UTF-8 text"),
    ],
)
def test_from_summary_that_is_no_table_is_one_clear_error(run_workflow, name, content, message):
    path = run_workflow.workdir / name
    path.write_bytes(content)
    result = run_workflow({"from_summary": str(path)}, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"from_summary: {path}: {message}" in output
    assert "Traceback" not in output and "UnicodeDecodeError" not in output


def test_a_study_file_extends_the_default_config(run_workflow):
    """Keys a study leaves out come from config.yaml (here: the five default models)."""
    result = run_workflow({"batch_sizes": [1]}, "-n")
    assert result.returncode == 0, result.stdout[-2000:]
    assert re.search(r"^profile\s+5$", result.stdout, re.MULTILINE)


def test_from_summary_must_exist(run_workflow):
    result = run_workflow({"from_summary": "/nonexistent/summary.parquet"}, "-n")
    assert result.returncode != 0
    assert "no such file: /nonexistent/summary.parquet" in result.stdout + result.stderr


# --- one path from config to objects: the schema's defaults are the code's ---------------------


def _schema_defaults(section: str | None = None) -> dict:
    """key -> default of the schema's top level, or of one section."""
    schema = yaml.safe_load(Path(SCHEMA).read_text())
    props = schema["properties"]
    if section is not None:
        props = props[section]["properties"]
    return {k: v["default"] for k, v in props.items() if "default" in v}


def _plain(value):
    """Tuples as lists and mappings as dicts, for comparing with YAML."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _keyword_defaults(func) -> dict:
    import inspect

    params = inspect.signature(func).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def test_the_schemas_protocol_is_the_preset_and_the_settings_a_user_turns():
    """The config picks a preset and turns a few settings; every other setting is a preset's,
    and a study that sets one is told so (study.MOVED_KEYS). A protocol setting with a schema
    default would be filled in by the workflow's validation and so override every preset's
    value: the preset alone has a default."""
    from joulebench.core.protocol import PRESETS, ProtocolSettings
    from joulebench.study import MOVED_KEYS

    schema = yaml.safe_load(Path(SCHEMA).read_text())["properties"]["protocol"]["properties"]
    public = ["preset", "repeats", "min_repeat_s", "ci_target", "max_repeats", "per_step_timing"]
    assert list(schema) == public
    presets_only = {k.partition(".")[2] for k in MOVED_KEYS if k.startswith("protocol.")}
    assert {f.name for f in fields(ProtocolSettings)} == (set(public) - {"preset"}) | presets_only
    assert sorted(schema["preset"]["enum"]) == sorted(PRESETS)
    assert [k for k, v in schema.items() if "default" in v] == ["preset"]


def test_objects_built_from_the_schema_equal_the_code_defaults():
    from helpers.profile_job import spec_of

    from joulebench.core.methods import Method, parse_methods
    from joulebench.core.protocol import ProtocolSettings
    from joulebench.core.train import TrainSpec
    from joulebench.jobs.job_spec import JobSpec

    assert ProtocolSettings.from_dict(_schema_defaults("protocol")) == ProtocolSettings()
    assert _schema_defaults("protocol") == {"preset": "default"}  # the rest: the preset's
    assert TrainSpec.from_dict(_schema_defaults("train")) == TrainSpec()
    schema = yaml.safe_load(Path(SCHEMA).read_text())
    method = schema["properties"]["methods"]["additionalProperties"]["properties"]
    method = {k: v["default"] for k, v in method.items()}
    assert parse_methods({"m": method})["m"] == Method("m")
    top = _schema_defaults()
    full = {
        "torch_device": "cpu",
        "methods": top["methods"],
        "batch_sizes": top["batch_sizes"],
        "protocol": _schema_defaults("protocol"),
        "phases": top["phases"],
        "train": _schema_defaults("train"),
        # every profile key but `split` (what the workflow makes a job of, not the job's)
        **{k: v for k, v in _schema_defaults("profile").items() if k != "split"},
        "estimate": {"tdp_w": None},
    }
    minimal = {"torch_device": "cpu", "methods": top["methods"], "batch_sizes": [1]}
    minimal["quiet_wait_s"] = JobSpec.quiet_wait_s  # the code's (spec_of's own is 0)
    assert spec_of(full) == spec_of(minimal)


def _schema_config(**keys) -> dict:
    """A study of the schema's defaults only (with `keys` set), as the workflow sees it."""
    return check({"models": ["resnet18.a1_in1k"], **keys})


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_rules_settings_are_its_functions_keywords_with_the_schemas_defaults(command):
    """What a rule hands its command (rule_settings.build) is exactly the keyword arguments of
    the function the command calls, and each default of that function is the value a study
    of the schema's defaults hands (None: chosen the same way)."""
    from joulebench.analysis.score import parse_grade_thresholds

    accepted = rule_settings.keywords(command)
    for config in (_schema_config(), _schema_config(from_summary="s.parquet")):
        assert sorted(rule_settings.build(command, config)) == sorted(accepted)
    code = _keyword_defaults(rule_settings.function(command))
    for key, value in rule_settings.build(command, _schema_config()).items():
        if key == "grade_thresholds":  # None means the default thresholds
            assert list(parse_grade_thresholds(code[key]).values()) == value
        elif key == "baseline_method":  # None: the study's first method (prerun.study_baseline)
            assert code[key] is None and value == "fp32"
        elif key == "protocol":  # None: not known (a published summary), here the config's
            assert code[key] is None and value == {"preset": "default"}
        elif code[key] is None and isinstance(value, dict):
            assert all(v is None for v in value.values()), (key, value)  # nothing chosen
        else:
            assert _plain(code[key]) == value, (command, key, code[key], value)


def test_every_rule_with_settings_builds_them_in_its_own_function():
    """`--settings` comes from get_<rule>_settings (common.smk), never from a config section
    put there whole."""
    text = "\n".join(p.read_text() for p in sorted((REPO / "workflow" / "rules").glob("*.smk")))
    rules = re.findall(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", text, re.MULTILINE | re.DOTALL)
    with_settings = [(name, body) for name, body in rules if "--settings=" in body]
    assert len(with_settings) == len(COMMANDS)
    for name, body in with_settings:
        assert f"settings=get_{name}_settings()," in body, name
        assert f"def get_{name}_settings():" in text, name


def test_what_the_rules_hand_their_commands_in_a_dry_run(run_workflow):
    """The commands a dry run prints (the default study, then one from a published summary):
    each `--settings` holds exactly its command's keywords."""
    import json
    import shlex

    from helpers.decision_rows import decision_summary

    def settings(result) -> dict:
        assert result.returncode == 0, result.stderr[-3000:]
        found = {}
        for line in (result.stdout + result.stderr).splitlines():
            words = shlex.split(line.partition("Shell command:")[2])
            given = [w for w in words if w.startswith("--settings=")]
            if given:
                found[words[1]] = json.loads(given[0].partition("=")[2])
        return found

    default = settings(run_workflow({"batch_sizes": [1]}, "-n", "-p"))
    summary = run_workflow.workdir / "published.parquet"
    decision_summary().to_parquet(summary)
    published = settings(run_workflow({"from_summary": str(summary)}, "-n", "-p"))
    measuring = {"catalog", "idle", "reference"}  # nothing measured or looked up
    assert set(published) == set(COMMANDS) - measuring - {"prepare", "accuracy"}
    for command, given in [*default.items(), *published.items()]:
        assert sorted(given) == sorted(rule_settings.keywords(command)), command
    assert set(default) == set(COMMANDS) - {"prepare", "accuracy"}  # a real dataset's only
    thresholds = default["score"]["grade_thresholds"]
    assert default["webapp"] == {"grade_thresholds": thresholds, "protocol": {"preset": "default"}}
    assert published["webapp"] == {"grade_thresholds": thresholds, "protocol": None}


def test_command_option_defaults_equal_the_schema():
    from joulebench.cli import build_parser
    from joulebench.core.protocol import DEFAULT_PRESET, ProtocolSettings
    from joulebench.jobs.adhoc import adhoc_protocol

    parser = build_parser()

    def defaults(command: str) -> dict:
        sub = next(a for a in parser._actions if a.dest == "command").choices[command]
        return {a.dest: a.default for a in sub._actions}

    protocol, train, profile = (_schema_defaults(s) for s in ("protocol", "train", "profile"))
    got = defaults("profile")
    default = ProtocolSettings.from_dict(protocol)  # the schema's preset's values
    assert got["preset"] == protocol.get("preset", DEFAULT_PRESET)
    assert got["repeats"] is None and got["min_repeat_s"] is None  # the preset's, as follows
    windows = adhoc_protocol(got["preset"])
    assert (windows["repeats"], windows["min_repeat_s"]) == (default.repeats, default.min_repeat_s)
    assert got["optimizer"] == train["optimizer"]
    assert got["onnx_cache"] == profile["onnx_cache"]
    assert got["input_kind"] == profile["input_kind"]


def test_a_default_comes_from_the_schema_and_a_typo_fails_at_once():
    """config_schema.default reads the one declaration; a key it does not know, or one with no
    default, is a KeyError (at import, where a module takes its default), never a guess."""
    from joulebench import study
    from joulebench.analysis.score import DEFAULT_GRADE_THRESHOLDS
    from joulebench.config_schema import default

    assert study.IDLE_DURATION_S == _schema_defaults("idle")["duration_s"]
    assert study.IDLE_PRE_S == _schema_defaults("profile")["idle_pre_s"]
    assert list(DEFAULT_GRADE_THRESHOLDS.values()) == _schema_defaults("score")["grade_thresholds"]
    assert default("methods.*.precision") == "fp32"
    assert default("decisions.max_latency_ms") == (10, 100)  # a list as a tuple: immutable
    with pytest.raises(KeyError, match="no key 'profile.idle_pre'"):
        default("profile.idle_pre")
    with pytest.raises(KeyError, match="no default"):
        default("models")


def test_the_workflow_validates_against_the_packages_schema():
    """Snakemake validates against workflow/schemas/config.schema.yaml, a link to the file the
    package ships and reads its defaults from: one file."""
    from joulebench.config_schema import SCHEMA_PATH

    link = REPO / "workflow" / "schemas" / "config.schema.yaml"
    assert link.resolve() == SCHEMA_PATH.resolve()


def test_score_command_without_settings_uses_the_schema_reference(tmp_path):
    """`joulebench score` with no --settings scores as the workflow would by default: against
    the schema's reference model (it once scored against none)."""
    import pandas as pd
    from helpers.summary_inputs import small_catalog, small_profile

    from joulebench.analysis.summary import build_summary, write_summary
    from joulebench.cli import main

    summary = tmp_path / "summary.parquet"
    write_summary(build_summary(small_profile(), small_catalog()), summary)
    out = tmp_path / "scores.parquet"
    assert main(["score", str(summary), "--output", str(out)]) == 0
    scores = pd.read_parquet(out)
    assert (scores["reference_model"] == _schema_defaults("score")["reference_model"]).all()


def test_a_setting_the_stage_does_not_know_is_an_error():
    from joulebench.study import ConfigError, settings_for

    with pytest.raises(ConfigError, match=r"score: unknown setting\(s\) \['energi'\]"):
        settings_for("score", {"energi": "total"}, ["energy"])


def test_a_command_refuses_a_setting_its_function_does_not_take(tmp_path, capsys):
    """The page once took the whole score section and dropped all but one of its keys."""
    from joulebench.cli import main

    paths = [f"--{o}={tmp_path / o}" for o in ("summary", "scores", "output")]
    assert main(["webapp", *paths, "--settings", '{"energy": "total"}']) == 2
    err = capsys.readouterr().err
    assert "webapp: unknown setting(s) ['energy']; known: grade_thresholds" in err
    assert not (tmp_path / "output").exists()


def test_settings_a_job_would_refuse_stop_the_dry_run_one_line_per_key(run_workflow):
    """Each would otherwise fail (or, repeats > max_repeats, pass silently) after every
    profile job ran: the score job, or each profile job, refusing them."""
    config = {
        "protocol": {"repeats": 30},
        "score": {"grade_thresholds": [0.1, 0.2, 0.3, 0.45, 0.6, 0.8]},
    }
    result = run_workflow(config, "-n")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    where = f"(set in {run_workflow.workdir / 'test-config.yaml'})"
    for line in (
        f"config: protocol {where}: repeats must be <= max_repeats (the cap on repeats)",
        f"config: score.grade_thresholds {where}: grade thresholds must strictly decrease",
    ):
        assert line in output, output[-2000:]
    assert "Traceback" not in output and "rule profile" not in output


def _published_summary(folder: Path, name: str, **first_row) -> Path:
    """A valid summary (decision_rows) with `first_row` values changed, as a published file."""
    from helpers.decision_rows import decision_summary

    df = decision_summary()
    for column, value in first_row.items():
        df.loc[0, column] = value
    path = folder / name
    df.to_parquet(path)
    return path


def test_a_broken_published_summary_stops_before_any_job_saying_why(run_workflow):
    """Not a dry run: no job starts, and the console (not only logs/) says what is wrong."""
    path = _published_summary(run_workflow.workdir, "published.parquet", top1=150.0)
    result = run_workflow({"from_summary": str(path)})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"from_summary: {path}: summary does not match SUMMARY_COLUMNS:" in output
    assert "top1 must lie in [0, 100] (percent): top1 = 150.0 in row 0" in output
    assert not (run_workflow.workdir / "logs").exists()
    assert not (run_workflow.workdir / "results").exists()


def test_published_inputs_that_cannot_work_are_named(run_workflow):
    """A { } in the path (a WildcardError that never named it) and a trace table that is
    no trace (the figures job failing)."""
    braces = _published_summary(run_workflow.workdir, "summary{v2}.parquet")
    result = run_workflow({"from_summary": str(braces)}, "-n")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"from_summary: {braces}: Snakemake reads {{ and }} in an input path" in output
    assert "WildcardError" not in output

    ok = _published_summary(run_workflow.workdir, "ok.parquet")
    result = run_workflow({"from_summary": str(ok), "figures": {"trace_table": str(ok)}}, "-n")
    assert result.returncode != 0
    assert (
        f"figures.trace_table: {ok}: not a power trace, it lacks" in result.stdout + result.stderr
    )
