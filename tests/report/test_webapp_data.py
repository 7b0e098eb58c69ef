"""The page's data module (webapp_assets/data.js) and URL state (url.js) under node, without a
browser: what the page decodes, plots, filters, sorts, formats and writes, checked against the
Python side (webapp.page_table, the figures' rule for a plotted row, safe_text's escapes)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from helpers.decision_rows import decision_summary, profile_row

from joulebench.analysis.score import score_summary
from joulebench.flags import FLAGS
from joulebench.flags import page_meta as flags_meta
from joulebench.report import webapp
from joulebench.report.webapp import PAGE_COLUMNS, page_data, page_table

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None,
    reason="no `node` on PATH: the page's data module (webapp_assets/data.js) is tested under "
    "node (v18 or later); install nodejs to run these tests",
)
ASSETS = resources.files("joulebench.report") / "webapp_assets"
HOSTILE = "ctl\x00\x1b]0\x07\u202e<img src=x>\u2066\u2069"


def run_js(tmp_path, body: str, **inputs):
    """The value `body` (a function body) returns under node, through JSON. In it, `D` is the
    data module, `U` the URL module and `I` the inputs (JSON: NaN arrives as null)."""
    inputs_path = tmp_path / "inputs.json"
    inputs_path.write_text(json.dumps(inputs, allow_nan=False), "utf-8")
    script = tmp_path / "run.js"
    script.write_text(
        f"const D = require({json.dumps(str(ASSETS / 'data.js'))});\n"
        f"const U = require({json.dumps(str(ASSETS / 'url.js'))});\n"
        f"const I = JSON.parse(require('fs').readFileSync({json.dumps(str(inputs_path))}));\n"
        f"const out = (function (D, U, I) {{\n{body}\n}})(D, U, I);\n"
        "process.stdout.write(JSON.stringify(out === undefined ? null : out));\n",
        "utf-8",
    )
    done = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def study_summary() -> pd.DataFrame:
    """The decision study (3 models x 2 methods x 2 batch sizes on a GPU, best configurations
    known by hand) plus an estimated CPU run, a failed run that kept its energy, a run
    without latency and a hostile name."""
    cpu = {"device_label": "cpu", "meter": "estimate:tdp-linear", "is_estimate": True}
    extra = [
        profile_row("small", "fp32", 1, 0.5, 0.05, 40.0, 25.0, **cpu),
        profile_row("mid", "fp32", 1, 1.5, 0.1, 90.0, 11.0, **cpu),
        profile_row("mid", "int8", 1, 0.015, 0.001, 6.0, 160.0, status="oom", reason="OOM"),
        profile_row("small", "int8", 1, 0.007, 0.001, np.nan, 300.0),
        profile_row(HOSTILE, "fp32", 1, 0.018, 0.002, 5.0, 200.0, flags="ci-clipped"),
    ]
    return decision_summary(extra, top1={HOSTILE: 72.5})


@pytest.fixture(scope="module")
def study():
    summary = study_summary()
    scores = score_summary(summary)
    return page_data(summary, scores), page_table(summary, scores)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b) or (a == b and {type(a), type(b)} <= {int, float})


@pytest.mark.parametrize("from_base64", [False, True], ids=["atob", "Uint8Array.fromBase64"])
def test_every_column_decodes_to_the_page_table(tmp_path, study, from_base64):
    data, table = study
    shim = "Uint8Array.fromBase64 = (t) => new Uint8Array(Buffer.from(t, 'base64'));"
    got = run_js(
        tmp_path,
        ("" if not from_base64 else shim) + "const s = D.loadStudy(I.data);"
        "return Object.fromEntries(I.data.columns.map((c) => [c, s.rows.map((r) => r[c])]));",
        data=data,
    )
    for c in PAGE_COLUMNS:
        want = webapp._json_values(table[c])
        assert all(_same(g, w) for g, w in zip(got[c], want, strict=True)), c


def test_the_rows_plotted_are_those_the_figures_plot(tmp_path, study):
    """Status ok, a finite energy above 0 and a finite top-1 (report/figures.py): a failed
    row that kept its energy is not plotted; a row scored by the score stage is comparable."""
    data, table = study
    got = run_js(
        tmp_path,
        "const s = D.loadStudy(I.data);"
        "return s.rows.map((r) => [r.plottable, r.comparable, r.est, r.energy, r.latencyKind]);",
        data=data,
    )
    e = table["scored_energy_per_image_j"].astype(float)
    plotted = (table["status"] == "ok") & np.isfinite(e) & (e > 0) & table["top1"].notna()
    assert [g[0] for g in got] == plotted.tolist()
    failed = table.index[(table["status"] == "oom").to_numpy()]
    assert len(failed) == 1 and table.loc[failed[0], "energy_per_image_j"] > 0
    assert not got[failed[0]][0]
    assert [g[1] for g in got] == (plotted & table["scored"].fillna(False)).tolist()
    assert [g[2] for g in got] == table["energy_is_estimate"].fillna(False).tolist()
    assert [g[3] for g in got] == pytest.approx(e.tolist(), nan_ok=True)
    no_latency = table.index[(table["method"] == "int8") & (table["status"] == "ok")][0]
    assert got[no_latency][4] == "derived" and {g[4] for g in got} == {"mean", "derived"}


def test_ranges_take_300000_values_in_one_pass(tmp_path):
    """Math.min(...values) fails past about 125,000 values (the page was blank above that)."""
    got = run_js(
        tmp_path,
        "const v = Array.from({ length: 300000 }, (_, i) => 1 + (i % 997) / 10);"
        "let spread = null;"
        "try { Math.min(...v); } catch (e) { spread = e.name; }"
        "return [D.extent(v), D.log10Range(v), D.accRange(v), D.accRange([]), spread];",
    )
    assert got[0] == [1, 100.6]
    assert got[1] == {"lo": 0, "hi": pytest.approx(math.log10(100.6))}
    assert got[2] == {"lo": 1, "hi": 101} and got[3] is None
    assert got[4] == "RangeError"  # what the spread did


def test_fronts_are_the_score_groups_on_front_rows(tmp_path, study):
    data, table = study
    got = run_js(
        tmp_path,
        "const s = D.loadStudy(I.data);"
        "return [...s.fronts.values()].map((f) => f.map((r) => r.id));",
        data=data,
    )
    on = table[table["on_front"].fillna(False).astype(bool)]
    want = [
        g.sort_values(["scored_energy_per_image_j", "top1"]).index.tolist()
        for _, g in on.groupby(["phase", "device_label", "method", "batch_size_requested"])
    ]
    assert sorted(got) == sorted(want) and len(got) >= 4


BEST = """const s = D.loadStudy(I.data);
const filters = (f) => ({ facets: {}, terms: [], accMin: NaN, accMax: NaN, eMin: NaN, eMax: NaN,
  budget: NaN, bestOnly: false, ...f });
const rows = (v) => D.bestTableOrder(v.points).map((r) => [r.model, r.device_label, r.method,
  r.batch_size_requested]);
return I.cases.map(([budget, accMin, bestOnly]) => {
  const v = D.viewOf(s, filters({ budget: budget ?? NaN, accMin: accMin ?? NaN, bestOnly }));
  return [v.best, rows(v), D.modelsWithout(v.base, v.points), v.bestFronts.size];
});"""


def test_best_configurations_within_a_latency_budget(tmp_path, study):
    """Each model (per device and kind of meter) at its least-energy comparable configuration
    within the budget (tests/decision_rows.py knows them by hand); flagged, failed and
    estimated rows never mix in; the rows filtered out never count."""
    data, _ = study
    cases = [[None, None, False], [10, None, False], [100, 75, False], [None, None, True]]
    got = run_js(tmp_path, BEST, data=data, cases=cases)
    assert got[0][0] is False and got[0][2:] == [0, 0]  # every plottable row, no best fronts
    assert len(got[0][1]) == 16
    best, rows, missing, fronts = got[1]
    assert best and missing == 3 and fronts == 1  # big needs 20 ms, the CPU runs 40 and 90
    assert [r[0] for r in rows] == ["small", HOSTILE, "mid"]  # within 10 ms, by energy
    assert rows[0] == ["small", "gpu", "int8", 1] and rows[2] == ["mid", "gpu", "fp16", 1]
    assert got[2][1] == [  # within 100 ms, top-1 75 % at least: the CPU first
        ["mid", "cpu", "fp32", 1],
        ["mid", "gpu", "fp16", 64],
        ["big", "gpu", "fp16", 1],
    ]
    best_only = got[3][1]
    assert ["small", "cpu", "fp32", 1] in best_only  # each device on its own
    assert [r for r in best_only if r[1] == "gpu" and r[0] != HOSTILE] == [
        ["small", "gpu", "fp16", 64],
        ["mid", "gpu", "fp16", 64],
        ["big", "gpu", "fp16", 64],
    ]


def test_filters_facets_search_and_ranges(tmp_path, study):
    data, table = study
    body = """const s = D.loadStudy(I.data);
    const f = (x) => ({ facets: {}, terms: [], accMin: NaN, accMax: NaN, eMin: NaN, eMax: NaN,
      budget: NaN, bestOnly: false, ...x });
    const ids = (x) => s.rows.filter(D.rowFilter(s, f(x))).map((r) => r.id);
    return [
      ids({ facets: { device_label: new Set(["cpu"]) } }),
      ids({ facets: { batch_size_requested: new Set(["64"]), device_label: undefined } }),
      ids({ terms: ["mi", "d"] }),
      ids({ accMin: 76, eMax: 0.02 }),
      ids({ facets: { method: new Set() } }),
    ];"""
    got = run_js(tmp_path, body, data=data)
    t = table.reset_index(drop=True)
    assert got[0] == t.index[t["device_label"] == "cpu"].tolist()
    assert got[1] == t.index[t["batch_size_requested"] == 64].tolist()
    assert got[2] == t.index[t["model"] == "mid"].tolist()
    e = t["scored_energy_per_image_j"]
    assert got[3] == t.index[(t["top1"] >= 76) & (e <= 0.02)].tolist()
    assert got[4] == []


def test_the_table_order_keeps_ties_by_row_and_empty_values_last(tmp_path, study):
    data, table = study
    body = """const s = D.loadStudy(I.data);
    return ["efficiency_index", "model", "grade"].flatMap((k) => [1, -1].map((dir) =>
      D.orderRows(s.rows, k, dir).map((r) => r.id)));"""
    got = run_js(tmp_path, body, data=data)
    t = table.reset_index(drop=True).assign(_id=lambda d: d.index)
    for k, (key, asc) in enumerate([(c, a) for c in ("efficiency_index",) for a in (True, False)]):
        want = t.sort_values([key, "_id"], ascending=[asc, True], na_position="last")["_id"]
        assert got[k] == want.tolist()
    models = [table["model"].iloc[i] for i in got[2]]
    assert models == sorted(models)
    assert [table["model"].iloc[i] for i in got[3]] == sorted(models, reverse=True)
    grades = [g if isinstance(g, str) else None for g in table["grade"].iloc[got[4]]]
    assert grades == sorted(grades, key=lambda g: (g is None, g or ""))  # A first, none last


def test_flags_units_and_numbers(tmp_path):
    body = """const r = { flags: "other-load; ci-clipped;;high-spread;other-load",
      score_note: "flagged high-spread (energy CV 104% > 25%)" };
    const F = D.flagInfo(I.flags);
    const units = { j: {}, wh: { axis: "Wh", factor: 1000 / 3600 },
      co2e: { axis: "gCO2e", factor: 1000 * 1.5e-4 } };
    const none = { j: {}, wh: units.wh, co2e: { axis: "gCO2e", factor: NaN } };
    return [D.flagList(r, F), D.ciClipped(r, F), D.offFrontFlag(r), D.flagsInOrder(r, F),
      [3.6, 0.00123, 4.2e-7, 0, NaN].map(D.fmtJoules),
      D.energyFormat(units, "wh")(3.6), D.energyFormat(units, "co2e")(2),
      D.energyFormat(none, "co2e")(2), D.fmtCount(25557032), D.fmtPct(76.1234),
      D.fmtCv({ energy_per_image_cv: 1.04 }), D.ciHalfPct({ energy: 2,
        energy_per_image_ci95_high_j: 2.1 })];"""
    got = run_js(tmp_path, body, flags=flags_meta())
    assert got[0] == ["other-load", "ci-clipped", "high-spread"] and got[1] is True
    assert got[2] == "high-spread"
    assert got[3] == ["high-spread", "other-load", "ci-clipped"]  # off the front first
    assert got[4] == ["3.6 J", "1.23 mJ", "420 nJ", "0 J", "–"]
    assert got[5:8] == ["1 Wh", "0.3 gCO2e", "–"]
    assert got[8:] == ["25.6 M", "76.12%", "104%", " ±5%"]


def test_flags_are_read_from_the_pages_metadata(tmp_path, study):
    """The page knows flags only from meta.flags (joulebench.flags.page_meta): its order
    (off the front, then invalidating or unknown, then informative), meanings and separator
    follow that, not a list of its own."""
    data, _ = study
    assert data["meta"]["flags"] == flags_meta()
    body = """const r = { flags: "ci-clipped|warmup-not-steady|no-such|mig" };
    const order = (meta) => D.flagsInOrder(r, D.flagInfo(meta));
    const s = D.loadStudy(I.data);
    return [order(I.piped), order(I.changed), D.flagMeaning("mig", s.flags),
      D.flagMeaning("no-such", s.flags), D.ciClipped(r, D.flagInfo(I.piped)),
      D.flagList({ flags: "ci-clipped;mig" }, s.flags)];"""
    piped = {**flags_meta(), "separator": "|"}
    changed = {  # were ci-clipped invalidating and mig not, the order would follow
        **piped,
        "known": [{**f, "invalidates": f["name"] == "ci-clipped"} for f in flags_meta()["known"]],
    }
    got = run_js(tmp_path, body, data=data, piped=piped, changed=changed)
    assert got[0] == ["no-such", "mig", "ci-clipped", "warmup-not-steady"]
    assert got[1] == ["ci-clipped", "no-such", "warmup-not-steady", "mig"]
    assert got[2] == FLAGS["mig"].meaning and got[3] == ""
    assert got[4] is True and got[5] == ["ci-clipped", "mig"]


def test_csv_holds_every_column_and_disarms_formulas(tmp_path, study):
    data, table = study
    body = """const s = D.loadStudy(I.data);
    return D.csvParts(s, s.rows).join("");"""
    text = run_js(tmp_path, body, data=data)
    got = pd.read_csv(pd.io.common.StringIO(text), keep_default_na=False, na_values=[""])
    assert list(got.columns) == list(PAGE_COLUMNS) and len(got) == len(table)
    np.testing.assert_array_equal(got["energy_per_image_j"], table["energy_per_image_j"])
    assert got["model"].tolist() == table["model"].tolist()
    cells = run_js(
        tmp_path, "return ['=SUM(A1)', '-1', 'a,b', ' x', 1.5, true, null].map(D.csvCell);"
    )
    assert cells == ["'=SUM(A1)", "'-1", '"a,b"', '" x"', "1.5", "true", ""]


PRINTABLE_CASES = [
    "plain name, ünïcödé, 漢字, emoji \U0001f600, combining e\u0301",
    "\x00\x01\x1b[2J\x07\x7f\x80\x9f",  # C0, DEL, C1
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c",  # bidi
    "\xa0\xad\u200b\u2028\u2029\ufeff\u3000",  # no-break space, soft hyphen, ZWSP, LS, PS, BOM
    "tab\tand\nnewline",
]


def test_printable_escapes_what_python_calls_unprintable(tmp_path):
    """As joulebench.safe_text.printable (the `label` command's cards): each character
    str.isprintable rejects becomes its unicode_escape."""
    got = run_js(tmp_path, "return I.cases.map(D.printable);", cases=PRINTABLE_CASES)

    def python(text):
        return "".join(
            ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text
        )

    assert got == [python(t) for t in PRINTABLE_CASES]


def test_the_energy_label_texts_are_printable(tmp_path, study):
    data, table = study
    body = """const s = D.loadStudy(I.data);
    const r = s.rows.find((x) => x.model === I.name);
    return D.labelItems(s, r).filter((it) => it.kind === "text").map((it) => it.text);"""
    texts = run_js(tmp_path, body, data=data, name=HOSTILE)
    assert "ctl\\x00\\x1b]0\\x07\\u202e<img src=x>\\u2066\\u2…" in texts  # cut at 44
    assert all(t.isprintable() for t in texts)
    row = table[table["model"] == HOSTILE].iloc[0]
    assert f"Top-1 {row['top1']:.1f} % (reference)" in texts


def test_the_view_round_trips_through_the_url(tmp_path):
    body = """const inputs = { search: "res net", "acc-min": "75", "latency-budget": "100" };
    const facets = { device_label: new Set(["gpu", "a&b=c#d ü"]), method: new Set(),
      family: undefined };
    const view = { inputs, bestOnly: true, colorBy: "family", facets };
    const hash = U.encodeView(view);
    const back = U.decodeView(hash, ["device_label", "method", "family", "phase"]);
    const sets = Object.fromEntries(Object.entries(back.facets).map(([k, v]) => [k, v && [...v]]));
    const empty = U.encodeView({ inputs: {}, bestOnly: false, colorBy: "grade", facets: {} });
    return [hash, back.inputs, back.bestOnly, back.colorBy, sets, empty];"""
    hash_, inputs, best, color, facets, empty = run_js(tmp_path, body)
    assert "q=res+net" in hash_ and "top1_min=75" in hash_ and "latency_max_ms=100" in hash_
    assert inputs["search"] == "res net" and inputs["acc-max"] == ""
    assert best is True and color == "family"
    assert facets == {
        "device_label": ["gpu", "a&b=c#d ü"],
        "method": [],
        "family": None,
        "phase": None,
    }
    assert empty == ""


# --- issue 34: the fronts told apart, the banner and the grades from the rows -----------------

VIEW = """const s = D.loadStudy(I.data);
const view = (f) => D.viewOf(s, { facets: {}, terms: [], accMin: NaN, accMax: NaN, eMin: NaN,
  eMax: NaN, budget: NaN, bestOnly: false, ...f });
const text = (parts) => parts.map((p) => (typeof p === "string" ? p : String(p.label))).join("");
const fronts = (v) =>
  D.frontsOnShow(s, v).map((f) => [text(f.label), f.color, f.est, f.rows.length]);
"""


def _as_run_page():
    from helpers.figure_study import default_study_as_run

    summary, scores, _, _ = default_study_as_run()
    return page_data(summary, scores), page_table(summary, scores)


def test_each_front_on_show_has_its_own_colour_and_name(tmp_path):
    """The default study's six groups (3 methods x 2 batch sizes, estimated): six fronts, in
    the order of their names, each in its own colour of the palette, dashed (estimated)."""
    data, table = _as_run_page()
    got = run_js(
        tmp_path, VIEW + "return [fronts(view({})), fronts(view({ bestOnly: true }))];", data=data
    )
    every, best = got
    assert [f[0] for f in every] == [
        f"cpu · {m} · batch {b} (estimated)"
        for m in ("bf16", "fp32", "fp32-channels-last")
        for b in (1, 8)
    ]
    assert [f[1] for f in every] == data["meta"]["palettes"]["fronts"][:6]
    assert all(f[2] for f in every)
    on = table[table["on_front"].fillna(False).astype(bool)]
    sizes = on.groupby(["method", "batch_size_requested"]).size().tolist()
    assert [f[3] for f in every] == sizes  # each front's own rows
    assert [f[0] for f in best] == ["cpu · best configurations (estimated)"]


def test_fronts_past_the_palette_are_grey(tmp_path):
    data, _ = _as_run_page()
    data["meta"]["palettes"]["fronts"] = data["meta"]["palettes"]["fronts"][:4]
    got = run_js(tmp_path, VIEW + "return fronts(view({}));", data=data)
    other = data["meta"]["palettes"]["other"]
    assert [f[1] for f in got] == [*data["meta"]["palettes"]["fronts"], other, other]


def test_the_banner_counts_the_estimates_among_the_energies(tmp_path, study):
    """'All 30 energies' where every energy is an estimate, 'N of M' where some are; no
    banner where none is. Rows without an energy do not count."""
    as_run, _ = _as_run_page()
    data, table = study
    got = run_js(
        tmp_path,
        "const say = (raw) => { const s = D.loadStudy(raw); const n = D.estimateShare(s.rows);"
        " return [n, D.estimateWords(n)]; };"
        "return [say(I.as_run), say(I.mixed), D.estimateWords({ est: 0, of: 4 }),"
        " D.estimateWords({ est: 1, of: 1 }), D.estimateWords({ est: 1, of: 4 })];",
        as_run=as_run,
        mixed=data,
    )
    assert got[0] == [
        {"est": 30, "of": 30},
        "All 30 energies here are estimates from a power model, not readings of an energy counter.",
    ]
    e = pd.to_numeric(table["scored_energy_per_image_j"], errors="coerce")
    has = (e > 0).fillna(False)
    est = int((has & table["energy_is_estimate"].fillna(False).astype(bool)).sum())
    assert got[1][0] == {"est": est, "of": int(has.sum())} and 0 < est < has.sum()
    assert got[1][1].startswith(f"{est} of {int(has.sum())} energies here are estimates")
    assert got[2] == ""
    assert got[3].startswith("The one energy here is an estimate")
    assert got[4].startswith("1 of 4 energies here is an estimate")


def test_rows_left_out_of_grades_are_counted_by_the_score_notes_reason(tmp_path):
    """Every row without a grade, counted by why the score stage left it out (its note):
    status, the flag that kept it off the front, no energy, no top-1."""
    from helpers.figure_study import AS_RUN_FLAGS, default_study_as_run

    summary, _, _, _ = default_study_as_run()
    summary.loc[summary.index[0], "status"] = "skipped"
    summary.loc[summary.index[1], "top1"] = np.nan
    spread = summary.index[-1]
    summary.loc[spread, "energy_per_image_cv"] = 0.9
    scores = score_summary(summary, reference_model="resnet18.a1_in1k")
    data = page_data(summary, scores)
    got = run_js(tmp_path, "return D.gradedCount(D.loadStudy(I.data).rows);", data=data)
    table = page_table(summary, scores)
    assert got["of"] == len(table) and got["graded"] == int(table["grade"].notna().sum())
    reasons = dict(got["reasons"])
    assert reasons == {
        "flagged other-load": len(AS_RUN_FLAGS),
        "skipped": 1,
        "without top-1": 1,
        "flagged high-spread": 1,
    }
    assert sum(reasons.values()) == got["of"] - got["graded"]
