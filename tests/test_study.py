"""A study's config: the default with a study file over it, and short schema errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO

from joulebench.study import (
    ConfigError,
    check_config,
    job_command,
    job_shell_prefix,
    load_schema,
    read_study,
    read_yaml,
    shell_option,
)


def errors(config, sources=()) -> str:
    with pytest.raises(ConfigError) as err:
        check_config(config, load_schema(), sources)
    return str(err.value)


def test_unknown_key_names_the_key_where_it_is_its_file_and_the_closest_key():
    config = {"models": ["resnet18"], "protocol": {"repeets": 3}}
    message = errors(config, [("study.yaml", {"protocol": {"repeets": 3}})])
    assert message.startswith(
        "config: unknown key 'repeets' at protocol (set in study.yaml); "
        "closest valid key: 'repeats'"
    )
    assert len(message) < 500  # not the schema


def test_a_key_that_moved_says_where_its_setting_went():
    """Protocol settings a preset decides, and the fits' own rules of which rows count, were
    config keys: a study that still sets one is told where the setting is now."""
    given = {"protocol": {"phase_shifts": 0, "repeats": 3}, "fits": {"invalid_flags": []}}
    lines = errors({"models": ["x"], **given}, [("old.yaml", given)]).splitlines()
    assert lines == [
        "config: fits.invalid_flags (set in old.yaml) is score.invalid_flags now: one section "
        "(score:) says which rows count, for the score, the fits and the decisions alike",
        "config: protocol.phase_shifts (set in old.yaml) is a protocol preset's setting now, "
        "not a config key: pick the preset that fits (protocol.preset: default, strict, fast or "
        "smoke; docs/protocol.md#presets), or set it from Python "
        "(joulebench.core.protocol.ProtocolSettings)",
    ]


def test_each_problem_is_one_short_line():
    config = {"modles": ["x"], "batch_sizes": [0], "devices": {"gpu": "tpu"}}
    lines = errors(config).splitlines()
    assert len(lines) == 3
    assert any("unknown key 'modles' at the top level" in line for line in lines)
    assert any(line.startswith("config: batch_sizes.0: 0 is less than") for line in lines)
    assert any("devices.gpu: 'tpu' does not match" in line for line in lines)


def test_devices_is_auto_or_a_map():
    check_config({"models": ["x"], "devices": "auto"}, load_schema())
    check_config({"models": ["x"], "devices": {"h200": "cuda:1"}}, load_schema())
    assert "'gpu' is none of: 'auto' was expected" in errors({"devices": "gpu"})


def test_a_study_replaces_the_defaults_keys_whole(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text("methods: {fp16: {precision: fp16}}\nbatch_sizes: [4]\n")
    config, _ = read_study(study, REPO)
    assert list(config["methods"]) == ["fp16"]  # not merged with the default's fp32/bf16
    assert config["batch_sizes"] == [4]
    assert len(config["models"]) == 5  # left out: from config.yaml
    assert config["devices"] == "auto"  # the schema's default, as the workflow sees it
    assert config["protocol"] == {"preset": "default"}  # its settings: the preset's


def test_unreadable_study_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        read_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [a\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        read_yaml(bad)
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="a config is a mapping"):
        read_yaml(bad)


def test_jobs_run_with_snakemakes_python_or_the_conda_env():
    assert job_command(False, "/opt/my env/bin/python") == "'/opt/my env/bin/python' -m joulebench"
    assert job_command(False) == f"{sys.executable} -m joulebench"
    assert job_command(True) == "python -m joulebench"  # the rule's env, activated by its shell


def test_rules_call_joulebench_through_a_shell_function(tmp_path):
    """The prefix, formatted as Snakemake formats it, defines `joulebench` in bash."""
    import subprocess

    from snakemake.utils import format as snakemake_format

    fake = tmp_path / "fake python"
    fake.write_text('#!/bin/sh\necho "ran: $*"\n')
    fake.chmod(0o755)
    prefix = snakemake_format(job_shell_prefix(False, str(fake)))
    out = subprocess.run(
        ["bash", "-c", prefix + "joulebench catalog --output 'a b' -- m"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "ran: -m joulebench catalog --output a b -- m\n"


def test_a_nested_config_value_read_as_text_says_use_a_configfile():
    """Snakemake's --config gives {'protocol': {'repeats': '2'}} for protocol={repeats: 2}."""
    given = {"protocol": {"repeats": "2"}}
    with pytest.raises(ConfigError) as err:
        check_config({"models": ["x"], **given}, load_schema(), [("--config", given)])
    assert str(err.value) == (
        "config: protocol.repeats (set in --config): '2' is not of type 'integer'. "
        "--config reads values inside a list or mapping as text: use a --configfile"
    )
    with pytest.raises(ConfigError) as err:  # the same value from a file: no such hint
        check_config({"models": ["x"], **given}, load_schema(), [("s.yaml", given)])
    assert "--configfile" not in str(err.value)
    with pytest.raises(ConfigError) as err:  # models=resnet18: a plain wrong value, no hint
        check_config({"models": "resnet18"}, load_schema(), [("--config", {"models": "r"})])
    assert "--configfile" not in str(err.value)


def test_device_labels_and_method_names_cannot_start_with_a_dash():
    schema = load_schema()
    with pytest.raises(ConfigError, match="'-x' does not match"):
        check_config({"models": ["m"], "devices": {"-x": "cpu"}}, schema)
    with pytest.raises(ConfigError, match="'--help' does not match"):
        check_config({"models": ["m"], "methods": {"--help": {}}}, schema)
    check_config({"models": ["m"], "devices": {"h200-0": "cuda:0", "_a": "cpu"}}, schema)


# --- no value from the config can be read as an option ---------------------------------------


def test_shell_options_glue_the_value_to_the_option():
    import shlex

    assert shell_option("summary", "-s.parquet") == "--summary=-s.parquet"
    assert shlex.split(shell_option("trace", "a b;$(x)")) == ["--trace=a b;$(x)"]


def test_every_rule_passes_values_glued_to_options_or_after_a_double_dash():
    """`--opt {value}` reads a value starting with `-` as an option: rules write `--opt={value}`
    (or put values after `--`)."""
    import re

    rules = sorted((REPO / "workflow" / "rules").glob("*.smk"))
    spaced = [
        f"{path.name}: {match}"
        for path in rules
        for match in re.findall(r"--[a-z][a-z-]* \{[^}]*\}", path.read_text())
    ]
    assert spaced == []
    glued = sum(len(re.findall(r"--[a-z][a-z-]*=\{", p.read_text())) for p in rules)
    assert glued > 20  # the pattern does find options


def _alias_bomb(levels: int = 9) -> str:
    """A study file whose `models` is 9**levels names once its aliases are expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join([*lines, f"models: *a{levels - 1}"]) + "\n"


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb())
    with pytest.raises(ConfigError) as err:
        read_study(bomb, REPO)
    assert str(err.value) == (
        f"{bomb} is refused: line 2: YAML aliases (*a0) are not allowed in a config"
    )


def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("".join("  " * i + f"k{i}:\n" for i in range(1500)) + "  " * 1500 + "v\n")
    with pytest.raises(ConfigError) as err:
        read_yaml(deep)
    assert str(err.value) == f"{deep} is refused: line 32: nested deeper than 32 levels"
    deep.write_text("models: " + "[" * 5000 + "]" * 5000 + "\n")  # flow style: the same
    with pytest.raises(ConfigError, match="nested deeper than 32 levels"):
        read_yaml(deep)


def test_a_key_given_twice_is_refused_not_last_wins(tmp_path):
    study = tmp_path / "twice.yaml"
    study.write_text("batch_sizes: [1]\nmodels: [resnet18]\nbatch_sizes: [64]\n")
    with pytest.raises(ConfigError) as err:
        read_study(study, REPO)
    assert str(err.value) == f"{study} is refused: line 3: key 'batch_sizes' is given twice"


_BOUNDED_READ = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # unbounded, it dies here
from joulebench.study import ConfigError, read_config
try:
    read_config(sys.argv[1])
except ConfigError as err:
    print(err)
"""


def test_a_study_file_is_a_regular_file_of_a_few_mb(tmp_path):
    """Issue 40 item 2: `--configfile /dev/zero` grew to 23 GB (plan, status and the
    Snakefile's own read all go through read_config)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.yaml"
    huge.write_text("# " + "x" * 5 * 2**20 + "\n")
    said = {
        "/dev/zero": "/dev/zero is not a regular file (a device, FIFO or socket)",
        str(fifo): f"{fifo} is not a regular file (a device, FIFO or socket)",
        str(huge): f"{huge} is larger than 4 MB: no study file is",
        str(tmp_path): f"{tmp_path} is a folder: a config is a YAML file",
    }
    for path, start in said.items():
        res = subprocess.run(
            [sys.executable, "-c", _BOUNDED_READ, path], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0 and res.stdout.startswith(start), (path, res.stderr[-300:])


def test_a_file_that_is_no_study_is_refused_without_showing_its_lines(tmp_path):
    """`--configfile /etc/shadow`: YAML reads `name:*:19000:0:99999:7:::` lines as keys."""
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$secret:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    with pytest.raises(ConfigError) as err:
        read_study(shadow, REPO)
    message = str(err.value)
    assert message.startswith(f"{shadow} is not a study file: 2 of its top-level entries")
    said = message.removeprefix(str(shadow))
    assert "root" not in said and "secret" not in said and "\n" not in said


def test_a_batch_size_is_at_most_the_documented_maximum():
    from joulebench.tables import MAX_BATCH_SIZE

    schema = load_schema()
    assert schema["properties"]["batch_sizes"]["items"]["maximum"] == MAX_BATCH_SIZE
    train = schema["properties"]["train"]["properties"]["batch_sizes"]["items"]
    assert train["maximum"] == MAX_BATCH_SIZE
    check_config({"models": ["x"], "batch_sizes": [MAX_BATCH_SIZE]}, schema)
    message = errors({"models": ["x"], "batch_sizes": [10**11]})
    assert message == "config: batch_sizes.0: 100000000000 is greater than the maximum of 65536"
