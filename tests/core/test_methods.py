"""Methods (joulebench.core.methods): the knobs a method may ask of the device (a power
limit in watts or as a fraction of the default, a locked SM clock), range-checked when the
config is read, sweeps expanded once into ordinary named methods, and their row columns."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from conftest import REPO
from helpers.decision_rows import SWEEP, sweep_summary

from joulebench.core.methods import (
    KNOBS,
    KnobReadback,
    Method,
    expand_methods,
    knob_label,
    parse_methods,
)
from joulebench.prerun import check_settings, load_study
from joulebench.study import ConfigError, check_config, load_schema
from joulebench.table_io import conform
from joulebench.tables import KNOB_COLUMNS, PROFILE, PROFILE_COLUMNS

SWEEP_CONFIG = {
    "fp32": {"precision": "fp32"},
    "fp16": {"precision": "fp16", "power_limit": [1.0, 0.8, 0.6, 0.5]},
}


# --- one knob ----------------------------------------------------------------------------


def test_knobs_are_method_fields_normalised_on_the_way_in():
    m = Method("m", power_limit=1, sm_clock_mhz=1410.0)
    assert (m.power_limit, m.sm_clock_mhz) == (1.0, 1410)
    assert isinstance(m.power_limit, float) and isinstance(m.sm_clock_mhz, int)
    assert m.knobs == {"power_limit": 1.0, "sm_clock_mhz": 1410}
    assert Method("w", power_limit_w=250).knobs == {"power_limit_w": 250.0}
    assert Method("c", sm_clock_mhz="base").knobs == {"sm_clock_mhz": "base"}
    assert Method("plain").knobs == {}
    assert set(KNOBS) <= set(Method("plain").describe())  # declared once, as fields


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"power_limit": 60}, "power_limit is a fraction of the board's default limit in (0, 1.5]"),
        ({"power_limit": 0}, "(0.6 for 60 %), got 0; watts go in power_limit_w"),
        ({"power_limit": -0.5}, "got -0.5"),
        ({"power_limit": 1.6}, "got 1.6"),
        ({"power_limit": float("nan")}, "got nan"),
        ({"power_limit": True}, "got True"),
        ({"power_limit": "0.6"}, "got '0.6'"),
        ({"power_limit_w": 0}, "power_limit_w is watts in (0, 3000], got 0"),
        ({"power_limit_w": 250_000}, "got 250000 (NVML counts milliwatts; give watts)"),
        ({"power_limit_w": float("inf")}, "got inf"),
        ({"power_limit_w": 250, "power_limit": 0.6}, "set power_limit_w (watts) or power_limit"),
        ({"sm_clock_mhz": "turbo"}, "sm_clock_mhz is a whole number of MHz in [1, 5000] or one"),
        ({"sm_clock_mhz": 1410.5}, "got 1410.5"),
        ({"sm_clock_mhz": 0}, "got 0"),
        ({"sm_clock_mhz": 1_410_000_000}, "got 1410000000"),
        ({"sm_clock_mhz": True}, "got True"),
        ({"power_limit": []}, "a power_limit sweep needs at least one value, each once, got []"),
        ({"power_limit": [0.6, 0.60]}, "each once, got [0.6, 0.6]"),
        ({"sm_clock_mhz": [1410, 1410.0]}, "a sm_clock_mhz sweep needs at least one value"),
        ({"power_limit": [0.8, 8]}, "method m@8.0: power_limit is a fraction"),
    ],
)
def test_out_of_range_knobs_are_one_line_errors(spec, words):
    with pytest.raises(ValueError) as err:
        parse_methods({"m": spec})
    assert words in str(err.value)
    assert len(str(err.value).splitlines()) == 1
    assert str(err.value).startswith("method m")


def test_the_edges_of_each_range_are_accepted():
    ok = parse_methods(
        {
            "a": {"power_limit": 1.5},
            "b": {"power_limit": 0.01},
            "c": {"power_limit_w": 3000},
            "d": {"sm_clock_mhz": 1},
            "e": {"sm_clock_mhz": 5000},
            "f": {"sm_clock_mhz": "max", "power_limit_w": 0.5},
        }
    )
    assert [m.knobs for m in ok.values()][-1] == {"power_limit_w": 0.5, "sm_clock_mhz": "max"}


# --- a sweep in one line -------------------------------------------------------------------


def test_a_sweep_expands_into_named_methods_in_the_lists_order():
    methods = parse_methods(SWEEP_CONFIG)
    assert list(methods) == ["fp32", "fp16@1.0", "fp16@0.8", "fp16@0.6", "fp16@0.5"]
    assert sorted(methods)[:4] == ["fp16@0.5", "fp16@0.6", "fp16@0.8", "fp16@1.0"]  # by cap
    for name, m in methods.items():
        assert m.name == name
        if name != "fp32":
            assert m.precision == "fp16" and m.power_limit == float(name.split("@")[1])
    assert methods["fp32"].knobs == {}


def test_watts_clocks_and_both_at_once():
    methods = expand_methods(
        {
            "w": {"power_limit_w": [300, 250.5]},
            "c": {"sm_clock_mhz": [1980, "max", "base"]},
            "both": {"power_limit": [1.0, 0.7], "sm_clock_mhz": [1410, "max"]},
            "one": {"power_limit": 0.6, "sm_clock_mhz": "max"},  # no list: keeps its name
        }
    )
    assert list(methods) == [
        "w@300W",
        "w@250.5W",
        "c@1980MHz",
        "c@max-clock",
        "c@base-clock",
        "both@1.0@1410MHz",
        "both@1.0@max-clock",
        "both@0.7@1410MHz",
        "both@0.7@max-clock",
        "one",
    ]
    assert methods["both@0.7@max-clock"] == {"power_limit": 0.7, "sm_clock_mhz": "max"}
    assert methods["one"] == {"power_limit": 0.6, "sm_clock_mhz": "max"}


def test_expanded_names_are_plain_text_that_no_config_key_can_clash_with():
    schema = load_schema()["properties"]["methods"]["propertyNames"]["pattern"]
    names = expand_methods(
        {
            "fp16": {"power_limit": [1.0, 0.55]},
            "w": {"power_limit_w": [250]},
            "c": {"sm_clock_mhz": ["max"]},
        }
    )
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.@-]*", name), name  # a path, a shell word
        assert not re.search(schema, name), name  # not a name a study can write itself
    assert knob_label("power_limit", 1) == "1.0" and knob_label("power_limit_w", 250.0) == "250W"


def test_a_name_made_twice_is_refused():
    with pytest.raises(ValueError, match=r"method fp16@0\.6: two methods have this name"):
        parse_methods({"fp16@0.6": {}, "fp16": {"power_limit": [0.6]}})


# --- the row columns -----------------------------------------------------------------------


def test_knob_fields_are_the_declared_columns_nan_where_no_knob_is_set():
    plain = Method("plain").knob_fields()
    assert tuple(plain) == KNOB_COLUMNS
    assert plain["sm_clock_requested_preset"] == ""
    assert all(math.isnan(v) for k, v in plain.items() if k != "sm_clock_requested_preset")
    for column in KNOB_COLUMNS:
        assert PROFILE[column].producer == "joulebench.core.methods.Method.knob_fields"
    rows = pd.DataFrame([m.knob_fields() for m in parse_methods(SWEEP_CONFIG).values()])
    rows = conform(rows.reindex(columns=list(PROFILE_COLUMNS)), PROFILE_COLUMNS)
    assert rows["power_limit_requested_fraction"].tolist()[1:] == [1.0, 0.8, 0.6, 0.5]
    assert rows["power_limit_readback_w"].isna().all()  # nothing was read back: no number


def test_what_the_backend_read_back_lands_in_its_columns():
    m = Method("m", power_limit_w=250, sm_clock_mhz="max")
    fields = m.knob_fields(KnobReadback(power_limit_w=249.0, sm_clock_mhz=1980.0))
    assert fields["power_limit_requested_w"] == 250.0
    assert math.isnan(fields["power_limit_requested_fraction"])
    assert (fields["power_limit_readback_w"], fields["sm_clock_readback_mhz"]) == (249.0, 1980.0)
    assert math.isnan(fields["sm_clock_requested_mhz"])
    assert fields["sm_clock_requested_preset"] == "max"


def test_a_sweep_expands_into_the_job_s_methods():
    from helpers.profile_job import job_of

    job = job_of(
        "resnet18", "cpu", {"torch_device": "cpu", "methods": SWEEP_CONFIG, "batch_sizes": [1]}
    )
    assert [m.name for m in job.spec.methods][1:] == [
        "fp16@1.0",
        "fp16@0.8",
        "fp16@0.6",
        "fp16@0.5",
    ]
    # a CPU has no limit to set
    assert job.configs_ask_knobs() and job.bind_device().knob_control() is None


@pytest.mark.slow
def test_a_sweep_on_a_cpu_gives_rows_that_say_what_was_asked_and_why_not_measured():
    from conftest import FAST_PROTOCOL
    from helpers.profile_job import job_of

    from joulebench.jobs.profile import run_profile

    spec = {
        "torch_device": "cpu",
        "methods": {"fp32": {}, "capped": {"power_limit": [0.8, 0.6]}},
        "batch_sizes": [1],
        "protocol": {**FAST_PROTOCOL, "warmup_max_s": 2.0},
        "idle_pre_s": 0.05,
        "workload": f"{REPO}/tests/workloads/tiny_net.py:build",
    }
    job = job_of("tiny_net.build", "cpu", spec, idle_power_w=1.0, threads=1)
    rows = run_profile(job, log=lambda s: None).rows.set_index("method")
    assert list(rows.index) == ["fp32", "capped@0.8", "capped@0.6"]
    assert rows.loc["fp32", "status"] == "ok"
    assert (
        rows.loc[["fp32"], list(KNOB_COLUMNS)]
        .drop(columns="sm_clock_requested_preset")
        .isna()
        .all()
        .all()
    )
    for name, fraction in (("capped@0.8", 0.8), ("capped@0.6", 0.6)):
        assert rows.loc[name, "status"] == "skipped"
        assert rows.loc[name, "reason"] == "cpu has no power_limit to set"
        assert rows.loc[name, "power_limit_requested_fraction"] == fraction
        assert pd.isna(rows.loc[name, "power_limit_readback_w"])
        assert pd.isna(rows.loc[name, "energy_per_image_j"])  # no number for a knob not set


# --- the config, the plan, and the stages after ---------------------------------------------


def test_the_study_accepts_a_sweep_and_refuses_a_bad_knob_in_one_line():
    config = load_study(None, REPO)
    config["methods"] = {**SWEEP_CONFIG, "clocked": {"sm_clock_mhz": [1410, "max"]}}
    check_config(config, load_schema())
    check_settings(config)
    config["methods"] = {"fp16": {"precision": "fp16", "power_limit": [1.0, 60]}}
    check_config(config, load_schema())  # a number: the schema's part
    with pytest.raises(ConfigError) as err:
        check_settings(config)
    assert str(err.value) == (
        "config: methods: method fp16@60.0: power_limit is a fraction of the board's default limit "
        "in (0, 1.5] (0.6 for 60 %), got 60; watts go in power_limit_w"
    )
    config["methods"] = {"fp16": {"power_limit": {"a": 1}}}
    with pytest.raises(ConfigError, match=r"config: methods\.fp16\.power_limit"):
        check_config(config, load_schema())


def test_the_plan_counts_every_value_of_a_sweep():
    from joulebench.plan import plan_study

    config = load_study(None, REPO)
    config["methods"] = SWEEP_CONFIG
    config["batch_sizes"] = [1, 8]
    plan = plan_study(config, ["a", "b"], {"cpu": "cpu"}, None)
    assert plan.methods == 5
    assert plan.configurations == 2 * 5 * 2 * len(config["phases"])


def test_method_savings_treat_each_limit_as_a_method():
    from joulebench.analysis.fits import method_savings

    savings = method_savings(sweep_summary(), "fp16@1.0")
    for model, points in SWEEP.items():
        for fraction in (0.8, 0.6, 0.5):
            row = savings[(savings["model"] == model) & (savings["method"] == f"fp16@{fraction}")]
            assert len(row) == 1
            expect = 1 - points[fraction][0] / points[1.0][0]
            assert row["saving"].iloc[0] == pytest.approx(expect)
    best = savings.loc[savings.groupby("model")["saving"].idxmax()].set_index("model")["method"]
    assert best.to_dict() == {"small": "fp16@0.6", "big": "fp16@0.8"}
