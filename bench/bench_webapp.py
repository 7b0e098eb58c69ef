"""Benchmark the web page (issue 7 target: a 2,000-row page loads in under 2 s).

Builds a synthetic study page (the tests' generator: made-up energies, a measured GPU and an
estimated CPU device), opens it from file:// in headless chromium with every network request
aborted, and times, median of --runs fresh pages:

- load: navigation start to the page's `data-ready` (data parsed, plot, legend, table drawn),
  read in the page as `performance.now()` at that moment;
- filter: a device checkbox unticked until the frame showing the new selection (plot, legend
  and table redrawn) has been painted, timed in the page.

    PYTHONPATH=src python bench/bench_webapp.py [--rows 2000] [--runs 5]
Prints a markdown table to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from helpers.page_study import CHROMIUM, CHROMIUM_ARGS, synthetic_summary  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from joulebench.analysis.score import score_summary  # noqa: E402
from joulebench.report.webapp import build_page  # noqa: E402

# Untick a device, then wait for the frame that shows it: the update runs in the next
# animation frame, and a timeout queued from that frame fires after it has been painted.
FILTER_JS = """async () => {
  const box = document.querySelector('input[data-facet="device_label"][value="cpu"]');
  const before = document.querySelector("#plot").dataset.visibleCount;
  const start = performance.now();
  box.click();
  await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const after = document.querySelector("#plot").dataset.visibleCount;
  if (after === before) throw new Error("the filter changed nothing");
  return performance.now() - start;
}"""


def time_page(browser, path: Path) -> tuple[float, float]:
    """(load ms, filter ms) of one fresh page."""
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    context.route(
        "**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort()
    )
    page = context.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready=true]")
    load_ms = float(page.get_attribute("html", "data-ready-ms"))
    filter_ms = page.evaluate(FILTER_JS)
    context.close()
    return load_ms, filter_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000, help="rows of the page (two devices)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    summary = synthetic_summary(args.rows // 2, failed=False)
    scores = score_summary(summary)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = build_page(summary, scores, Path(tmp) / "index.html")
        build_s = time.perf_counter() - start
        size_mb = path.stat().st_size / 1e6
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            time_page(browser, path)  # warm the browser's caches once, not counted
            runs = [time_page(browser, path) for _ in range(args.runs)]
            version = browser.version
            browser.close()
    load = [r[0] for r in runs]
    filt = [r[1] for r in runs]
    cpu = platform.processor() or platform.machine()
    print(f"machine: {platform.node()} {cpu}, {os.cpu_count()} CPUs, chromium {version}")
    print(f"page: {len(summary)} rows, {size_mb:.2f} MB, built in {build_s:.2f} s\n")
    print("| measure | median | min | max | runs |")
    print("|---|---|---|---|---|")
    for name, xs in (("load to data-ready (ms)", load), ("device filter (ms)", filt)):
        print(
            f"| {name} | {statistics.median(xs):.0f} | {min(xs):.0f} | {max(xs):.0f} | {len(xs)} |"
        )
    ok = statistics.median(load) < 2000
    print(f"\ntarget: load under 2000 ms: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
