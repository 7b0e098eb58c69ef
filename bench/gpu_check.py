"""For a session lent an NVIDIA GPU: `joulebench check` with its outputs under --out.

The GPU checks of issue 4 (counter vs trace, repeat CV, idle), issue 15 (the sensor's
refresh period and window, zeros vs random, environment, Zeus), issue 23 (the board's heat)
and issue 33 (its power tail) are all in `joulebench check` (src/joulebench/check/);
this wrapper runs them with the heat step shortened where the session's time is short
(--heat-s; an H200's die settled within 6 s of a load step), puts the JSON report and the
printed table where a device session collects files, and with --keep keeps the report where
a profile job looks for its GPU's check first (jobs.first_check), so a study after it
does not check the GPU again.

    PYTHONPATH=src python bench/gpu_check.py --out $OUT [--device cuda:0] [--quick]
        [--heat-s 40 --heat-idle-s 10] [--keep results/check]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> int:
    from joulebench.check.gpu import check_gpu
    from joulebench.check.report import device_file, format_table, write_report
    from joulebench.check.rows import CheckSettings
    from joulebench.core.backends import bound_device
    from joulebench.jobs.first_check import board_key, board_path, usable

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--heat-s", type=float, default=None, help="the heat step's load")
    parser.add_argument("--heat-idle-s", type=float, default=None, help="its idle before")
    parser.add_argument("--keep", default=None, help="a results/check folder to keep it in")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = CheckSettings.quick() if args.quick else CheckSettings()
    if args.heat_s is not None:
        settings = replace(settings, heat_s=args.heat_s)
    if args.heat_idle_s is not None:
        settings = replace(settings, heat_idle_s=args.heat_idle_s)
    device = bound_device(args.device)
    target = device.check_target()
    report = check_gpu(target, settings, lambda line: print(line, flush=True), state=device.state)
    data = {**report.as_dict(), "device": args.device}
    write_report(data, out / f"check-{device_file(args.device)}.json")
    table = format_table(data)
    (out / f"check-{device_file(args.device)}.txt").write_text(table + "\n")
    print(table)
    if args.keep and usable(data, board_key(_detail(data))):
        kept = write_report(data, board_path(args.keep, data["uuid"]))
        print(f"kept for the profile jobs of this GPU: {kept}")
    return 1 if data["verdict"] == "fail" else 0


def _detail(data: dict) -> dict:
    import json

    detail = data.get("meter_detail") or {}
    return json.loads(detail) if isinstance(detail, str) else detail


if __name__ == "__main__":
    sys.exit(main())
