"""For a session lent an NVIDIA GPU: `joulebench check` with its outputs under --out.

The GPU checks of issue 4 (counter vs trace, repeat CV, idle) and issue 15 (the sensor's
refresh period and window, zeros vs random, environment, Zeus) are all in `joulebench check`
(src/joulebench/measure/check/); this wrapper only puts its JSON report and printed table where a
device session collects files.

    PYTHONPATH=src python bench/gpu_check.py --out $OUT [--device cuda:0] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def main() -> int:
    from joulebench.cli import main as cli_main
    from joulebench.measure.check.report import device_file

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = out / f"check-{device_file(args.device)}.json"
    argv = ["check", "--device", args.device, "--output", str(report)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = cli_main(argv + (["--quick"] if args.quick else []))
    (out / f"check-{device_file(args.device)}.txt").write_text(printed.getvalue())
    print(printed.getvalue(), end="")
    return rc


if __name__ == "__main__":
    sys.exit(main())
