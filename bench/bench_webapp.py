"""Benchmark the web page: time to ready, a filter and a hover, at 2,000 to 300,000 rows.

Targets: a 2,000-row page ready in under 2 s (issue 7); a 300,000-row page (the README's
8-GPU study has 292,160) that starts, plots and stays responsive (issue 21).

Builds a synthetic study page (the tests' generator: made-up energies, a measured GPU and an
estimated CPU device, more GPUs and methods with --devices/--methods), opens it from file://
in headless chromium with every network request aborted, and times, median of --runs fresh
pages, in the page:

- ready: navigation start to the page's `data-ready` (data decoded, plot, legend, table
  drawn), with the stages on the way: `script` (the HTML parsed, the script starts) and
  `data` (the embedded columns decoded and the rows built);
- filter: a device checkbox unticked until the frame showing the new selection (plot, legend
  and table redrawn) has been painted;
- hover: the mouse moved onto the plot until the frame with the hover card is painted.

    PYTHONPATH=src python bench/bench_webapp.py [--rows 2000] [--runs 5]
    PYTHONPATH=src python bench/bench_webapp.py --rows 300000 --devices 4 --methods 10 --runs 3
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

from helpers.page_study import CHROMIUM, CHROMIUM_ARGS, DEVICES, synthetic_summary  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from joulebench.analysis.score import score_summary  # noqa: E402
from joulebench.report.webapp import build_page  # noqa: E402

# Wait for the frame that shows what an action changed: the update runs in the next
# animation frame, and a timeout queued from that frame fires after it has been painted.
PAINTED = "await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));"
FILTER_JS = f"""async () => {{
  const box = document.querySelector('input[data-facet="device_label"][value="cpu"]');
  const before = document.querySelector("#plot").dataset.visibleCount;
  const start = performance.now();
  box.click();
  {PAINTED}
  const after = document.querySelector("#plot").dataset.visibleCount;
  if (after === before) throw new Error("the filter changed nothing");
  return performance.now() - start;
}}"""
HOVER_JS = f"""async () => {{
  const canvas = document.querySelector("#canvas");
  const b = canvas.getBoundingClientRect();
  const start = performance.now();
  for (const [x, y] of [[0.5, 0.5], [0.3, 0.6], [0.7, 0.4]]) {{
    const clientX = b.left + 62 + x * (b.width - 80), clientY = b.top + 14 + y * (b.height - 60);
    canvas.dispatchEvent(new MouseEvent("mousemove", {{ clientX, clientY, bubbles: true }}));
    {PAINTED}
  }}
  if (document.querySelector("#card").hidden) throw new Error("no point under the mouse");
  return (performance.now() - start) / 3;
}}"""
STAGES = ("script", "data", "ready")


def time_page(browser, path: Path) -> dict:
    """Milliseconds of one fresh page: its start stages, a filter, a hover; heap MB."""
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    context.route(
        "**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort()
    )
    page = context.new_page()
    page.goto(path.as_uri(), timeout=600_000)
    page.wait_for_selector("html[data-ready=true]", timeout=600_000)
    out = {k: float(page.get_attribute("html", f"data-{k}-ms")) for k in STAGES}
    out["hover"] = page.evaluate(HOVER_JS)
    out["filter"] = page.evaluate(FILTER_JS)
    out["heap_mb"] = page.evaluate("performance.memory.usedJSHeapSize / 1e6")
    context.close()
    return out


def study(rows: int, n_devices: int, n_methods: int):
    """The tests' synthetic summary with `rows` rows: GPUs beyond the first are added."""
    extra = tuple((f"gpu{k}", "nvml", "NVIDIA H200", f"cuda:{k}") for k in range(1, n_devices - 1))
    devices = (*DEVICES[:n_devices], *extra)
    methods = ("fp32",) if n_methods == 1 else tuple(f"method{k}" for k in range(n_methods))
    return synthetic_summary(
        rows // (len(devices) * len(methods)), devices=devices, methods=methods, failed=False
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000, help="rows of the page")
    parser.add_argument(
        "--devices", type=int, default=2, help="devices (1: GPU, 2: + CPU, more GPUs)"
    )
    parser.add_argument("--methods", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    summary = study(args.rows, args.devices, args.methods)
    scores = score_summary(summary)
    made_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = build_page(summary, scores, Path(tmp) / "index.html")
        build_s = time.perf_counter() - start
        size_mb = path.stat().st_size / 1e6
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM),
                args=[*CHROMIUM_ARGS, "--enable-precise-memory-info"],
            )
            time_page(browser, path)  # warm the browser's caches once, not counted
            runs = [time_page(browser, path) for _ in range(args.runs)]
            version = browser.version
            browser.close()
    cpu = platform.processor() or platform.machine()
    load = os.getloadavg()[0]
    print(
        f"machine: {platform.node()} {cpu}, {os.cpu_count()} CPUs, load {load:.1f}, "
        f"chromium {version}"
    )
    print(
        f"page: {len(summary):,} rows, {size_mb:.1f} MB, built in {build_s:.1f} s "
        f"(summary and scores made in {made_s:.0f} s)\n"
    )
    print("| measure | median | min | max | runs |")
    print("|---|---|---|---|---|")
    names = {
        "script": "navigation start -> script starts (HTML parsed) (ms)",
        "data": "navigation start -> data decoded, rows built (ms)",
        "ready": "navigation start -> page ready (ms)",
        "filter": "device filter -> frame painted (ms)",
        "hover": "hover -> frame with card painted (ms)",
        "heap_mb": "JavaScript heap when ready (MB)",
    }
    for key, name in names.items():
        xs = [r[key] for r in runs]
        print(
            f"| {name} | {statistics.median(xs):.0f} | {min(xs):.0f} | {max(xs):.0f} | {len(xs)} |"
        )
    if args.rows <= 2000:
        ok = statistics.median(r["ready"] for r in runs) < 2000
        print(f"\ntarget: ready under 2000 ms: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
