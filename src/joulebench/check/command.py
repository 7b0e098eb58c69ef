"""The `joulebench check` command: the device's backend says how it is driven and read.

The host's CPU gets the CPU checks (check.cpu); any other device the GPU checks (check.gpu)
on the target its backend builds (a torch GPU with its backend's meter, or a simulated
board), with the state its backend reads. The report goes to results/check/<device>.json.
"""

from __future__ import annotations

from pathlib import Path

from joulebench.check.rows import CheckSettings


def run_check(
    device: str = "cpu",
    *,
    quick: bool = False,
    idle_s: float | None = None,
    meter: str | None = None,
    tdp_w: float | None = None,
    output=None,
    progress=None,
) -> tuple[dict, Path]:
    """`joulebench check`: check `device` (cpu, cuda, cuda:N, sim:<gpu>), write the report
    (default results/check/<device>.json); returns the report and where it went. A device
    that cannot be measured raises MeterUnavailable; a bad option, ConfigError."""
    from joulebench.check.report import report_path, write_report
    from joulebench.core.backends import DeviceError, Libraries, bound_device, spellings
    from joulebench.core.meters import MeterUnavailable
    from joulebench.study import ConfigError
    from joulebench.table_io import check_writable

    libs = Libraries()
    try:
        bound = bound_device(device, libs=libs, prefer=meter)
    except DeviceError:
        raise ConfigError(f"check: --device must be {spellings()}, not {device!r}") from None
    try:
        bound.check_prefer(meter)
    except DeviceError as err:
        raise ConfigError(f"check: --meter: {err}") from None
    backend, device = bound.backend, bound.backend.canonical(device)
    output = Path(output or report_path(device))
    check_writable(output)  # before a minute of measuring, not after
    settings = CheckSettings.quick() if quick else CheckSettings()
    if idle_s is not None:
        if not 0 < idle_s <= 3600:
            raise ConfigError("check: --idle-s must be in (0, 3600]")
        settings.idle_s = idle_s
    if backend.is_host:
        from joulebench.check.cpu import check_cpu

        options = {"tdp_w": tdp_w} if tdp_w else {}
        report = check_cpu(settings, progress, prefer=meter, **options)
    else:
        from joulebench.check.gpu import check_gpu

        problems = backend.problems(device, device, libs)
        if problems:
            raise MeterUnavailable("no-device", problems[0])
        bound = backend.bind(device, libs=libs)  # under its one spelling (cuda -> cuda:0)
        report = check_gpu(bound.check_target(meter), settings, progress, state=bound.state)
    data = report.as_dict()
    return data, write_report(data, output)
