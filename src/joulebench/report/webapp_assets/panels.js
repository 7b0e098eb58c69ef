/* joulebench web page, panels: the controls at the side (facets, search, ranges, latency
   budget, colouring, unit), which are where the view's settings live (readSettings reads
   them, applyView sets them from the URL), the comparison, the energy label download and
   the overview sentence. */
const jbPanels = (function (D, url, dom) {
  "use strict";
  const { $, el, str, label, badge, words, U } = dom;
  const TYPE_DELAY_MS = 150; // debounce for text and number inputs
  const SLIDER_STEPS = 1000; // the sliders' positions: 0..SLIDER_STEPS
  const FACETS = [
    ["phase", "Phase"],
    ["device_label", "Device"],
    ["method", "Method"],
    ["batch_size_requested", "Batch size"],
    ["family", "Family"],
  ];
  const TYPED = url.INPUTS.map(([, id]) => id);

  // ---------------------------------------------------------------- controls
  // One tick box per distinct value of each facet column, with its count; a phase facet
  // only when there are two phases. `changed()` is called on every change.
  function buildFacets(study, changed) {
    const box = $("facets");
    for (const [col, title] of FACETS) {
      const counts = new Map();
      for (const r of study.rows) counts.set(D.keyOf(r[col]), (counts.get(D.keyOf(r[col])) || 0) + 1);
      if (col === "phase" && counts.size < 2) continue;
      const byNumber = col === "batch_size_requested";
      const keys = [...counts.keys()].sort((a, b) => (byNumber && Number(a) - Number(b)) || D.COLLATOR.compare(a, b));
      const fs = el("fieldset", "field facet");
      fs.dataset.facet = col;
      const head = el("div", "facet-head");
      const all = el("button", null, "all");
      const none = el("button", null, "none");
      all.type = none.type = "button";
      const btns = el("span");
      btns.append(all, " ", none);
      head.append(el("span", "facet-title", title), btns);
      const list = el("div", "facet-list");
      for (const k of keys) {
        const lab = el("label");
        const input = el("input");
        input.type = "checkbox";
        input.checked = true;
        input.setAttribute("data-facet", col);
        input.setAttribute("value", k);
        lab.append(input, el("span", "name u", k), el("span", "n", D.fmtInt(counts.get(k))));
        lab.setAttribute("title", k);
        list.append(lab);
      }
      fs.append(head, list);
      list.addEventListener("change", changed);
      const setAll = (v) => () => {
        list.querySelectorAll("input").forEach((b) => (b.checked = v));
        changed();
      };
      all.addEventListener("click", setAll(true));
      none.addEventListener("click", setAll(false));
      box.append(fs);
    }
  }

  const facetBoxes = (col) => [...document.querySelectorAll(`#facets input[data-facet="${col}"]`)];

  function readNumber(id) {
    const v = $(id).value.trim();
    return v === "" ? NaN : Number(v);
  }

  // The view's settings, read from the controls: { filters (data.viewOf's), colorBy, unit }.
  function readSettings() {
    const facets = {};
    for (const [col] of FACETS) {
      const boxes = facetBoxes(col);
      const on = boxes.filter((b) => b.checked).map((b) => b.value);
      facets[col] = on.length === boxes.length ? undefined : new Set(on);
    }
    const budget = readNumber("latency-budget");
    const filters = {
      facets,
      terms: $("search").value.toLowerCase().split(/\s+/).filter(Boolean),
      accMin: readNumber("acc-min"),
      accMax: readNumber("acc-max"),
      eMin: readNumber("energy-min"),
      eMax: readNumber("energy-max"),
      budget: budget > 0 ? budget : NaN,
      bestOnly: $("best-only").checked,
      predicted: $("show-predicted").checked,
    };
    const colorBy = document.querySelector("input[name=colorby]:checked").value;
    return { filters, colorBy, unit: $("unit").value };
  }

  // The settings as url.encodeView takes them.
  function viewState(settings) {
    const inputs = Object.fromEntries(TYPED.map((id) => [id, $(id).value]));
    const { facets, bestOnly, predicted } = settings.filters;
    return { inputs, bestOnly, colorBy: settings.colorBy, facets, showPredicted: predicted };
  }

  // Set the controls to a view (url.decodeView).
  function applyView(view) {
    for (const id of TYPED) $(id).value = view.inputs[id];
    $("best-only").checked = view.bestOnly;
    $("show-predicted").checked = view.showPredicted !== false;
    document.querySelectorAll("input[name=colorby]").forEach((r) => (r.checked = r.value === view.colorBy));
    for (const [col] of FACETS) {
      const allowed = view.facets[col];
      facetBoxes(col).forEach((b) => (b.checked = !allowed || allowed.has(b.value)));
    }
  }

  // Sliders: the latency budget on a log scale over the comparable rows' latencies, the
  // accuracy floor over the points' top-1; each writes its number input, which rules.
  const toSlider = (v, lo, hi) => Math.round(Math.min(1, Math.max(0, (v - lo) / (hi - lo))) * SLIDER_STEPS);
  const fromSlider = (k, lo, hi) => lo + (k / SLIDER_STEPS) * (hi - lo);

  function syncSliders(study, filters) {
    const lat = $("latency-budget-range"), acc = $("acc-min-range");
    const { latRange, accRange } = study;
    lat.disabled = !latRange;
    acc.disabled = !accRange;
    if (latRange) {
      const b = filters.budget;
      lat.value = String(isNaN(b) ? SLIDER_STEPS : toSlider(Math.log10(b), latRange.lo, latRange.hi));
    }
    if (accRange) {
      const a = filters.accMin;
      acc.value = String(isNaN(a) ? 0 : toSlider(a, accRange.lo, accRange.hi));
    }
  }

  // on: { filters() (a filter changed), look() (colouring or unit changed), csv(), compareCsv(),
  // compareClear() }.
  function wireControls(study, on) {
    buildFacets(study, on.filters);
    const typed = dom.debounce(on.filters, TYPE_DELAY_MS);
    for (const id of TYPED) {
      $(id).addEventListener("input", typed);
      $(id).addEventListener("change", on.filters);
    }
    $("latency-budget-range").addEventListener("input", (e) => {
      const { lo, hi } = study.latRange;
      $("latency-budget").value = D.sig(Math.pow(10, fromSlider(Number(e.target.value), lo, hi)), 3);
      on.filters();
    });
    $("acc-min-range").addEventListener("input", (e) => {
      const k = Number(e.target.value), { lo, hi } = study.accRange;
      $("acc-min").value = k === 0 ? "" : fromSlider(k, lo, hi).toFixed(1);
      on.filters();
    });
    $("best-only").addEventListener("change", on.filters);
    // the predictions' switch: on where there are any, absent where there are none
    $("predicted-field").hidden = !study.predicted;
    $("predicted-count").textContent = D.fmtInt(study.predicted);
    $("show-predicted").addEventListener("change", on.filters);
    document.querySelectorAll("input[name=colorby]").forEach((r) => r.addEventListener("change", on.look));
    if (!study.meta.co2e_g_per_j) {
      const co2e = $("unit").querySelector("option[value=co2e]");
      co2e.disabled = true;
      co2e.textContent += ": set carbon.grid_gco2e_per_kwh";
    }
    $("unit").addEventListener("change", on.look);
    $("reset").addEventListener("click", () => {
      for (const id of TYPED) $(id).value = "";
      $("best-only").checked = false;
      $("show-predicted").checked = true;
      document.querySelectorAll("#facets input").forEach((b) => (b.checked = true));
      on.filters();
    });
    $("download-csv").addEventListener("click", on.csv);
    $("compare-download").addEventListener("click", on.compareCsv);
    $("compare-clear").addEventListener("click", on.compareClear);
  }

  // ---------------------------------------------------------------- compare
  const BAR_METRICS = [
    ["Energy per image (lower is better)", (r) => r.energy, "energy"],
    ["Top-1 accuracy (%)", (r) => r.acc, D.fmtPct],
    ["Throughput (img/s)", (r) => D.num(r.throughput_img_s), (v) => D.fmtNum(v)],
    ["Parameters", (r) => D.num(r.params), D.fmtCount],
    ["GFLOPs per image", (r) => D.num(r.flops_per_image), D.fmtGflops],
  ];

  // The compared rows side by side; remove(id) when a chip's × is clicked.
  function renderCompare(study, rows, fmtEnergy, remove) {
    const box = $("compare");
    const most = study.palette.compare.length;
    box.setAttribute("data-count", String(rows.length));
    box.replaceChildren();
    $("compare-count").textContent = rows.length ? `(${rows.length} of at most ${most})` : "";
    $("compare-download").disabled = $("compare-clear").disabled = !rows.length;
    if (!rows.length) {
      box.append(el("p", "empty", `Click points in the plot or tick rows in the table to compare up to ${most} models side by side.`));
      return;
    }
    const chips = el("div", "chips");
    rows.forEach((r, k) => {
      const chip = el("span", "chip");
      const sw = el("i");
      sw.style.background = study.palette.compare[k];
      const x = el("button", null, "×");
      x.type = "button";
      x.setAttribute("aria-label", "remove " + (r.model || ""));
      x.addEventListener("click", () => remove(r.id));
      chip.append(sw, label("span", "chip-name", r.model), x);
      chips.append(chip);
    });
    const grid = el("div", "compare-grid");
    grid.append(compareTable(study, rows, fmtEnergy), compareBars(study, rows, fmtEnergy));
    box.append(chips, grid);
  }

  function compareTable(study, rows, fmtEnergy) {
    const t = el("table", "compare-table");
    const head = t.createTHead().insertRow();
    head.append(el("th", null, ""));
    rows.forEach((r, k) => {
      const th = el("th");
      const sw = el("span", null, "■ ");
      sw.style.color = study.palette.compare[k];
      th.append(sw, label("span", "model-name", r.model));
      head.append(th);
    });
    const body = t.createTBody();
    const line = (name, cell) => {
      const tr = body.insertRow();
      tr.append(el("td", null, name));
      for (const r of rows) {
        const td = el("td");
        const v = cell(r);
        if (v instanceof Node) td.append(v);
        else td.textContent = v;
        tr.append(td);
      }
    };
    line("Grade", (r) => (r.pred ? dom.gradeRangeChip(r.grade_range) : dom.gradeChip(r.grade, study.palette.grade)));
    line("Efficiency index", (r) => D.fmtNum(r.efficiency_index));
    line(`Energy / image (${D.energyWord(study.meta)})`, (r) => {
      const s = el("span", null, fmtEnergy(r.energy) + " ");
      if (r.pred) s.append(badge("pred", "predicted"));
      else if (r.est) s.append(badge("est", "estimated"));
      return s;
    });
    const ci = rows.some((r) => r.pred) ? "95% CI, or the prediction's interval" : "95% CI";
    line(ci, (r) => (r.pred ? D.predictedWords(r, fmtEnergy) : D.fmtCi(r, fmtEnergy)));
    line("CV", D.fmtCv);
    line("Top-1", (r) => D.fmtPct(r.acc));
    line("Top-5", (r) => D.fmtPct(D.num(r.top5)));
    line("Accuracy source", (r) => str(r.accuracy_source));
    line("Throughput (img/s)", (r) => D.fmtNum(r.throughput_img_s));
    line("Parameters", (r) => D.fmtCount(r.params));
    line("GFLOPs / image", (r) => D.fmtGflops(r.flops_per_image));
    line("Energy index", (r) => D.fmtNum(r.energy_index));
    line("Run", dom.runText);
    line("Meter", (r) => str(r.meter));
    line("Device", (r) => str(r.device_name));
    line("Status", (r) => str(r.status));
    return t;
  }

  function compareBars(study, rows, fmtEnergy) {
    const wrap = el("div", "bars");
    for (const [title, get, format] of BAR_METRICS) {
      const fmt = format === "energy" ? fmtEnergy : format;
      const block = el("div", "bar-block");
      block.append(el("h3", null, title));
      const values = rows.map(get);
      const max = Math.max(0, D.extent(values.filter((v) => !isNaN(v)))[1]);
      rows.forEach((r, k) => {
        const v = values[k];
        const row = el("div", "bar-row");
        row.setAttribute("title", r.model || "");
        const track = el("div", "bar-track");
        const bar = el("div", "bar" + ((r.est || r.pred) && format === "energy" ? " est" : ""));
        bar.style.width = (isNaN(v) || max <= 0 ? 0 : (100 * v) / max).toFixed(1) + "%";
        bar.style.backgroundColor = study.palette.compare[k];
        track.append(bar);
        row.append(track, el("span", "v", fmt(v)));
        block.append(row);
      });
      wrap.append(block);
    }
    return wrap;
  }

  // ---------------------------------------------------------------- energy label
  // The card of joulebench.report.label (data.labelItems) built as SVG elements whose
  // strings are set with textContent, so a name is always text; serialised by the browser
  // (which escapes it) and downloaded. Works offline.
  function labelSvg(study, r) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    const attrs = (node, a) => Object.entries(a).forEach(([k, v]) => node.setAttribute(k, String(v)));
    attrs(svg, { width: 380, height: 236, viewBox: "0 0 380 236", "font-family": "DejaVu Sans, Arial, sans-serif" });
    for (const it of D.labelItems(study, r)) {
      if (it.kind === "rect") {
        const n = document.createElementNS(NS, "rect");
        attrs(n, { x: it.x, y: it.y, width: it.w, height: it.h, rx: 3, fill: it.fill, stroke: it.stroke });
        svg.append(n);
      } else {
        const n = document.createElementNS(NS, "text");
        attrs(n, { x: it.x, y: it.y, "font-size": it.size, "font-weight": it.weight, fill: it.color });
        n.textContent = it.text;
        svg.append(n);
      }
    }
    return new XMLSerializer().serializeToString(svg);
  }

  function downloadLabel(study, r) {
    const name = String(r.model || "model").replace(/[^A-Za-z0-9_.-]+/g, "_");
    dom.download(`joulebench-label-${name}.svg`, [labelSvg(study, r)], "image/svg+xml");
  }

  // ---------------------------------------------------------------- page text
  function describe(study) {
    const { meta, rows, cols } = study;
    const distinct = (col) => {
      const all = cols[col].values || rows.map((r) => r[col]); // a dictionary: its values
      return new Set(all.filter((v) => v !== null && v !== undefined));
    };
    const devices = [...distinct("device_label")];
    const methods = [...distinct("method")];
    const LISTED = 12; // labels named in the sentence; the facets list every one
    const list = (values) => [
      ...values.slice(0, LISTED).flatMap((v, i) => (i ? [", ", U(v)] : [U(v)])),
      values.length > LISTED ? ` and ${D.fmtInt(values.length - LISTED)} more` : "",
    ];
    const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
    $("overview").replaceChildren(
      words(
        `${D.fmtInt(rows.length)} rows: ${D.fmtInt(distinct("model").size)} models, `,
        `${plural(devices.length, "device")} (`,
        ...list(devices),
        `), ${plural(methods.length, "method")} (`,
        ...list(methods),
        `). Energy per image is ${meta.energy_kind === "dynamic" ? "the energy above idle" : "the total energy, idle included"}.`
      )
    );
    const share = D.estimateShare(rows);
    $("estimate-banner").hidden = !share.est;
    $("estimate-share").textContent = D.estimateWords(share);
    $("graded").replaceChildren(gradedWords(D.gradedCount(rows)));
    $("predicted-banner").hidden = !study.predicted;
    $("predicted-share").textContent = predictedSentence(study);
    describeMeasurement(meta.how || []);
    const t = meta.grade_thresholds;
    const letters = Object.keys(t);
    $("grade-bands").textContent =
      letters.map((g) => `${g} ≥ ${t[g]}`).join(", ") + `, ${meta.grades[meta.grades.length - 1]} below ${t[letters[letters.length - 1]]}`;
    $("reference-model").textContent = meta.reference_model ? str(meta.reference_model) : "none set";
    $("reference-model").classList.add("u");
  }

  // "Graded: 24 of 30 rows. Not graded: 4 flagged other-load, 2 skipped (each row's note says
  // why)." A reason holds a flag's name from the data: isolated, as every label.
  function gradedWords({ graded, of, reasons }) {
    const head = `Graded: ${D.fmtInt(graded)} of ${D.fmtInt(of)} rows.`;
    if (!reasons.length) return words(head);
    const why = reasons.flatMap(([reason, n], k) => [k ? ", " : "", `${D.fmtInt(n)} `, U(reason)]);
    return words(head, " Not graded: ", ...why, " (each row's note says why; flagged rows stay on the plot and in the table).");
  }

  // "12 rows are predictions, not measurements: ...", from the rows.
  function predictedSentence(study) {
    const n = study.predicted;
    if (!n) return "";
    const levels = new Set(study.rows.filter((r) => r.pred).map((r) => D.num(r.pi_level)));
    const level = levels.size === 1 ? [...levels][0] : NaN;
    const pct = isNaN(level) ? "" : `${D.sig(100 * level, 3)} % `;
    const what = n === 1 ? "One row is a prediction" : `${D.fmtInt(n)} rows are predictions`;
    return `${what} for models not measured, from the catalog and the models measured in the same group, each with its ${pct}interval.`;
  }

  // "How it was measured": paragraphs the page was built with (report/how_measured.py, from
  // the protocol preset and the rows), each a title and its text, set as text.
  function describeMeasurement(paragraphs) {
    const box = $("how-measured");
    box.replaceChildren(
      ...paragraphs.map(({ title, text }) => {
        const p = el("p");
        p.append(el("strong", null, title + "."), " " + text);
        return p;
      })
    );
  }

  return { FACETS, readSettings, viewState, applyView, syncSliders, wireControls, renderCompare, downloadLabel, describe };
})(jbData, jbUrl, jbDom);
