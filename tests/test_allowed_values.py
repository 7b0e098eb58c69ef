"""One source for every list of allowed values: each of the config schema's enums and
patterns equals the code's tuple (or the device registry), and the command line offers the
same choices (docs/design.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from joulebench.cli import build_parser
from joulebench.core.backends import device_pattern, meter_names
from joulebench.core.methods import COMPILE_MODES, PRECISIONS
from joulebench.core.train import OPTIMIZERS
from joulebench.tables import INPUT_KINDS, PHASES, RUNTIME_ALIASES, RUNTIMES

SCHEMA = yaml.safe_load(Path(REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
PROPS = SCHEMA["properties"]
METHOD = PROPS["methods"]["additionalProperties"]["properties"]


@pytest.mark.parametrize(
    ("schema_values", "code_values"),
    [
        (METHOD["precision"]["enum"], list(PRECISIONS)),
        (METHOD["compile"]["enum"], [False, *COMPILE_MODES]),
        (METHOD["runtime"]["enum"], [*RUNTIMES, *RUNTIME_ALIASES]),  # old names still read
        (PROPS["profile"]["properties"]["meter"]["enum"], [None, *meter_names()]),
        (PROPS["profile"]["properties"]["input_kind"]["enum"], list(INPUT_KINDS)),
        (PROPS["phases"]["items"]["enum"], list(PHASES)),
        (PROPS["train"]["properties"]["optimizer"]["enum"], list(OPTIMIZERS)),
    ],
    ids=["precision", "compile", "runtime", "meter", "input_kind", "phases", "optimizer"],
)
def test_each_schema_enum_is_the_codes_tuple(schema_values, code_values):
    assert schema_values == code_values


def test_device_patterns_are_the_registrys():
    one, pool = PROPS["devices"]["anyOf"][1]["additionalProperties"]["anyOf"]
    assert one["pattern"] == device_pattern()
    assert pool["properties"]["pool"]["items"]["pattern"] == device_pattern()  # a pool's GPUs
    # measured accuracy runs on a torch device: no simulated GPU
    assert PROPS["accuracy"]["properties"]["device"]["pattern"] == device_pattern(simulated=False)
    assert meter_names() == ("rapl", "estimate", "nvml", "amdsmi")  # amdsmi can be forced


def _choices(command: str, option: str) -> list:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return list(next(a for a in sub._actions if option in a.option_strings).choices)


@pytest.mark.parametrize("command", ["profile", "check"])
def test_every_meter_option_offers_the_registrys_meters(command):
    assert _choices(command, "--meter") == list(meter_names())


def test_a_meter_in_settings_is_one_of_the_registrys():
    """The idle rule hands its meter in --settings: checked by the same registry."""
    from joulebench.cli.common import setting_checks

    check = setting_checks()["meter"]
    for name in (*meter_names(), None):
        check(name)
    with pytest.raises(ValueError, match="must be one of rapl, estimate, nvml, amdsmi or null"):
        check("joules")


def test_the_profile_command_offers_the_codes_values():
    assert _choices("profile", "--phase") == list(PHASES)
    assert _choices("profile", "--input-kind") == list(INPUT_KINDS)
    assert _choices("profile", "--optimizer") == list(OPTIMIZERS)
