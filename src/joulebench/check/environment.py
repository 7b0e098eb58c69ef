"""A GPU's settings and state as check rows: driver, persistence mode, power limit, application
clocks, ECC, MIG (or an AMD partition), other processes, temperature, energy counter and
power fields. The values are the device's backend's (a DeviceState read through the
meter's library); a value the device does not report is a skipped row."""

from __future__ import annotations

from joulebench.check.report import FAIL, PASS, SKIP, WARN, Row
from joulebench.core.backends import DeviceState
from joulebench.flags import FLAG_PROCESS_CHECK_FAILED

HOT_AT_REST_C = 80


def environment_rows(meter, state: DeviceState) -> list[Row]:
    """Settings and state of the GPU that change (or invalidate) what is measured."""
    detail = f"{state.library}; {state.device_name}" if state.library else str(state.device_name)
    return [
        Row("environment", "driver", PASS, state.driver_version, detail=detail),
        _persistence_row(state),
        _power_limit_row(state),
        _clock_row(state),
        Row(
            "environment",
            "ECC",
            PASS if state.ecc is not None else SKIP,
            None if state.ecc is None else ("on" if state.ecc else "off"),
            detail="recorded: ECC changes memory bandwidth and power"
            if state.ecc is not None
            else "",
        ),
        _partition_row(state),
        _process_row(meter),
        _temperature_row(state),
        _counter_row(state),
        _power_fields_row(state),
    ]


def _persistence_row(state: DeviceState) -> Row:
    if state.persistence_mode is None:
        return Row("environment", "persistence mode", SKIP, detail="not reported")
    on = state.persistence_mode
    fix = state.fixes.get("persistence_mode")
    detail = (
        ""
        if on
        else "off: the driver may unload between jobs; idle power and clocks at start differ"
        + (f" ({fix})" if fix else "")
    )
    return Row(
        "environment",
        "persistence mode",
        PASS if on else WARN,
        "on" if on else "off",
        target="on",
        detail=detail,
    )


def _power_limit_row(state: DeviceState) -> Row:
    limit, default = state.power_limit_w, state.default_power_limit_w
    if limit is None:
        return Row("environment", "power limit", SKIP, detail="not reported")
    lowered = default is not None and limit < 0.99 * default
    return Row(
        "environment",
        "power limit",
        WARN if lowered else PASS,
        limit,
        "W",
        f"default {default:g} W" if default else "",
        f"lowered from the default {default:g} W: the GPU throttles; energies hold for this "
        "limit only"
        if lowered
        else "",
    )


def _clock_row(state: DeviceState) -> Row:
    target, default = state.app_clock_mhz, state.default_app_clock_mhz
    if target is None or default is None:
        return Row("environment", "application clocks", SKIP, detail="not reported")
    changed = target != default
    return Row(
        "environment",
        "application clocks",
        WARN if changed else PASS,
        target,
        "MHz",
        f"default {default} MHz",
        "set away from the default: energies hold for these clocks only" if changed else "",
    )


def _partition_row(state: DeviceState) -> Row:
    name = state.partition_name
    if state.partitioned is None:
        return Row("environment", name, PASS, "not capable")
    on = state.partitioned
    return Row(
        "environment",
        name,
        FAIL if on else PASS,
        "on" if on else "off",
        target="off",
        detail=f"{name} is on: the power and energy read are the whole GPU's, not a slice's"
        if on
        else "",
    )


def _process_row(meter) -> Row:
    flags = meter.current_flags()
    if FLAG_PROCESS_CHECK_FAILED in flags:
        return Row(
            "environment",
            "other processes",
            WARN,
            None,
            detail="the process list could not be read: another process would go unnoticed",
        )
    others = meter.other_pids
    return Row(
        "environment",
        "other processes",
        FAIL if others else PASS,
        len(others),
        target="0",
        detail=f"pids {others} also use this GPU: their work is in every number; measure "
        "when the GPU is yours alone"
        if others
        else "",
    )


def _temperature_row(state: DeviceState) -> Row:
    temperature = state.temperature_c
    hot = temperature is not None and temperature >= HOT_AT_REST_C
    return Row(
        "environment",
        "temperature",
        SKIP if temperature is None else WARN if hot else PASS,
        temperature,
        "C",
        f"< {HOT_AT_REST_C} C at rest",
        "hot at rest: check cooling" if hot else "",
    )


def _counter_row(state: DeviceState) -> Row:
    return Row(
        "environment",
        "energy counter",
        PASS if state.energy_counter else WARN,
        bool(state.energy_counter),
        target="supported",
        detail=state.energy_source,
    )


def _power_fields_row(state: DeviceState) -> Row:
    return Row(
        "environment",
        "power fields",
        PASS if state.instant_power else WARN,
        ",".join(state.power_fields) or "none",
        target="power_w (instant)",
        detail=f"trace from {state.power_source}",
    )
