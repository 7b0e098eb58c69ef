"""The web page: JSON embedding without a browser, then the page itself in headless chromium
(Playwright for Python, Debian's chromium) opened from file:// with the network blocked."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.page_study import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DEVICES,
    synthetic_predictions,
    synthetic_summary,
)

from joulebench.analysis.score import GRADES, SCORE_GROUP, score_summary
from joulebench.flags import FLAGS
from joulebench.report import palettes, webapp
from joulebench.report.webapp import PAGE_COLUMNS, build_page, embed_json, page_data, page_table

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # the dev extra is not installed
    sync_playwright = None

HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_2 = "</script><!--<script>alert(2)</script>"


def expected_rows(table: pd.DataFrame, mask=None) -> pd.DataFrame:
    """The rows the page should plot, those the figures plot (report/figures.py): status ok,
    a finite energy above 0 and a finite top-1, within `mask`."""
    e = table["scored_energy_per_image_j"].astype(float)
    ok = (table["status"] == "ok").fillna(False) & np.isfinite(e) & (e > 0)
    ok &= np.isfinite(table["top1"].astype(float))
    return table[ok if mask is None else ok & mask]


def decoded(column: dict, n_rows: int) -> list:
    """A column of the embedded data (webapp.encode_column) as a list of JSON values."""
    if "f64" in column:
        floats = np.frombuffer(base64.b64decode(column["f64"]), "<f8")
        return [None if np.isnan(v) else float(v) for v in floats]
    if "codes" not in column:
        return column["values"][:1] * n_rows
    codes = np.frombuffer(base64.b64decode(column["codes"]), f"<u{column['width']}")
    return [column["values"][k] for k in codes]


def embedded_data(html: str):
    """The JSON of the page's data tag, parsed."""
    tag = '<script type="application/json" id="jb-data">'
    start = html.index(tag) + len(tag)
    return json.loads(html[start : html.index("</script>", start)])


# --- without a browser ----------------------------------------------------------------------


def test_embed_json_is_inert_inside_a_script_tag():
    data = {"model": [HOSTILE, HOSTILE_2, "a & b", "line\u2028sep"], "x": [1.5, None, True]}
    text = embed_json(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text
    assert json.loads(text) == data


def test_page_table_joins_scores_one_row_per_summary_row():
    summary = synthetic_summary(20)
    scores = score_summary(summary)
    table = page_table(summary, scores.iloc[::-1])  # joined by key, not by position
    assert list(table.columns) == list(PAGE_COLUMNS) and len(table) == len(summary)
    assert table["model"].tolist() == summary["model"].tolist()
    graded = table.set_index(["device_label", "model"])["grade"]
    expected = scores.set_index(["device_label", "model"])["grade"]
    pd.testing.assert_series_equal(graded.sort_index(), expected.sort_index(), check_dtype=False)
    cpu = table["device_label"] == "cpu"
    assert table.loc[cpu & (table["status"] == "ok"), "energy_is_estimate"].all()
    assert not table.loc[~cpu, "energy_is_estimate"].any()


def test_page_table_adds_predictions_apart_with_a_grade_range_never_a_grade():
    summary = synthetic_summary(40, unmeasured=8)
    predicted = synthetic_predictions(summary)
    scores = score_summary(summary)
    table = page_table(summary, scores, predicted)
    measured = table[table["source"] == "measured"].reset_index(drop=True)
    alone = page_table(summary, scores)
    stand_ins = (alone["status"] == "not-profiled") & alone["model"].isin(predicted["model"])
    assert stand_ins.sum() == 8  # a predicted model's not-profiled row gives way to its rows
    alone = alone[~stand_ins].reset_index(drop=True)
    pd.testing.assert_frame_equal(measured, alone, check_dtype=False)
    pred = table[table["source"] == "predicted"]
    assert len(pred) == len(predicted) == 16  # 8 models on 2 devices
    assert (pred["status"] == "predicted").all() and not pred["scored"].any()
    assert pred["grade"].isna().all() and pred["on_front"].isna().all()
    assert pred["grade_range"].str.fullmatch(r"[A-G](–[A-G])?").all()
    assert measured["grade_range"].isna().all() and measured["energy_pi_factor"].isna().all()
    # a prediction's model columns are the summary's row of that model
    model = summary.drop_duplicates("model").set_index("model")
    for column in ("top1", "family", "params", "flops_per_image", "accuracy_source"):
        want = model.loc[pred["model"], column].to_numpy()
        assert (pred[column].to_numpy() == want).all(), column
    np.testing.assert_array_equal(pred["scored_energy_per_image_j"], pred["energy_per_image_j"])
    e, lo, hi = (
        pred[c].astype(float)
        for c in ("energy_per_image_j", "energy_per_image_j_pi_low", "energy_per_image_j_pi_high")
    )
    assert ((lo < e) & (e < hi)).all()
    data = page_data(summary, scores, predicted=predicted)
    assert data["meta"]["predicted_rows"] == 16 and data["meta"]["rows"] == len(table)


def test_predictions_of_another_energy_than_the_scored_one_are_not_drawn():
    summary = synthetic_summary(30, unmeasured=5)
    predicted = synthetic_predictions(summary)
    scores = score_summary(summary, energy="dynamic")
    pred = page_table(summary, scores, predicted).query("source == 'predicted'")
    assert pred["scored_energy_per_image_j"].isna().all()
    assert pred["score_note"].str.contains("not the energy scored here").all()
    assert (pred["grade_range"] == "").all()  # no front of that energy to place it against
    ok = predicted.assign(energy_per_image_j=np.nan)  # a note, nothing predicted: left out
    assert page_table(summary, scores, ok)["source"].eq("measured").all()


def test_page_table_marks_estimates_by_meter_name_when_flag_is_missing():
    summary = synthetic_summary(8, failed=False)
    summary["energy_is_estimate"] = pd.array([pd.NA] * len(summary), dtype="boolean")
    table = page_table(summary, score_summary(summary))
    assert (table["energy_is_estimate"] == (table["device_label"] == "cpu")).all()


def test_build_page_is_one_self_contained_file(tmp_path):
    summary = synthetic_summary(12, extra_names=[HOSTILE, HOSTILE_2])
    scores = score_summary(summary)
    out = build_page(summary, scores, tmp_path / "web" / "index.html", title="A <b>study</b>")
    text = out.read_text("utf-8")
    assert [p.name for p in out.parent.iterdir()] == ["index.html"]  # no temp file left
    # No address is reachable from the page; the one URL-shaped string is the SVG namespace
    # name the energy label's elements are created in (a name, never fetched).
    assert not re.search(r"https?://", text.replace('"http://www.w3.org/2000/svg"', ""))
    assert text.count("http://www.w3.org/2000/svg") == 1
    markup = re.sub(r'(id="jb-data">).*?(</script>)', r"\1\2", text, flags=re.S)
    assert not re.search(r"\ssrc\s*=|<link|@import|url\(", markup)  # nothing loaded
    assert "<title>A &lt;b&gt;study&lt;/b&gt;</title>" in text
    assert text.count("</script>") == 2  # the data's and the code's; the names add none
    assert HOSTILE not in text and "<!--" not in text
    embedded = embedded_data(text)
    assert embedded == json.loads(json.dumps(page_data(summary, scores, title="A <b>study</b>")))
    assert HOSTILE in decoded(embedded["data"]["model"], embedded["meta"]["rows"])
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert "default-src &#x27;none&#x27;" in csp and "connect-src &#x27;none&#x27;" in csp
    assert csp.count("sha256-") == 2


def test_build_page_scores_the_summary_when_no_scores_are_given(tmp_path):
    summary = synthetic_summary(10)
    out = build_page(summary, None, tmp_path / "index.html")
    data = embedded_data(out.read_text("utf-8"))
    assert "A" in decoded(data["data"]["grade"], data["meta"]["rows"])
    assert data["meta"]["grade_thresholds"]["A"] == 0.8


def test_every_embedded_column_decodes_to_the_page_table_exactly():
    summary = synthetic_summary(40, extra_names=[HOSTILE, "ctl\x00\u202e"])
    scores = score_summary(summary)
    table = page_table(summary, scores)
    data = page_data(summary, scores)
    kinds = set()
    for c in PAGE_COLUMNS:
        kinds.add("f64" if "f64" in data["data"][c] else "codes" in data["data"][c])
        assert decoded(data["data"][c], len(table)) == webapp._json_values(table[c]), c
    assert kinds == {"f64", True, False}  # floats, dictionaries and one-value columns


@pytest.mark.parametrize(
    "column",
    [
        pd.Series([1.5, None, np.inf, -0.25, 1.5]),
        pd.Series(["a", None, "b", "a"], dtype="string"),
        pd.Series([True, pd.NA, False], dtype="boolean"),
        pd.Series([1, pd.NA, 3, 2**40], dtype="Int64"),
        pd.Series([True, 1, "1", None, 1.0], dtype=object),  # True and 1 stay apart
        pd.Series(np.arange(300) * 0.1),  # many distinct numbers: float64
        pd.Series(np.arange(70_000) % 66_000),  # > 65,536 distinct values: 4-byte codes
        pd.Series([], dtype="float64"),
        pd.Series([None] * 5, dtype="string"),
    ],
)
def test_encode_column_is_exact(column):
    want = webapp._json_values(column)
    encoded = webapp.encode_column(column)
    got = decoded(encoded, len(column))
    assert got == want
    if "f64" not in encoded:  # (JavaScript has one kind of number: 3 and 3.0 are the same)
        assert [type(v) for v in got] == [type(v) for v in want]


def test_the_embedded_data_stays_small_per_row():
    """The size the README's 8-GPU study (292,160 rows) depends on: the data at 20,000 rows
    is under 260 characters a row (plain JSON lists took about 800)."""
    summary = synthetic_summary(10_000, failed=False)
    text = embed_json(page_data(summary, score_summary(summary)))
    assert len(text) / len(summary) < 260, len(text) / len(summary)


def test_page_meta_carries_the_score_group_and_the_palettes():
    """The script retypes neither the score's grouping nor a colour: both are in the meta."""
    summary = synthetic_summary(6)
    meta = page_data(summary, score_summary(summary))["meta"]
    assert meta["score_group"] == list(SCORE_GROUP)
    assert meta["palettes"] == palettes.page_palettes()
    assert list(meta["palettes"]["grade"]) == list(GRADES) == meta["grades"]
    js = webapp.page_script().lower()
    colours = {*palettes.GRADE_COLORS.values(), *palettes.FAMILY_COLORS, palettes.OTHER_GREY}
    colours |= {*palettes.GRADE_INK.values(), *palettes.PAGE_FRONTS} - {"#ffffff", palettes.INK}
    assert not [c for c in colours | {palettes.PAGE_NO_GRADE} if c.lower() in js]


def test_render_page_refuses_assets_that_would_close_their_tag(monkeypatch):
    real = webapp._asset
    monkeypatch.setattr(
        webapp, "_asset", lambda n: real(n) + ("// </SCRIPT>" if n == "plot.js" else "")
    )
    summary = synthetic_summary(3)
    with pytest.raises(ValueError, match="plot.js"):
        webapp.render_page(page_data(summary, score_summary(summary)))


# --- in a browser ---------------------------------------------------------------------------

BROWSER_MISSING = ", ".join(
    ["the playwright package (pyproject's dev extra)"] * (sync_playwright is None)
    + [f"{CHROMIUM} (.ci/install-browser.sh installs it)"] * (not CHROMIUM.exists())
)
# CI sets JOULEBENCH_REQUIRE_BROWSER=1 so that a missing browser fails instead of skipping.
REQUIRE_BROWSER = os.environ.get("JOULEBENCH_REQUIRE_BROWSER", "") not in ("", "0")
needs_browser = pytest.mark.skipif(
    bool(BROWSER_MISSING) and not REQUIRE_BROWSER, reason=f"browser test: no {BROWSER_MISSING}"
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if BROWSER_MISSING:
        pytest.fail(f"JOULEBENCH_REQUIRE_BROWSER is set but there is no {BROWSER_MISSING}")
    home = tmp_path_factory.mktemp("browser-home")  # chromium writes settings under $HOME
    env = {**os.environ, "HOME": str(home)}
    env.update({k: str(home / k.lower()) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")})
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True, env=env
        )
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The page of a 60-model study on two devices (one estimated), with hostile names."""
    summary = synthetic_summary(60, extra_names=[HOSTILE, HOSTILE_2, 'comma, "quote"'])
    scores = score_summary(summary)
    path = build_page(summary, scores, tmp_path_factory.mktemp("web") / "index.html")
    return path, page_table(summary, scores)


class App:
    """One page opened from file:// with every non-file request aborted and recorded."""

    def __init__(
        self,
        browser,
        path: Path,
        *,
        ready: str = "html[data-ready=true]",
        timeout_s=10,
        viewport=None,
    ):
        self.context = browser.new_context(
            accept_downloads=True, viewport=viewport or {"width": 1360, "height": 1000}
        )
        self.blocked, self.errors, self.dialogs = [], [], []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.goto(path.as_uri(), timeout=timeout_s * 1000)
        self.page.wait_for_selector(ready, timeout=timeout_s * 1000)

    def _route(self, route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def visible(self, n: int):
        expect(self.page.locator("#plot")).to_have_attribute("data-visible-count", str(n))

    def points_xy(self, shown: pd.DataFrame, energy_j=None, top1=None):
        """Where the points on show are drawn, in px from the canvas's top left: the page's
        axes, worked out here (margins 62/18/14/46 px; each axis spans the data's range with
        a little padding). `energy_j`/`top1`: other values to place on the same axes."""
        self.page.locator("#canvas").scroll_into_view_if_needed()
        box = self.page.locator("#canvas").bounding_box()
        lx = np.log10(shown["scored_energy_per_image_j"].astype(float).to_numpy())
        acc = shown["top1"].astype(float).to_numpy()
        xs, ys = max(np.ptp(lx), 0.3) * 0.55, max(np.ptp(acc), 2) * 0.56
        xc, yc = (lx.min() + lx.max()) / 2, (acc.min() + acc.max()) / 2
        pw, ph = box["width"] - 62 - 18, box["height"] - 14 - 46
        if energy_j is not None:
            lx, acc = np.log10(np.asarray(energy_j, float)), np.asarray(top1, float)
        x = 62 + (lx - xc + xs) / (2 * xs) * pw
        y = 14 + (1 - (acc - yc + ys) / (2 * ys)) * ph
        return x, y

    def point_xy(self, shown: pd.DataFrame, i: int) -> tuple[float, float]:
        """Where row i of the points on show is drawn, in page coordinates."""
        x, y = self.points_xy(shown)
        box = self.page.locator("#canvas").bounding_box()
        return box["x"] + x[i], box["y"] + y[i]

    def canvas_rgb(self) -> np.ndarray:
        """The plot as shown (over the page's white), as an (h, w, 3) array of 0..255."""
        from PIL import Image

        png = self.page.locator("#canvas").screenshot()
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)

    def hover_plot_center(self):
        """With one point on show, the axes centre on it: hover (and return) the centre."""
        box = self.page.locator("#canvas").bounding_box()
        x = box["x"] + 62 + (box["width"] - 62 - 18) / 2
        y = box["y"] + 14 + (box["height"] - 14 - 46) / 2
        self.page.mouse.move(x, y)
        return x, y

    def assert_clean(self):
        assert self.blocked == [], f"the page tried the network: {self.blocked}"
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"


@pytest.fixture
def app(browser, site):
    a = App(browser, site[0])
    yield a
    a.context.close()


@needs_browser
def test_page_loads_offline_without_console_errors(app, site):
    _, table = site
    app.visible(len(expected_rows(table)))
    expect(app.page.locator("#table")).to_have_attribute("data-row-count", str(len(table)))
    assert app.page.locator("img, iframe, link, object, embed").count() == 0
    expect(app.page.locator("#estimate-banner")).to_be_visible()
    expect(app.page.locator("#grade-bands")).to_contain_text("A ≥ 0.8")
    app.assert_clean()


@needs_browser
def test_filters_change_the_number_of_visible_points(app, site):
    _, t = site
    page = app.page
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    gpu = t["device_label"] == "gpu"
    app.visible(len(expected_rows(t, gpu)))
    page.fill("#acc-min", "75")
    app.visible(len(expected_rows(t, gpu & (t["top1"] >= 75))))
    page.fill("#energy-max", "0.05")
    energy = t["scored_energy_per_image_j"]
    app.visible(len(expected_rows(t, gpu & (t["top1"] >= 75) & (energy <= 0.05))))
    page.click("#reset")
    app.visible(len(expected_rows(t)))
    family = page.locator(".facet").filter(has_text="Family")
    family.get_by_role("button", name="none").click()
    app.visible(0)
    page.check('input[data-facet="family"][value="vit"]')
    app.visible(len(expected_rows(t, t["family"] == "vit")))
    app.assert_clean()


@needs_browser
def test_search_finds_a_model_and_the_hover_card_shows_its_numbers(app, site):
    _, t = site
    name = t.loc[t["family"] == "swin", "model"].iloc[2]
    app.page.uncheck('input[data-facet="device_label"][value="cpu"]')
    app.page.fill("#search", name)
    app.visible(1)
    first = app.page.locator("#table tbody tr.row").first.locator("td.model")
    expect(first).to_have_text(name)
    app.hover_plot_center()
    card = app.page.locator("#card")
    expect(card).to_be_visible()
    expect(card.locator(".name")).to_have_text(name)
    row = t[(t["model"] == name) & (t["device_label"] == "gpu")].iloc[0]
    expect(card).to_contain_text(f"{row['top1']:.2f}%")
    for text in ("95% CI", "CV over repeats", "nvml", "NVIDIA H200", "node-7", "torch 2.14.1"):
        expect(card).to_contain_text(text)
    app.assert_clean()


@needs_browser
def test_compare_shows_the_chosen_models_and_caps_at_six(app, site):
    page = app.page
    boxes = page.locator("#table tbody tr.row td:first-child input")
    names = [page.locator("#table tbody tr.row td.model").nth(i).inner_text() for i in range(7)]
    for i in range(3):
        boxes.nth(i).check()
    expect(page.locator("#compare")).to_have_attribute("data-count", "3")
    head = page.locator(".compare-table thead th .model-name")
    expect(head).to_have_text(names[:3])
    expect(page.locator(".bar-block")).to_have_count(5)
    for i in range(3, 7):
        boxes.nth(i).click()
    expect(page.locator("#compare")).to_have_attribute("data-count", "6")
    expect(page.locator("#compare-count")).to_contain_text("at most 6")
    assert not boxes.nth(6).is_checked()
    page.locator(".chip button").first.click()  # remove the first
    expect(head).to_have_text(names[1:6])
    app.assert_clean()


@needs_browser
def test_csv_download_holds_the_selected_rows(app, site, tmp_path):
    _, t = site
    page = app.page
    page.locator(".facet").filter(has_text="Family").get_by_role("button", name="none").click()
    page.check('input[data-facet="family"][value="vit"]')
    page.check('input[data-facet="family"][value="deit"]')
    page.fill("#acc-min", "70")
    want = t[t["family"].isin(["vit", "deit"]) & (t["top1"] >= 70)]
    expect(page.locator("#table")).to_have_attribute("data-row-count", str(len(want)))
    with page.expect_download() as info:
        page.click("#download-csv")
    got = pd.read_csv(info.value.path())
    assert list(got.columns) == list(PAGE_COLUMNS)
    key = ["device_label", "model"]
    got, want = got.sort_values(key).reset_index(drop=True), want.sort_values(key)
    assert got["model"].tolist() == want["model"].tolist()
    np.testing.assert_array_equal(got["energy_per_image_j"], want["energy_per_image_j"])
    np.testing.assert_array_equal(got["top1"], want["top1"])
    assert got["grade"].fillna("").tolist() == want["grade"].fillna("").tolist()

    rows = page.locator("#table tbody tr.row")
    picked = [rows.nth(i).locator("td.model").inner_text() for i in (0, 2)]
    rows.nth(0).locator("input").check()
    rows.nth(2).locator("input").check()
    with page.expect_download() as info:
        page.click("#compare-download")
    assert pd.read_csv(info.value.path())["model"].tolist() == picked
    app.assert_clean()


@needs_browser
def test_hostile_model_names_show_as_text_and_run_nothing(app):
    page = app.page
    page.fill("#search", "onerror")
    expect(page.locator("#table")).to_have_attribute("data-row-count", "2")  # gpu and cpu
    expect(page.locator("#table tbody td.model").first).to_have_text(HOSTILE)
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    app.visible(1)
    app.hover_plot_center()
    expect(page.locator("#card .name")).to_have_text(HOSTILE)
    page.mouse.click(*app.hover_plot_center())
    expect(page.locator(".compare-table thead .model-name")).to_have_text([HOSTILE])
    page.fill("#search", "alert(2)")
    expect(page.locator("#table tbody td.model").first).to_have_text(HOSTILE_2)
    cell = page.locator("#table tbody td.model").first  # the name's text, with line breaks only
    expect(cell.locator("*:not(div.wrap2):not(wbr)")).to_have_count(0)
    with page.expect_download() as info:
        page.click("#compare-download")
    assert pd.read_csv(info.value.path())["model"].tolist() == [HOSTILE]
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2  # the data and the app, nothing injected
    app.assert_clean()


@needs_browser
def test_table_sorts_and_marks_estimates(app, site):
    _, t = site
    page = app.page
    header = page.locator('#table th[data-key="energy"] button')
    header.click()  # numbers sort high to low first
    header.click()
    expect(page.locator('#table th[data-key="energy"]')).to_have_attribute("aria-sort", "ascending")
    cheapest = t.loc[t["scored_energy_per_image_j"].idxmin(), "model"]
    expect(page.locator("#table tbody td.model").first).to_have_text(cheapest)
    page.locator('#table th[data-key="device_label"] button').click()  # text: cpu first
    est_rows = page.locator("#table tbody tr.row").filter(has=page.locator(".badge.est"))
    expect(est_rows.first).to_contain_text("cpu")
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    expect(est_rows).to_have_count(0)
    page.check('input[name=colorby][value="family"]')
    expect(page.locator("#legend")).to_contain_text("resnet")
    app.assert_clean()


@needs_browser
def test_table_renders_the_rows_scrolled_into_view(app, site):
    _, t = site
    rows = app.page.locator("#table tbody tr.row")
    assert 0 < rows.count() < len(t)  # only what is in view, and a margin
    app.page.locator("#table-wrap").evaluate("w => { w.scrollTop = w.scrollHeight; }")
    last = t.index[t["efficiency_index"].isna()].max()  # sorted by index, empty last
    expect(rows.last.locator("td.model")).to_have_text(t.loc[last, "model"])
    app.assert_clean()


@needs_browser
def test_an_empty_study_still_loads(browser, tmp_path):
    summary = synthetic_summary(3, failed=False).iloc[:0]
    app = App(browser, build_page(summary, score_summary(summary), tmp_path / "index.html"))
    app.visible(0)
    expect(app.page.locator("#table tbody")).to_contain_text("No row matches")
    app.assert_clean()
    app.context.close()


@needs_browser
@pytest.mark.parametrize("breakage", ["rows", "colour"])
def test_a_startup_failure_is_shown_on_the_page(browser, tmp_path, monkeypatch, breakage):
    """A page that cannot start says so where the plot would be, not with a blank page: data
    that does not decode (the rows say one more than the columns hold), or a failure while
    drawing the first plot (a colour that is not #rrggbb)."""
    summary = synthetic_summary(6)
    if breakage == "colour":
        grey = {"grade": dict.fromkeys(GRADES, "grey"), "no_grade": "grey"}
        monkeypatch.setattr(webapp, "page_palettes", lambda: {**palettes.page_palettes(), **grey})
    path = build_page(summary, score_summary(summary), tmp_path / "index.html")
    if breakage == "rows":
        rows = f'"rows":{len(summary)},'
        path.write_text(path.read_text("utf-8").replace(rows, f'"rows":{len(summary) + 1},'))
    app = App(browser, path, ready="html[data-error=true]")
    box = app.page.locator("#startup")
    expect(box).to_be_visible()
    expect(box).to_contain_text("The page could not start: Error: ")
    n = len(summary)
    expect(box).to_contain_text(f"codes for {n + 1} rows" if breakage == "rows" else "colour grey")
    assert app.page.get_attribute("html", "data-ready") is None
    assert len(app.errors) == 1 and app.errors[0] in box.inner_text()  # and in the console
    app.context.close()


@needs_browser
def test_failed_rows_that_carry_energies_are_in_the_table_not_the_plot(browser, tmp_path):
    """The page plots what the figures plot: a failed row keeps its energy in the table."""
    summary = synthetic_summary(12, failed=False)
    broken = summary.index[:3]
    summary.loc[broken, ["status", "reason"]] = ["oom", "out of memory in the last repeat"]
    table = page_table(summary, score_summary(summary))
    assert (table.loc[broken, "energy_per_image_j"] > 0).all() and table["top1"].notna().any()
    app = App(browser, build_page(summary, score_summary(summary), tmp_path / "index.html"))
    app.visible(len(expected_rows(table)))
    assert len(expected_rows(table)) == len(table[table["top1"].notna()]) - 3
    expect(app.page.locator("#table")).to_have_attribute("data-row-count", str(len(table)))
    expect(app.page.locator("#counts")).to_contain_text("rows are not plotted: failed")
    app.assert_clean()
    app.context.close()


CONTROL_NAME = "ctl\x00\x1b]0\x07\u202egpj\u2066x\u2069\x7f"  # NUL, OSC, RLO, LRI, PDI, DEL


@needs_browser
def test_the_energy_label_is_well_formed_whatever_the_name(browser, tmp_path):
    """NUL and other controls would make the SVG malformed XML and bidi overrides would show
    the name reversed: on the page's label, as on `joulebench label`'s, each such character
    is its visible escape (joulebench.safe_text.printable)."""
    import xml.etree.ElementTree as ET

    summary = synthetic_summary(8, extra_names=[CONTROL_NAME], failed=False)
    summary.loc[summary["device_label"] == "cpu", "device_label"] = "cpu\u202d\x01"
    app = App(browser, build_page(summary, score_summary(summary), tmp_path / "index.html"))
    page = app.page
    page.check("#best-only")
    page.fill("#search", "ctl")
    expect(page.locator("#best-table")).to_have_attribute("data-row-count", "2")
    runs = []
    for k in range(2):
        with page.expect_download() as info:
            page.locator("#best-table tbody tr").nth(k).get_by_role("button").click()
        svg = ET.parse(info.value.path()).getroot()  # well-formed
        texts = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}text")]
        runs += [t for t in texts if " · batch " in t]
        want = "ctl\\x00\\x1b]0\\x07\\u202egpj\\u2066x\\u2069\\x7f"
        assert want in texts, texts
        assert not [t for t in texts if re.search("[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]", t)]
    assert sorted(runs) == ["cpu\\u202d\\x01 · fp32 · batch 64", "gpu · fp32 · batch 64"]
    app.assert_clean()
    app.context.close()


@needs_browser
def test_a_click_after_typing_lands_on_the_button_it_pressed(browser, tmp_path):
    """The search box's change event (fired when a click takes the focus) asks for the view its
    input event drew: drawing it again replaced the button between mousedown and mouseup, and
    a loaded machine lost the click (a label download that never came)."""
    summary = synthetic_summary(8, extra_names=[CONTROL_NAME], failed=False)
    app = App(browser, build_page(summary, score_summary(summary), tmp_path / "index.html"))
    page = app.page
    page.check("#best-only")
    page.fill("#search", "ctl")
    expect(page.locator("#best-table")).to_have_attribute("data-row-count", "2")
    page.evaluate("document.querySelector('#best-table tbody tr').dataset.marked = 'yes'")
    page.locator("#search").blur()  # the change event
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    assert page.locator("#best-table tbody tr[data-marked=yes]").count() == 1
    page.fill("#search", "")
    page.locator("#search").blur()
    expect(page.locator("#best-table tbody tr[data-marked=yes]")).to_have_count(0)
    app.assert_clean()
    app.context.close()


@needs_browser
def test_screenshot_is_written_as_an_artifact(app, site, tmp_path):
    page = app.page
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    shown = expected_rows(site[1], site[1]["device_label"] == "gpu")
    app.visible(len(shown))
    for i in (0, 3, 8):
        page.locator("#table tbody tr.row").nth(i).locator("input").check()
    # a viewport as tall as the page: the shot then shows the hover card too
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1360, "height": height})
    hovered = int(np.argsort(shown["top1"].to_numpy())[len(shown) // 2])
    page.mouse.move(*app.point_xy(shown, hovered))
    expect(page.locator("#card .name")).to_have_text(shown["model"].iloc[hovered])
    shot = tmp_path / "webapp.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    if os.environ.get("JOULEBENCH_TEST_ARTIFACTS"):  # CI keeps it; nothing else leaves tmp_path
        folder = Path(os.environ["JOULEBENCH_TEST_ARTIFACTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, folder / "webapp.png")
    app.assert_clean()


BIG_DEVICES = (*DEVICES, *((f"gpu{k}", "nvml", "NVIDIA H200", f"cuda:{k}") for k in (1, 2)))
BIG_METHODS = tuple(f"method{k}" for k in range(10))


@pytest.fixture(scope="module")
def big_site(tmp_path_factory):
    """A 300,002-row study (7,500 models x 4 devices x 10 methods, the scale of the README's
    8-GPU study), scored in 40 groups."""
    summary = synthetic_summary(7_500, devices=BIG_DEVICES, methods=BIG_METHODS)
    assert len(summary) > 300_000
    scores = score_summary(summary)
    path = build_page(summary, scores, tmp_path_factory.mktemp("big") / "index.html")
    return path, page_table(summary, scores)


@needs_browser
@pytest.mark.slow
def test_a_300000_row_page_starts_plots_and_reaches_every_row(browser, big_site, tmp_path):
    path, t = big_site
    assert path.stat().st_size < 100e6  # (plain JSON lists: 240 MB)
    app = App(browser, path, timeout_s=240)
    page = app.page
    shown = expected_rows(t)
    app.visible(len(shown))
    expect(page.locator("#table")).to_have_attribute("data-row-count", str(len(t)))
    # the plot holds points: a good part of its area is coloured
    rgb = app.canvas_rgb()
    assert (np.abs(rgb - 255).max(axis=2) > 60).mean() > 0.1
    # hovering a point shows its card
    app.page.mouse.move(*app.point_xy(shown, len(shown) // 2))
    expect(page.locator("#card")).to_be_visible()
    # the table reaches every row, in its order: efficiency index, best first, empty last
    order = t.assign(_id=np.arange(len(t))).sort_values(
        ["efficiency_index", "_id"], ascending=[False, True], na_position="last"
    )
    wrap = page.locator("#table-wrap")
    for k in (len(t) // 3, len(t) - 1):
        wrap.evaluate("(w, k) => { w.scrollTop = k * 30; }", k)
        row = page.locator(f'#table tbody tr.row[data-id="{order["_id"].iloc[k]}"]')
        expect(row.locator("td.model")).to_have_text(order["model"].iloc[k])
    last = page.locator("#table tbody tr.row").last
    expect(last).to_have_attribute("data-id", str(order["_id"].iloc[-1]))
    # a filter redraws all of it
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    app.visible(len(expected_rows(t, t["device_label"] != "cpu")))
    page.screenshot(path=str(tmp_path / "webapp-300k.png"))
    if os.environ.get("JOULEBENCH_TEST_ARTIFACTS"):
        folder = Path(os.environ["JOULEBENCH_TEST_ARTIFACTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "webapp-300k.png", folder / "webapp-300k.png")
    app.assert_clean()
    app.context.close()


def _hex_rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)])


def _front_segments(app, shown: pd.DataFrame) -> list:
    """The staircase of each group's front as the page draws it: (x0, y0, x1, y1) in px."""
    segments = []
    for _, group in shown[shown["on_front"].fillna(False).astype(bool)].groupby(
        list(SCORE_GROUP), dropna=False
    ):
        f = group.sort_values(["scored_energy_per_image_j", "top1"])
        x, y = app.points_xy(shown, f["scored_energy_per_image_j"], f["top1"])
        for i in range(1, len(f)):
            segments += [(x[i - 1], y[i - 1], x[i], y[i - 1]), (x[i], y[i - 1], x[i], y[i])]
    return segments


def _near_a_segment(x, y, segments, within_px) -> bool:
    for x0, y0, x1, y1 in segments:  # horizontal or vertical
        dx = max(min(x0, x1) - x, 0, x - max(x0, x1))
        dy = max(min(y0, y1) - y, 0, y - max(y0, y1))
        if dx * dx + dy * dy <= within_px**2:
            return True
    return False


@needs_browser
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_points_are_drawn_where_and_how_their_row_says(app, site, device):
    """At each point that stands alone, the canvas shows its grade's colour: filled (85 %
    over white) for measured energy, hollow (background at the centre, the colour on the
    ring) for estimated energy."""
    _, t = site
    other = "cpu" if device == "gpu" else "gpu"
    app.page.uncheck(f'input[data-facet="device_label"][value="{other}"]')
    shown = expected_rows(t, t["device_label"] == device)
    app.visible(len(shown))
    app.page.mouse.move(0, 0)  # no hover ring
    rgb = app.canvas_rgb()
    x, y = app.points_xy(shown)
    segments = _front_segments(app, shown)
    grades = shown["grade"].to_numpy()
    estimated = shown["energy_is_estimate"].to_numpy(bool)
    assert estimated.all() if device == "cpu" else not estimated.any()
    checked = 0
    for i in range(len(shown)):
        gap = np.hypot(x - x[i], y - y[i])
        gap[i] = np.inf
        if gap.min() < 12 or _near_a_segment(x[i], y[i], segments, 6):
            continue  # overlapped by another point or a front line
        grade = grades[i] if isinstance(grades[i], str) else None
        colour = _hex_rgb(palettes.GRADE_COLORS[grade] if grade else palettes.PAGE_NO_GRADE)
        cx, cy = int(x[i]), int(y[i])
        centre = rgb[cy, cx]
        if estimated[i]:
            assert (centre >= 225).all(), (i, grade, centre)  # hollow: background shows
            ring = [rgb[cy + dy, cx + dx] for dx in range(-5, 6) for dy in range(-5, 6)]
            miss = min(np.abs(p - colour).max() for p in ring)
            assert miss <= 40, (i, grade, miss)
        else:
            want = 0.85 * colour + 0.15 * 255
            assert np.abs(centre - want).max() <= 10, (i, grade, centre, want)
        checked += 1
    assert checked >= 10, checked
    app.assert_clean()


@needs_browser
def test_fronts_are_the_score_groups_of_the_metadata(browser, site, tmp_path, monkeypatch):
    """One front per score group, taken from the page's metadata, each named in the legend
    in its own colour: with the device left out of the group, the two devices' fronts
    become one."""
    app = App(browser, site[0])
    fronts = app.page.locator("#legend .fronts .key.front")
    expect(app.page.locator("#legend .fronts")).to_contain_text("Pareto fronts (2):")
    expect(fronts).to_have_text(["cpu · fp32 · batch 64 (estimated)", "gpu · fp32 · batch 64"])
    colours = [f.locator("i").evaluate("e => e.style.borderTopColor") for f in fronts.all()]
    styles = [f.locator("i").evaluate("e => e.style.borderTopStyle") for f in fronts.all()]
    assert len(set(colours)) == 2 and styles == ["dashed", "solid"]
    app.context.close()
    summary = synthetic_summary(60)
    scores = score_summary(summary)
    monkeypatch.setattr(webapp, "SCORE_GROUP", ("phase", "method", "batch_size_requested"))
    app = App(browser, build_page(summary, scores, tmp_path / "index.html"))
    expect(app.page.locator("#legend .fronts")).to_contain_text("Pareto front:")
    expect(app.page.locator("#legend .fronts .key.front")).to_have_count(1)
    app.assert_clean()
    app.context.close()


# --- first view, long names, right-to-left overrides, clipped intervals ----------------------

RLO_DEVICE = "gpu\u2069\u202e-rev"  # a stray pop-isolate, then a right-to-left override
LONG_FAMILY = "fam_" + "w" * 10_000
# x of the first and last character of `word` in the first text node under `sel` holding it
TEXT_X = """([sel, word]) => {
  const walker = document.createTreeWalker(document.querySelector(sel), NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const i = n.data.indexOf(word);
    if (i < 0) continue;
    const x = (k) => {
      const r = document.createRange();
      r.setStart(n, k);
      r.setEnd(n, k + 1);
      return r.getBoundingClientRect().left;
    };
    return [x(i), x(i + word.length - 1)];
  }
  return null;
}"""


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory):
    """A page whose labels try to break the layout and the reading order."""
    summary = synthetic_summary(60, extra_names=["z" * 5000 + ".syn_in1k"])
    summary.loc[summary["device_label"] == "gpu", "device_label"] = RLO_DEVICE
    summary.loc[summary.index[4:40], "family"] = LONG_FAMILY  # among the seven coloured
    # one row as a noisy busy CPU leaves it: CV 104 %, the CI's lower bound clipped at 0
    noisy = summary.index[(summary["device_label"] == "cpu") & (summary["status"] == "ok")][0]
    summary.loc[noisy, ["energy_per_image_cv", "energy_per_image_ci95_low_j"]] = [1.04, 0.0]
    summary.loc[noisy, "flags"] = "ci-clipped"
    scores = score_summary(summary)
    path = build_page(summary, scores, tmp_path_factory.mktemp("odd") / "index.html")
    return path, page_table(summary, scores), summary.loc[noisy, "model"]


@needs_browser
def test_the_table_is_filled_on_first_view_without_scrolling(app):
    page = app.page
    wrap = page.locator("#table-wrap")
    wrap.scroll_into_view_if_needed()
    box = wrap.bounding_box()
    assert box["height"] > 500  # the table's box is as tall as it may grow
    rows = page.locator("#table tbody tr.row")
    bottoms = rows.evaluate_all("rs => rs.map((r) => r.getBoundingClientRect().bottom)")
    # rows reach the bottom of the visible box: no blank space waiting for a scroll
    assert max(bottoms) >= box["y"] + box["height"] - 2, (len(bottoms), box)
    # and what is at the box's lower edge is a row of the table
    at_bottom = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('tr')?.className",
        [box["x"] + 100, box["y"] + box["height"] - 10],
    )
    assert at_bottom and "row" in at_bottom
    app.assert_clean()


@needs_browser
def test_long_names_neither_widen_the_page_nor_hide_their_full_text(browser, odd_site):
    app = App(browser, odd_site[0])
    page = app.page
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    facet = page.locator(".facet").filter(has_text="Family")
    expect(facet).to_be_visible()  # bounding_box() is None until it is laid out (a busy CI)
    assert facet.bounding_box()["width"] <= 260
    # every control stays inside the side panel (the unit menu's longest option once did not)
    sticking_out = page.evaluate(
        """() => { const right = document.querySelector('#controls').getBoundingClientRect().right;
        return [...document.querySelectorAll('#controls input, #controls select')]
          .filter(e => e.getBoundingClientRect().right > right + 0.5).map(e => e.id); }"""
    )
    assert sticking_out == []
    entry = page.locator('#facets label[title^="fam_www"]')
    assert entry.get_attribute("title") == LONG_FAMILY  # the full name on hover
    page.check('input[name=colorby][value="family"]')
    legend = page.locator("#legend [title^='fam_www']")
    expect(legend).to_be_visible()
    assert legend.get_attribute("title") == LONG_FAMILY
    assert legend.bounding_box()["width"] < 700
    cell = page.locator("#table tbody td.model").filter(has_text="zzzz").first
    page.fill("#search", "zzzzz")
    expect(cell).to_have_attribute("title", "z" * 5000 + ".syn_in1k")
    cell.locator("xpath=..").locator("input").check()
    chip = page.locator(".chip .chip-name")
    expect(chip).to_be_visible()
    assert chip.bounding_box()["width"] <= 300 and chip.get_attribute("title").startswith("zzz")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    app.assert_clean()
    app.context.close()


@needs_browser
def test_a_right_to_left_override_in_a_label_stays_inside_it(browser, odd_site):
    app = App(browser, odd_site[0])
    page = app.page
    first, last = page.evaluate(TEXT_X, ["#overview", "Energy per image is"])
    assert first < last, "the sentence after the device list is drawn reversed"
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    page.fill("#search", "resnet50.a1_in1k")
    app.visible(1)
    app.hover_plot_center()
    run = page.locator("#card dd").filter(has_text="batch 64")
    # shown as written, less the stray pop-isolate that would end its isolation
    expect(run).to_contain_text(f"{RLO_DEVICE.replace(chr(0x2069), '')} · fp32 · batch 64")
    first, last = page.evaluate(TEXT_X, ["#card", " · batch 64"])
    assert first < last, "the text after the device label is drawn reversed"
    app.assert_clean()
    app.context.close()


@needs_browser
def test_flagged_spread_and_clipped_interval_are_shown(browser, odd_site):
    _, table, noisy = odd_site
    row = table[table["model"] == noisy].iloc[0]
    assert "high-spread" in row["flags"] and "ci-clipped" in row["flags"]
    assert pd.isna(row["grade"])
    app = App(browser, odd_site[0])
    page = app.page
    page.uncheck(f'input[data-facet="device_label"][value="{RLO_DEVICE}"]')
    page.fill("#search", noisy)
    app.visible(1)
    status = page.locator("#table tbody tr.row td").last
    expect(status.locator(".badge.flag")).to_contain_text("high-spread")
    title = status.get_attribute("title")  # every flag on hover, with the registry's meaning
    assert f"high-spread: {FLAGS['high-spread'].meaning}" in title
    assert f"ci-clipped: {FLAGS['ci-clipped'].meaning}" in title
    app.hover_plot_center()
    card = page.locator("#card")
    expect(card).to_contain_text("lower bound clipped at 0")
    expect(card).to_contain_text("0 J to")
    expect(card).to_contain_text("flagged high-spread (energy CV 104% > 25%)")
    app.assert_clean()
    app.context.close()


# --- decisions: the latency budget, the accuracy floor, best configurations, the URL -------


@pytest.fixture(scope="module")
def decision_site(tmp_path_factory):
    """Three models x two methods x two batch sizes, best configurations known by hand
    (tests/helpers/decision_rows.py)."""
    from helpers.decision_rows import decision_summary

    summary = decision_summary()
    return build_page(summary, score_summary(summary), tmp_path_factory.mktemp("dw") / "i.html")


def _best_rows(page, want: list[tuple] | None = None, timeout_s: float = 5.0) -> list[tuple]:
    """(model, method, batch) of the best-configurations table; with `want`, read again until
    it shows that (typed inputs update after a short debounce) or the time is up."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        cells = page.locator("#best-table tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        rows = [(c[0], c[2], c[3]) for c in cells]
        if want is None or rows == want or time.monotonic() > deadline:
            return rows
        page.wait_for_timeout(50)


@needs_browser
def test_latency_budget_draws_each_model_at_its_best_configuration(browser, decision_site):
    app = App(browser, decision_site)
    page = app.page
    app.visible(12)
    expect(page.locator("#best-section")).to_be_hidden()
    page.fill("#latency-budget", "10")
    app.visible(2)  # big needs 20 ms at least
    expect(page.locator("#plot")).to_have_attribute("data-mode", "best")
    want = [("small", "fp16", "1"), ("mid", "fp16", "1")]
    assert _best_rows(page, want) == want
    expect(page.locator("#best-note")).to_contain_text("1 model has no configuration within")
    page.fill("#latency-budget", "100")
    page.fill("#acc-min", "75")  # the accuracy floor
    app.visible(2)
    want = [("mid", "fp16", "64"), ("big", "fp16", "1")]
    assert _best_rows(page, want) == want
    # the floor's slider follows its number, and moving it writes the number
    assert int(page.input_value("#acc-min-range")) > 0
    page.fill("#acc-min-range", "0")
    expect(page.locator("#acc-min")).to_have_value("")
    app.visible(3)
    # the budget slider at its end: the largest latency, every model at its overall best
    page.fill("#latency-budget-range", "1000")
    expect(page.locator("#latency-budget")).to_have_value("400")
    want = [
        ("small", "fp16", "64"),
        ("mid", "fp16", "64"),
        ("big", "fp16", "64"),
    ]
    assert _best_rows(page, want) == want
    page.click("#reset")
    app.visible(12)
    expect(page.locator("#best-section")).to_be_hidden()
    page.check("#best-only")  # best configurations without a budget
    app.visible(3)
    app.assert_clean()
    app.context.close()


@needs_browser
def test_the_url_round_trips_the_filters(browser, decision_site):
    app = App(browser, decision_site)
    page = app.page
    page.fill("#latency-budget", "100")
    page.fill("#acc-min", "75")
    page.uncheck('input[data-facet="batch_size_requested"][value="64"]')
    page.check('input[name=colorby][value="family"]')
    page.fill("#search", "i")
    app.visible(2)  # batch 1 only: mid and big at fp16 ("small" has no "i"; it is below 75 %)
    want = [("mid", "fp16", "1"), ("big", "fp16", "1")]
    assert _best_rows(page, want) == want
    page.wait_for_function(
        "() => ['latency_max_ms=100', 'q=i', 'color=family'].every(k => location.hash.includes(k))"
    )
    url = page.url
    assert "top1_min=75" in url and "f.batch_size_requested=1" in url and "color=family" in url
    other = App(browser, Path(decision_site))  # a fresh page, then the shared URL
    other.page.goto(url)
    other.page.wait_for_selector("html[data-ready=true]")
    other.visible(2)
    assert other.page.input_value("#latency-budget") == "100"
    assert other.page.input_value("#acc-min") == "75"
    assert other.page.input_value("#search") == "i"
    assert not other.page.is_checked('input[data-facet="batch_size_requested"][value="64"]')
    assert other.page.is_checked('input[name=colorby][value="family"]')
    want = [("mid", "fp16", "1"), ("big", "fp16", "1")]
    assert _best_rows(other.page, want) == want
    # a hash typed into the address bar applies too
    other.page.evaluate("location.hash = '#latency_max_ms=10'")
    other.visible(2)
    assert other.page.input_value("#acc-min") == ""
    for a in (app, other):
        a.assert_clean()
        a.context.close()


@needs_browser
def test_a_best_configuration_links_its_energy_label(app, site):
    """The page builds a model's label itself (offline): an SVG whose strings are text, with
    the same numbers as `joulebench label` would print (tests/report/test_label.py)."""
    import xml.etree.ElementTree as ET

    _, t = site
    page = app.page
    page.check("#best-only")
    page.fill("#search", "onerror")  # the model named <img src=x onerror=alert(1)>
    expect(page.locator("#best-table")).to_have_attribute("data-row-count", "2")  # gpu, cpu
    with page.expect_download() as info:
        page.locator("#best-table tbody tr").first.get_by_role(
            "button", name=re.compile("SVG")
        ).click()
    assert info.value.suggested_filename.startswith("joulebench-label-_img_src_x_onerror")
    svg = ET.parse(info.value.path()).getroot()
    texts = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert HOSTILE in texts and "Energy per 1,000 images" in texts
    device = next(x for x in texts if " · batch " in x).split(" · ")[0]  # cpu sorts first
    row = t[(t["model"] == HOSTILE) & (t["device_label"] == device)].iloc[0]
    e1k = 1000 * row["scored_energy_per_image_j"]
    shown = next(x for x in texts if " ± " in x)
    assert float(shown.split()[0]) == pytest.approx(e1k, rel=5e-3)
    assert (
        "ESTIMATE (power model)" if row["energy_is_estimate"] else "measured (energy counter)"
    ) in texts
    assert not list(svg.iter("{http://www.w3.org/2000/svg}script"))
    app.assert_clean()


@needs_browser
def test_the_unit_switch_shows_wh_and_co2e_per_1000_images(browser, tmp_path):
    """J/image -> Wh per 1,000 images -> gCO2e per 1,000 images (an estimate) in the table
    and on the axis, from the scores' carbon columns; without a grid intensity the CO2e unit
    is offered disabled, saying what to set."""
    summary = synthetic_summary(12)
    scores = score_summary(summary, carbon={"grid_gco2e_per_kwh": 400, "pue": 1.5})
    path = build_page(summary, scores, tmp_path / "carbon" / "index.html")
    table = page_table(summary, scores)
    a = App(browser, path)
    try:
        page = a.page
        name = table["model"].iloc[0]
        page.uncheck('input[data-facet="device_label"][value="cpu"]')
        page.fill("#search", name)
        a.visible(1)
        row = table[(table["model"] == name) & (table["device_label"] == "gpu")].iloc[0]
        e = float(row["scored_energy_per_image_j"])
        cell = page.locator("#table tbody tr.row").first
        page.select_option("#unit", "wh")
        expect(cell).to_contain_text(f"{float(f'{e * 1000 / 3600:.3g}'):g} Wh")
        page.select_option("#unit", "co2e")
        co2e = e * 1000 / 3600 / 1000 * 1.5 * 400
        expect(cell).to_contain_text(f"{float(f'{co2e:.3g}'):g} gCO2e")
        assert row["co2e_per_1k_images_g"] == pytest.approx(co2e)
        page.select_option("#unit", "j")
        a.assert_clean()
    finally:
        a.context.close()
    plain = build_page(summary, score_summary(summary), tmp_path / "plain" / "index.html")
    b = App(browser, plain)
    try:
        option = b.page.locator("#unit option[value=co2e]")
        expect(option).to_be_disabled()
        expect(option).to_contain_text("set carbon.grid_gco2e_per_kwh")
        b.assert_clean()
    finally:
        b.context.close()


# --- issue 34: the default study's page as a new user sees it ---------------------------------


@pytest.fixture(scope="module")
def as_run_site(tmp_path_factory):
    """The default study as a first run makes it (helpers.figure_study): five models by
    name, three methods, batch 1 and 8, every energy an estimate, five rows other-load."""
    from helpers.figure_study import default_study_as_run

    summary, scores, _, _ = default_study_as_run()
    path = tmp_path_factory.mktemp("as_run") / "index.html"
    build_page(summary, scores, path, protocol={"preset": "fast"})
    return path, page_table(summary, scores)


@needs_browser
def test_the_default_study_page_says_what_its_rows_say(browser, as_run_site):
    """Banner, grades left out, how it was measured and the six fronts, each from the rows
    and the preset, never from the page's own words."""
    from joulebench.core.protocol import ProtocolSettings

    app = App(browser, as_run_site[0], viewport={"width": 1360, "height": 1000})
    page = app.page
    banner = page.locator("#estimate-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("All 30 energies here are estimates from a power model")
    expect(page.locator("#graded")).to_have_text(
        "Graded: 25 of 30 rows. Not graded: 5 flagged other-load (each row's note says why; "
        "flagged rows stay on the plot and in the table)."
    )
    how = page.locator("#how-measured")
    fast = ProtocolSettings.from_dict({"preset": "fast"}, "estimate")  # as its meter sized it
    expect(how).to_contain_text("All 30 energies came from estimate:tdp-linear")
    expect(how).to_contain_text("preset fast, its windows sized to the meter. Each configuration")
    expect(how).to_contain_text(f"within {fast.ci_target:.1%} of the mean")
    expect(page.locator("#how")).not_to_contain_text("4 by default")
    fronts = page.locator("#legend .fronts .key.front")
    expect(fronts).to_have_count(6)
    colours = {f.locator("i").evaluate("e => e.style.borderTopColor") for f in fronts.all()}
    assert len(colours) == 6
    _save_artifact(page, "webapp-default-study.png")
    app.assert_clean()
    app.context.close()


@needs_browser
@pytest.mark.parametrize("width", [1360, 1100])
def test_model_and_method_names_are_read_whole_in_the_table(browser, as_run_site, width):
    """config.yaml's model names and fp32-channels-last fit their cells on at most two
    lines, breaking after . _ -, and no header, number or badge is cut: nothing is cut off
    (the table scrolls sideways below its minimum width); the full name is on hover too."""
    app = App(browser, as_run_site[0], viewport={"width": width, "height": 1000})
    cells = app.page.locator("#table tbody tr.row td:is(.model, .name)")
    expect(cells.first).to_be_visible()
    clipped = cells.evaluate_all(
        """cs => cs.map(c => [c.title, c.querySelector('.wrap2')])
             .filter(([, d]) => d.scrollHeight > d.clientHeight + 1
                                || d.scrollWidth > d.clientWidth + 1)
             .map(([t]) => t)"""
    )
    assert clipped == []
    names = set(cells.evaluate_all("cs => cs.map(c => c.textContent)"))
    assert "mobilenetv3_small_100.lamb_in1k" in names and "fp32-channels-last" in names
    cut = app.page.evaluate(  # headers, numbers, badges: none cut to an ellipsis either
        """() => [...document.querySelectorAll('#table th, #table tbody tr.row td')]
             .filter(c => !c.querySelector('.wrap2') && c.scrollWidth > c.clientWidth + 1)
             .map(c => c.getAttribute('data-key') || c.textContent)"""
    )
    assert cut == []
    app.assert_clean()
    app.context.close()


@pytest.fixture(scope="module")
def predicted_site(tmp_path_factory):
    """A 60-model study whose 12 models are not measured but predicted on both devices."""
    summary = synthetic_summary(60, unmeasured=12)
    predicted = synthetic_predictions(summary)
    scores = score_summary(summary)
    path = build_page(
        summary, scores, tmp_path_factory.mktemp("pred") / "index.html", predicted=predicted
    )
    return path, page_table(summary, scores, predicted)


@needs_browser
def test_a_prediction_is_drawn_apart_and_says_it_was_not_measured(browser, predicted_site):
    """A predicted point: a hollow ring on white in the predictions' colour, with a bar over
    its interval (which a measured point never has); its card, table row and legend say
    predicted, with its interval and a grade range, and the switch hides the predictions."""
    path, t = predicted_site
    app = App(browser, path)
    page = app.page
    pred = t[(t["source"] == "predicted") & (t["device_label"] == "gpu")]
    row = pred.iloc[3]
    page.uncheck('input[data-facet="device_label"][value="cpu"]')
    page.fill("#search", row["model"])
    app.visible(1)
    page.mouse.move(0, 0)
    rgb = app.canvas_rgb()
    box = page.locator("#canvas").bounding_box()
    cx = int(62 + (box["width"] - 62 - 18) / 2)
    cy = int(14 + (box["height"] - 14 - 46) / 2)
    assert (rgb[cy, cx] >= 225).all(), rgb[cy, cx]  # hollow: white inside
    colour = _hex_rgb(palettes.PREDICTED_COLOR)
    ring = [rgb[cy + dy, cx + dx] for dx in range(-6, 7) for dy in range(-6, 7)]
    assert min(np.abs(p - colour).max() for p in ring) <= 40
    for dx in (-40, -20, 20, 40):  # the interval's bar, both sides
        bar = [rgb[cy + dy, cx + dx] for dy in (-1, 0, 1)]
        assert min(np.abs(p - colour).max() for p in bar) <= 60, (dx, bar)
    expect(page.locator("#legend")).to_contain_text("predicted (90 % interval), not measured")
    app.hover_plot_center()
    card = page.locator("#card")
    expect(card).to_be_visible()
    expect(card.locator(".name")).to_have_text(row["model"])
    expect(card).to_contain_text("predicted (90 % interval ")
    expect(card).to_contain_text(", not measured")
    expect(card.locator(".grade-range")).to_have_text(row["grade_range"])
    expect(card).not_to_contain_text("95% CI")
    expect(page.locator("#table tbody tr.row")).to_have_count(1)  # not its not-profiled row
    tr = page.locator("#table tbody tr.row.predicted")
    expect(tr.locator("td").last).to_have_text("predicted")
    expect(tr.locator(".grade-range")).to_have_text(row["grade_range"])
    page.fill("#search", "")
    measured = len(expected_rows(t, (t["device_label"] == "gpu") & (t["source"] == "measured")))
    app.visible(measured + len(pred))
    expect(page.locator("#predicted-field")).to_be_visible()
    page.uncheck("#show-predicted")
    app.visible(measured)
    assert "pred=0" in page.evaluate("location.hash")
    _save_artifact(page, "page-predicted.png")
    app.assert_clean()
    app.context.close()


@needs_browser
def test_without_predictions_the_switch_is_absent(app):
    expect(app.page.locator("#predicted-field")).to_be_hidden()
    expect(app.page.locator("#predicted-banner")).to_be_hidden()
    expect(app.page.locator("#legend")).not_to_contain_text("predicted")
    app.assert_clean()


def _save_artifact(page, name: str) -> None:
    """A full-page screenshot to $JOULEBENCH_TEST_ARTIFACTS (CI keeps it), when set."""
    if os.environ.get("JOULEBENCH_TEST_ARTIFACTS"):
        folder = Path(os.environ["JOULEBENCH_TEST_ARTIFACTS"])
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / name), full_page=True)


def test_the_command_draws_the_predictions_it_is_given(tmp_path, capsys):
    from joulebench.cli import main

    summary = synthetic_summary(30, unmeasured=6)
    summary.to_parquet(tmp_path / "summary.parquet")
    score_summary(summary).to_parquet(tmp_path / "scores.parquet")
    synthetic_predictions(summary).to_parquet(tmp_path / "predicted.parquet")
    argv = ["webapp", "--summary", str(tmp_path / "summary.parquet")]
    argv += ["--scores", str(tmp_path / "scores.parquet"), "--output", str(tmp_path / "i.html")]
    assert main([*argv, "--predicted", str(tmp_path / "predicted.parquet")]) == 0
    assert embedded_data((tmp_path / "i.html").read_text("utf-8"))["meta"]["predicted_rows"] == 12
    assert main(argv) == 0  # optional: without it, no prediction
    assert embedded_data((tmp_path / "i.html").read_text("utf-8"))["meta"]["predicted_rows"] == 0
    summary[["model"]].to_parquet(tmp_path / "bare.parquet")
    capsys.readouterr()
    assert main([*argv, "--predicted", str(tmp_path / "bare.parquet")]) == 2
    err = capsys.readouterr().err
    assert "no column phase" in err and "joulebench predict" in err and len(err.splitlines()) == 1
