/* joulebench web page: reads the JSON embedded in the page, draws accuracy against energy on
   a canvas, and keeps filters, hover card, comparison and table in step. No library and no
   network. Every string from the data reaches the page through textContent or setAttribute,
   never innerHTML, so a model name is always text. Each label also sits in its own element
   with unicode-bidi: isolate (class "u"; words() builds sentences that hold labels), so a
   right-to-left override in a name cannot reverse the text around it. */
"use strict";
(function () {
  const ROW_H = 30; // px, fixed: the table renders only the rows scrolled into view
  const OVERSCAN = 12; // rows rendered above and below the view
  const TYPE_DELAY_MS = 150; // debounce for text and number inputs
  const HIT_RADIUS_PX = 9;
  const POINT_RADIUS_PX = 3.6;
  const FACETS = [
    ["phase", "Phase"],
    ["device_label", "Device"],
    ["method", "Method"],
    ["batch_size_requested", "Batch size"],
    ["family", "Family"],
  ];
  const NONE_KEY = "(none)";
  const COLLATOR = new Intl.Collator(); // sorts text as localeCompare does, faster

  const $ = (id) => document.getElementById(id);
  // Set by load(), inside the start-up try: a failure there is shown on the page.
  let META, COLUMNS, PALETTE, GRADE_COLORS, MAX_COMPARE, UNITS;
  let ROWS = [], PLOTTABLE = 0, FRONTS = new Map(), FAMILY_COLOR = new Map();
  let COLS = {}; // column -> decoded column (decodeColumn)
  let LAT_RANGE = null, ACC_RANGE = null;
  const SLIDER_STEPS = 1000; // the sliders' positions: 0..SLIDER_STEPS

  const state = {
    facets: {}, // column -> Set of allowed keys; absent: no restriction
    terms: [],
    accMin: NaN, accMax: NaN, eMin: NaN, eMax: NaN,
    colorBy: "grade",
    unit: "j", // the unit switch: j (J/image), wh (Wh/1k images), co2e (gCO2e/1k images)
    sortKey: "efficiency_index",
    sortDir: -1,
    compare: [], // row ids, in the order picked
    hoverId: null,
    budget: NaN, // latency budget, ms per batch (NaN: none)
    bestOnly: false, // each model at its least-energy configuration, even without a budget
  };
  let bestFronts = new Map(); // best mode: (phase, device, estimated) -> front rows by energy
  let filtered = [];
  let sorted = [];
  let points = [];
  let pointAt = new Int32Array(0); // row id -> index in points, -1 when not on show
  let px = new Float32Array(0);
  let py = new Float32Array(0);
  let plotBox = { w: 0, h: 0 };
  let plotStale = true; // what is on show changed: the plot's base layer is drawn again
  const layer = { canvas: null, frame: null }; // the base layer and the frame it was drawn in
  let started = false; // set once the start-up has succeeded

  function load() {
    const tag = $("jb-data");
    const raw = JSON.parse(tag.textContent);
    tag.textContent = ""; // the rows now live in typed arrays: let the text go
    META = raw.meta;
    COLUMNS = raw.columns;
    // Colours come with the data (joulebench/palettes.py, shared with the figures): grades
    // are viridis, light A to dark G; series Okabe-Ito; one colour per compared model.
    PALETTE = META.palettes;
    GRADE_COLORS = PALETTE.grade;
    MAX_COMPARE = PALETTE.compare.length;
    UNITS = {
      j: { axis: "J", per: "per image" },
      wh: { axis: "Wh", per: "per 1,000 images", factor: 1000 / 3600 },
      co2e: { axis: "gCO2e", per: "per 1,000 images, estimate", factor: 1000 * (META.co2e_g_per_j || NaN) },
    };
    for (const c of COLUMNS) COLS[c] = decodeColumn(raw.data[c], META.rows, c);
    ROWS = makeRows(META.rows);
    pointAt = new Int32Array(ROWS.length).fill(-1);
    PLOTTABLE = ROWS.filter((r) => r.plottable).length;
    FRONTS = makeFronts(ROWS);
    FAMILY_COLOR = familyColors(ROWS);
    LAT_RANGE = log10Range(ROWS.filter((r) => r.comparable).map((r) => r.latency));
    ACC_RANGE = accRange(ROWS.filter((r) => r.plottable).map((r) => r.acc));
  }

  // ---------------------------------------------------------------- data
  function num(v) {
    return typeof v === "number" && isFinite(v) ? v : NaN;
  }

  // The embedded columns (webapp.encode_column): base64 of little-endian typed arrays, decoded
  // once; a cell is read when asked for, so 300,000 rows cost no JavaScript value per cell.
  function base64Bytes(text) {
    if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
    const bin = atob(text);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  const CODE_ARRAYS = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array };
  const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

  function decodeColumn(enc, n, name) {
    const bad = (why) => new Error(`column ${name}: ${why}`);
    if (!enc || typeof enc !== "object") throw bad("missing");
    if ((enc.f64 !== undefined || enc.codes !== undefined) && !LITTLE_ENDIAN) throw bad("this browser is big-endian");
    if (enc.f64 !== undefined) {
      const bytes = base64Bytes(enc.f64);
      if (bytes.length !== 8 * n) throw bad(`${bytes.length / 8} numbers for ${n} rows`);
      const a = new Float64Array(bytes.buffer, bytes.byteOffset, n);
      return { get: (i) => (a[i] === a[i] ? a[i] : null) }; // NaN: missing
    }
    const values = enc.values;
    if (!Array.isArray(values)) throw bad("no values");
    if (enc.codes === undefined) {
      if (n && !values.length) throw bad(`no value for ${n} rows`);
      const v = values.length ? values[0] : null;
      return { values, codes: null, get: () => v };
    }
    const Codes = CODE_ARRAYS[enc.width];
    if (!Codes) throw bad(`code width ${enc.width}`);
    const bytes = base64Bytes(enc.codes);
    if (bytes.length !== enc.width * n) throw bad(`${bytes.length / enc.width} codes for ${n} rows`);
    const codes = new Codes(bytes.buffer, bytes.byteOffset, n);
    for (let i = 0; i < n; i++) if (codes[i] >= values.length) throw bad(`code ${codes[i]} out of range`);
    return { values, codes, get: (i) => values[codes[i]] };
  }

  // A row: its id and what the page works out from it; every column is a getter on the
  // prototype that reads the decoded column, so r.model and r[c] work as on a plain object.
  function Row(id) {
    this.id = id;
    this.est = false;
    this.dyn = false;
    this.energy = NaN;
    this.acc = NaN;
    this.plottable = false;
    this.comparable = false;
    this.latency = NaN;
    this.latencyKind = "";
    this.bestKey = 0; // keys of the groups it belongs to (keysOf): numbers, or text
    this.bestGroup = 0;
    this.group = 0;
    this.searchText = null;
  }

  function defineColumns() {
    for (const c of COLUMNS) {
      if (c in Row.prototype || Object.keys(new Row(0)).includes(c)) throw new Error(`column ${c} clashes with the page's own`);
      const get = COLS[c].get;
      Object.defineProperty(Row.prototype, c, { get() { return get(this.id); }, configurable: true });
    }
  }

  Object.defineProperty(Row.prototype, "text", {
    get() {
      if (this.searchText === null) this.searchText = [this.model, this.family, this.architecture].join(" ").toLowerCase();
      return this.searchText;
    },
  });

  // The rows the figures plot (report/figures.py, _has_point): status ok, a finite energy
  // above 0 and a finite top-1. A failed row that carries an energy is in the table only.
  const isPlottable = (r) => r.status === "ok" && r.energy > 0 && !isNaN(r.acc);

  function makeRows(n) {
    defineColumns();
    const rows = new Array(n);
    const estimateMeter = perValue("meter", (v) => String(v || "").startsWith("estimate:"));
    const dynamic = perValue("energy_kind", (v) => (v || META.energy_kind) === "dynamic");
    for (let i = 0; i < n; i++) {
      const r = new Row(i);
      r.est = r.energy_is_estimate === true || estimateMeter(i);
      r.dyn = dynamic(i);
      const fallback = r.dyn ? r.dynamic_energy_per_image_j : r.energy_per_image_j;
      r.energy = num(r.scored_energy_per_image_j ?? fallback);
      r.acc = num(r.top1);
      r.plottable = isPlottable(r);
      // Decisions follow the score's rules: a row counts where the score stage scored it.
      r.comparable = r.scored === true && r.plottable;
      setLatency(r);
      rows[i] = r;
    }
    const est = { size: 2, at: (i) => (rows[i].est ? 1 : 0) };
    const [phase, device, model] = ["phase", "device_label", "model"].map(columnKeys);
    const bestKey = keysOf([phase, device, est, model]);
    const bestGroup = keysOf([phase, device, est]);
    // the score stage's comparison group (its SCORE_GROUP columns, from the metadata)
    const group = keysOf(META.score_group.map(columnKeys));
    for (const r of rows) {
      r.bestKey = bestKey(r.id);
      r.bestGroup = bestGroup(r.id);
      r.group = group(r.id);
    }
    return rows;
  }

  // fn of each row's value of column c: for a column of distinct values, once per value.
  function perValue(c, fn) {
    const col = COLS[c];
    if (!col.values) return (i) => fn(col.get(i));
    const out = col.values.map(fn);
    return col.codes ? (i) => out[col.codes[i]] : () => out[0];
  }

  // A column's values numbered so that two rows share a number where keyOf of their values
  // is the same: { size, at(row id) }.
  function columnKeys(c) {
    const ids = new Map();
    const idOf = (v) => {
      const k = keyOf(v);
      if (!ids.has(k)) ids.set(k, ids.size);
      return ids.get(k);
    };
    const col = COLS[c];
    if (col.values) {
      const at = perValue(c, idOf);
      return { size: ids.size, at };
    }
    const all = Int32Array.from({ length: META.rows }, (_, i) => idOf(col.get(i)));
    return { size: ids.size, at: (i) => all[i] };
  }

  // The key of several columns' numbers: one number while they fit in a double's 52 bits,
  // else their list as text; equal exactly where every part is.
  function keysOf(parts) {
    const room = parts.reduce((n, p) => n * Math.max(1, p.size), 1) < 2 ** 52;
    if (room) return (i) => parts.reduce((k, p) => k * Math.max(1, p.size) + p.at(i), 0);
    return (i) => parts.map((p) => p.at(i)).join(",");
  }

  // Time per batch as joulebench.analysis.best_configs reads it: the p95 where per-step timing
  // measured it, else the mean, else batch size / throughput (a summary without latencies).
  function setLatency(r) {
    const p95 = num(r.latency_ms_p95), mean = num(r.latency_ms_mean);
    const derived = (1000 * num(r.batch_size)) / num(r.throughput_img_s);
    if (!isNaN(p95)) [r.latency, r.latencyKind] = [p95, "p95"];
    else if (!isNaN(mean)) [r.latency, r.latencyKind] = [mean, "mean"];
    else if (isFinite(derived) && derived > 0) [r.latency, r.latencyKind] = [derived, "derived"];
  }

  function log10Range(values) {
    const v = values.filter((x) => x > 0 && isFinite(x)).map(Math.log10);
    if (!v.length) return null;
    const [lo, hi] = extent(v);
    return hi > lo ? { lo, hi } : { lo: lo - 0.5, hi: hi + 0.5 };
  }

  function accRange(values) {
    const v = values.filter((x) => isFinite(x));
    if (!v.length) return null;
    const [min, max] = extent(v);
    const lo = Math.floor(min), hi = Math.ceil(max);
    return { lo, hi: hi > lo ? hi : lo + 1 };
  }

  // [min, max] of an array of numbers, in one pass: Math.min(...v) fails past ~125,000 values.
  function extent(values) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    return [lo, hi];
  }

  function makeFronts(rows) {
    const fronts = new Map(); // group -> front rows by energy
    for (const r of rows) {
      if (r.on_front !== true || !r.plottable) continue;
      if (!fronts.has(r.group)) fronts.set(r.group, []);
      fronts.get(r.group).push(r);
    }
    for (const f of fronts.values()) f.sort((a, b) => a.energy - b.energy || a.acc - b.acc);
    return fronts;
  }

  function familyColors(rows) {
    const counts = new Map();
    for (const r of rows) if (r.plottable) counts.set(r.family, (counts.get(r.family) || 0) + 1);
    const top = [...counts.entries()]
      .filter(([f]) => f !== null && f !== undefined)
      .sort((a, b) => b[1] - a[1] || COLLATOR.compare(String(a[0]), String(b[0])))
      .slice(0, PALETTE.series.length);
    return new Map(top.map(([f], i) => [f, PALETTE.series[i]]));
  }

  function keyOf(v) {
    return v === null || v === undefined || v === "" ? NONE_KEY : String(v);
  }

  const bestMode = () => !isNaN(state.budget) || state.bestOnly;

  // Each model (per phase, device and kind of meter) once: its least-energy comparable
  // configuration within the latency budget, among the rows the other filters let through.
  function bestOf(rows) {
    const best = new Map();
    for (const r of rows) {
      if (!r.comparable) continue;
      if (!isNaN(state.budget) && !(r.latency <= state.budget)) continue;
      const b = best.get(r.bestKey);
      if (!b || r.energy < b.energy) best.set(r.bestKey, r);
    }
    return [...best.values()];
  }

  // The front of the best configurations: per (phase, device, kind of meter), the points no
  // other is at least as accurate for at most the same energy as.
  function frontsOf(rows) {
    const groups = new Map();
    for (const r of rows) {
      if (!groups.has(r.bestGroup)) groups.set(r.bestGroup, []);
      groups.get(r.bestGroup).push(r);
    }
    const out = new Map();
    for (const [g, rs] of groups) {
      rs.sort((a, b) => a.energy - b.energy || b.acc - a.acc);
      const front = [];
      for (const r of rs) if (!front.length || r.acc > front[front.length - 1].acc) front.push(r);
      out.set(g, front);
    }
    return out;
  }

  function passes(r) {
    for (const [col] of FACETS) {
      const allowed = state.facets[col];
      if (allowed && !allowed.has(keyOf(r[col]))) return false;
    }
    for (const t of state.terms) if (!r.text.includes(t)) return false;
    if (!isNaN(state.accMin) && !(r.acc >= state.accMin)) return false;
    if (!isNaN(state.accMax) && !(r.acc <= state.accMax)) return false;
    if (!isNaN(state.eMin) && !(r.energy >= state.eMin)) return false;
    if (!isNaN(state.eMax) && !(r.energy <= state.eMax)) return false;
    return true;
  }

  // ---------------------------------------------------------------- formatting
  const sig = (v, n) => String(Number(v.toPrecision(n)));
  const fmtInt = (n) => Number(n).toLocaleString("en-US");

  // The unit switch: every energy shown goes through fmtEnergy; filters stay in J.
  function fmtEnergy(j) {
    if (state.unit === "j") return fmtJoules(j);
    const v = j * UNITS[state.unit].factor;
    return isFinite(v) ? sig(v, 3) + " " + UNITS[state.unit].axis : "–";
  }
  const scopeWord = () => (META.energy_scope === "node" ? ", whole node: GPU+CPU+DRAM" : "");

  function fmtJoules(j) {
    if (!isFinite(j)) return "–";
    if (j === 0) return "0 J";
    const a = Math.abs(j);
    if (a >= 1) return sig(j, 3) + " J";
    if (a >= 1e-3) return sig(j * 1e3, 3) + " mJ";
    if (a >= 1e-6) return sig(j * 1e6, 3) + " µJ";
    return sig(j * 1e9, 3) + " nJ";
  }

  function fmtCount(v) {
    v = num(v);
    if (isNaN(v)) return "–";
    if (v >= 1e9) return sig(v / 1e9, 3) + " B";
    if (v >= 1e6) return sig(v / 1e6, 3) + " M";
    if (v >= 1e3) return sig(v / 1e3, 3) + " k";
    return sig(v, 3);
  }

  const fmtNum = (v, n = 3) => (isNaN(num(v)) ? "–" : sig(v, n));
  const fmtPct = (v) => (isNaN(num(v)) ? "–" : v.toFixed(2) + "%");
  const fmtGflops = (v) => (isNaN(num(v)) ? "–" : sig(v / 1e9, 3));
  // A pop-directional-isolate with no isolate opened before it in the same string would close
  // the isolation of the element it sits in (Chromium lets it), so such strays are dropped;
  // they are invisible, so nothing shown changes but the reading order around the label.
  function balanced(text) {
    let open = 0;
    let out = "";
    for (const ch of text) {
      if (ch === "\u2066" || ch === "\u2067" || ch === "\u2068") open++;
      else if (ch === "\u2069") {
        if (!open) continue;
        open--;
      }
      out += ch;
    }
    return out;
  }
  const str = (v) => (v === null || v === undefined || v === "" ? "–" : balanced(String(v)));
  // U(value) marks a label inside a sentence built by words(): it gets its own element.
  const U = (v) => ({ label: v });
  const LABEL_MAX = 60; // characters of a label shown in a legend or chip; the rest on hover
  const clip = (v) => (str(v).length > LABEL_MAX ? str(v).slice(0, LABEL_MAX - 1) + "…" : str(v));

  function ciOf(r) {
    const stem = r.dyn ? "dynamic_energy_per_image" : "energy_per_image";
    return { lo: num(r[stem + "_ci95_low_j"]), hi: num(r[stem + "_ci95_high_j"]), cv: num(r[stem + "_cv"]) };
  }

  function fmtCi(r) {
    const c = ciOf(r);
    return isNaN(c.lo) || isNaN(c.hi) ? "–" : fmtEnergy(c.lo) + " to " + fmtEnergy(c.hi);
  }

  // The summary raises CI lower bounds below 0 J to 0 and flags the row (docs/scoring.md).
  const flagList = (r) => String(r.flags || "").split(";").map((f) => f.trim()).filter(Boolean);
  const ciClipped = (r) => flagList(r).includes("ci-clipped");
  const INFO_FLAGS = ["estimate", "ci-clipped"]; // say something about a row, never exclude it
  const offFrontFlag = (r) => (/flagged ([^\s:(;]+)/.exec(String(r.score_note || "")) || [])[1];
  const runText = (r) =>
    words(U(r.device_label), " · ", U(r.method), ` · batch ${str(r.batch_size_requested)}`);

  function fmtCv(r) {
    const pct = ciOf(r).cv * 100;
    if (isNaN(pct)) return "–";
    return (pct >= 10 ? pct.toFixed(0) : sig(pct, 2)) + "%"; // 104%, not 100%
  }
  const energyWord = () => (META.energy_kind === "dynamic" ? "above idle" : "total");

  // ---------------------------------------------------------------- DOM helpers
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = balanced(String(text));
    return e;
  }

  function words(...parts) {
    // A sentence with labels in it: each U(value) is its own bidi-isolated element, so
    // the text copies cleanly and no label can reorder its neighbours.
    const s = el("span");
    for (const p of parts) {
      const isLabel = p !== null && typeof p === "object" && "label" in p;
      s.append(isLabel ? el("span", "u", str(p.label)) : String(p));
    }
    return s;
  }

  function label(tag, cls, text) {
    // One user string in its own bidi-isolated element (CSS .u), cut short with the full
    // text on hover when it is long.
    const e = el(tag, (cls ? cls + " " : "") + "u", clip(text));
    if (str(text).length > LABEL_MAX) e.setAttribute("title", str(text));
    return e;
  }

  // Dark or white text, whichever stands out more on a background colour "#rrggbb" (WCAG
  // contrast), so the grade chips stay readable whatever the palette.
  function inkOn(background) {
    const lum = (hex) => {
      const c = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16) / 255);
      const lin = c.map((v) => (v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)));
      return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    };
    const ink = "#1d2330";
    const l = lum(background);
    return (l + 0.05) / (lum(ink) + 0.05) >= 1.05 / (l + 0.05) ? ink : "#fff";
  }

  function badge(kind, text) {
    return el("span", "badge " + kind, text);
  }

  function gradeChip(g) {
    const s = el("span", "grade", g || "–");
    if (g) {
      s.style.background = GRADE_COLORS[g];
      s.style.color = inkOn(GRADE_COLORS[g]);
    }
    return s;
  }

  function debounce(fn, ms) {
    let t = 0;
    return () => {
      clearTimeout(t);
      t = setTimeout(fn, ms);
    };
  }

  // At most one call of fn per animation frame, however often it is asked for.
  function oncePerFrame(fn) {
    let queued = false;
    return () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        fn();
      });
    };
  }
  const scheduleUpdate = oncePerFrame(() => update());
  const scheduleDraw = oncePerFrame(() => drawPlot());

  // ---------------------------------------------------------------- controls
  function buildFacets() {
    const box = $("facets");
    for (const [col, label] of FACETS) {
      const counts = new Map();
      for (const r of ROWS) counts.set(keyOf(r[col]), (counts.get(keyOf(r[col])) || 0) + 1);
      if (col === "phase" && counts.size < 2) continue;
      const keys = [...counts.keys()].sort((a, b) =>
        col === "batch_size_requested" ? Number(a) - Number(b) || COLLATOR.compare(a, b) : COLLATOR.compare(a, b)
      );
      const fs = el("fieldset", "field facet");
      const head = el("div", "facet-head");
      head.append(el("span", "facet-title", label));
      const btns = el("span");
      const all = el("button", null, "all");
      const none = el("button", null, "none");
      all.type = none.type = "button";
      btns.append(all, " ", none);
      head.append(btns);
      fs.append(head);
      const list = el("div", "facet-list");
      for (const k of keys) {
        const lab = el("label");
        const input = el("input");
        input.type = "checkbox";
        input.checked = true;
        input.setAttribute("data-facet", col);
        input.setAttribute("value", k);
        lab.append(input, el("span", "name u", k), el("span", "n", fmtInt(counts.get(k))));
        lab.setAttribute("title", k);
        list.append(lab);
      }
      fs.append(list);
      const read = () => {
        const boxes = list.querySelectorAll("input");
        const on = [...boxes].filter((b) => b.checked).map((b) => b.value);
        state.facets[col] = on.length === boxes.length ? undefined : new Set(on);
        scheduleUpdate();
      };
      list.addEventListener("change", read);
      const setAll = (v) => () => {
        list.querySelectorAll("input").forEach((b) => (b.checked = v));
        read();
      };
      all.addEventListener("click", setAll(true));
      none.addEventListener("click", setAll(false));
      box.append(fs);
    }
  }

  function readNumber(id) {
    const v = $(id).value.trim();
    return v === "" ? NaN : Number(v);
  }

  function readInputs() {
    state.terms = $("search").value.toLowerCase().split(/\s+/).filter(Boolean);
    state.accMin = readNumber("acc-min");
    state.accMax = readNumber("acc-max");
    state.eMin = readNumber("energy-min");
    state.eMax = readNumber("energy-max");
    const budget = readNumber("latency-budget");
    state.budget = budget > 0 ? budget : NaN;
    state.bestOnly = $("best-only").checked;
    syncSliders();
    scheduleUpdate();
  }

  // Sliders: the latency budget on a log scale over the comparable rows' latencies, the
  // accuracy floor over the points' top-1; each writes its number input, which rules.
  const toSlider = (v, lo, hi) => Math.round(Math.min(1, Math.max(0, (v - lo) / (hi - lo))) * SLIDER_STEPS);
  const fromSlider = (k, lo, hi) => lo + (k / SLIDER_STEPS) * (hi - lo);

  function syncSliders() {
    const lat = $("latency-budget-range"), acc = $("acc-min-range");
    lat.disabled = !LAT_RANGE;
    acc.disabled = !ACC_RANGE;
    if (LAT_RANGE) {
      const b = state.budget;
      lat.value = String(isNaN(b) ? SLIDER_STEPS : toSlider(Math.log10(b), LAT_RANGE.lo, LAT_RANGE.hi));
    }
    if (ACC_RANGE) {
      const a = state.accMin;
      acc.value = String(isNaN(a) ? 0 : toSlider(a, ACC_RANGE.lo, ACC_RANGE.hi));
    }
  }

  function wireSliders() {
    $("latency-budget-range").addEventListener("input", (e) => {
      const ms = Math.pow(10, fromSlider(Number(e.target.value), LAT_RANGE.lo, LAT_RANGE.hi));
      $("latency-budget").value = sig(ms, 3);
      readInputs();
    });
    $("acc-min-range").addEventListener("input", (e) => {
      const k = Number(e.target.value);
      $("acc-min").value = k === 0 ? "" : fromSlider(k, ACC_RANGE.lo, ACC_RANGE.hi).toFixed(1);
      readInputs();
    });
    $("best-only").addEventListener("change", readInputs);
  }

  // ---------------------------------------------------------------- the URL holds the view
  // Filters, budget, colouring and facets live in the URL's hash, so a view can be shared
  // and restored (also from file://). Labels are percent-encoded by URLSearchParams.
  const HASH_INPUTS = [
    ["q", "search"],
    ["top1_min", "acc-min"],
    ["top1_max", "acc-max"],
    ["energy_min", "energy-min"],
    ["energy_max", "energy-max"],
    ["latency_max_ms", "latency-budget"],
  ];

  function viewHash() {
    const p = new URLSearchParams();
    for (const [k, id] of HASH_INPUTS) {
      const v = $(id).value.trim();
      if (v) p.set(k, v);
    }
    if (state.bestOnly) p.set("best", "1");
    if (state.colorBy !== "grade") p.set("color", state.colorBy);
    for (const [col] of FACETS) {
      const allowed = state.facets[col];
      if (!allowed) continue;
      if (!allowed.size) p.append("f." + col, "");
      for (const k of allowed) p.append("f." + col, k);
    }
    const text = p.toString();
    return text ? "#" + text : "";
  }

  function writeHash() {
    const want = viewHash();
    if (want === location.hash) return;
    history.replaceState(null, "", location.pathname + location.search + want);
  }

  function applyHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    for (const [k, id] of HASH_INPUTS) $(id).value = p.get(k) || "";
    $("best-only").checked = p.get("best") === "1";
    state.colorBy = p.get("color") === "family" ? "family" : "grade";
    document.querySelectorAll("input[name=colorby]").forEach((r) => (r.checked = r.value === state.colorBy));
    state.facets = {};
    for (const [col] of FACETS) {
      const boxes = [...document.querySelectorAll("#facets input")].filter((b) => b.getAttribute("data-facet") === col);
      const key = "f." + col;
      const allowed = p.has(key) ? new Set(p.getAll(key).filter(Boolean)) : null;
      boxes.forEach((b) => (b.checked = !allowed || allowed.has(b.value)));
      const on = boxes.filter((b) => b.checked).length;
      state.facets[col] = on === boxes.length ? undefined : new Set(boxes.filter((b) => b.checked).map((b) => b.value));
    }
    readInputs();
  }

  function wireControls() {
    const typed = debounce(readInputs, TYPE_DELAY_MS);
    for (const id of ["search", "acc-min", "acc-max", "energy-min", "energy-max", "latency-budget"]) {
      $(id).addEventListener("input", typed);
      $(id).addEventListener("change", readInputs);
    }
    document.querySelectorAll("input[name=colorby]").forEach((r) =>
      r.addEventListener("change", () => {
        state.colorBy = r.value;
        plotStale = true;
        renderLegend();
        scheduleDraw();
        writeHash();
      })
    );
    if (!META.co2e_g_per_j) {
      const co2e = $("unit").querySelector("option[value=co2e]");
      co2e.disabled = true;
      co2e.textContent += ": set carbon.grid_gco2e_per_kwh";
    }
    $("unit").addEventListener("change", () => {
      state.unit = $("unit").value;
      update();
    });
    $("reset").addEventListener("click", () => {
      for (const id of ["search", "acc-min", "acc-max", "energy-min", "energy-max", "latency-budget"]) $(id).value = "";
      $("best-only").checked = false;
      document.querySelectorAll("#facets input").forEach((b) => (b.checked = true));
      state.facets = {};
      readInputs();
    });
    $("download-csv").addEventListener("click", () => download("joulebench-rows.csv", csvParts(sorted)));
    $("compare-download").addEventListener("click", () =>
      download("joulebench-compare.csv", csvParts(state.compare.map((id) => ROWS[id])))
    );
    $("compare-clear").addEventListener("click", () => {
      state.compare = [];
      compareChanged();
    });
  }

  // ---------------------------------------------------------------- update
  function update() {
    const base = ROWS.filter(passes);
    filtered = bestMode() ? bestOf(base) : base;
    for (const r of points) pointAt[r.id] = -1;
    points = filtered.filter((r) => r.plottable);
    points.forEach((r, i) => (pointAt[r.id] = i));
    bestFronts = bestMode() ? frontsOf(points) : new Map();
    plotStale = true;
    $("plot").setAttribute("data-visible-count", String(points.length));
    $("plot").setAttribute("data-mode", bestMode() ? "best" : "all");
    $("table").setAttribute("data-row-count", String(filtered.length));
    const noPoint = filtered.length - points.length;
    $("counts").textContent = bestMode()
      ? `${fmtInt(points.length)} models at their least-energy configuration` +
        (isNaN(state.budget) ? "" : ` within ${sig(state.budget, 3)} ms per batch`)
      : `${fmtInt(points.length)} of ${fmtInt(PLOTTABLE)} points shown` +
        (noPoint ? ` · ${fmtInt(noPoint)} matching rows are not plotted: failed, or no energy or top-1 (table only)` : "");
    sortRows();
    drawPlot();
    renderLegend();
    renderTable(true);
    renderBest(base);
    writeHash();
  }

  // ---------------------------------------------------------------- best configurations
  const BEST_COLS = [
    ["Model", "text"],
    ["Device", "text"],
    ["Method", "text"],
    ["Batch", ""],
    ["Top-1 %", ""],
    ["Energy / image (95% CI)", ""],
    ["Latency (ms / batch)", ""],
    ["img/s", ""],
    ["Grade", "text"],
    ["Label", "text"],
  ];

  const BEST_SHOWN = 200; // rows of the best-configurations table; "All rows" holds every one

  function renderBest(base) {
    const section = $("best-section");
    section.hidden = !bestMode();
    const table = $("best-table");
    if (!bestMode()) {
      table.setAttribute("data-row-count", "0");
      return;
    }
    if (!table.tHead.rows.length) {
      const tr = table.tHead.insertRow();
      for (const [name, cls] of BEST_COLS) tr.append(el("th", cls || null, name));
    }
    const device = textRanks(points.map((r) => String(r.device_label)));
    const rows = [...points].sort(
      (a, b) =>
        device.get(String(a.device_label)) - device.get(String(b.device_label)) ||
        Number(a.est) - Number(b.est) ||
        a.energy - b.energy
    );
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const r of rows.slice(0, BEST_SHOWN)) {
      const tr = el("tr");
      tr.dataset.id = String(r.id);
      const energy = el("td", null, fmtEnergy(r.energy));
      const ci = ciOf(r);
      if (!isNaN(ci.hi) && r.energy > 0) energy.append(el("span", "ci", ` ±${sig((100 * (ci.hi - r.energy)) / r.energy, 2)}%`));
      if (r.est) energy.append(" ", badge("est", "estimated"));
      const lat = el("td", null, isNaN(r.latency) ? "–" : `${sig(r.latency, 3)} (${r.latencyKind})`);
      const grade = el("td", "text");
      grade.append(gradeChip(r.grade));
      const get = el("button", "label-svg", "SVG");
      get.type = "button";
      get.setAttribute("aria-label", "energy label of " + (r.model || "") + " (SVG)");
      get.addEventListener("click", () => downloadLabel(r));
      const labelCell = el("td", "text");
      labelCell.append(get);
      tr.append(
        label("td", "text model", r.model),
        label("td", "text", r.device_label),
        label("td", "text", r.method),
        el("td", null, str(r.batch_size_requested)),
        el("td", null, fmtPct(r.acc)),
        energy,
        lat,
        el("td", null, fmtNum(r.throughput_img_s)),
        grade,
        labelCell
      );
      body.append(tr);
    }
    table.setAttribute("data-row-count", String(rows.length));
    $("best-count").textContent =
      rows.length > BEST_SHOWN ? `(first ${BEST_SHOWN} of ${fmtInt(rows.length)}; all are in the table of rows below)` : `(${rows.length})`;
    // models with comparable rows but none within the budget
    const have = new Set(base.filter((r) => r.comparable).map((r) => r.bestKey));
    const missing = have.size - new Set(rows.map((r) => r.bestKey)).size;
    $("best-note").textContent =
      "Each model at the configuration (method, batch size) spending the least energy per image" +
      (isNaN(state.budget) ? "" : ` within ${sig(state.budget, 3)} ms per batch`) +
      ", among the rows the filters keep and the score compares (flagged rows never count)." +
      (missing > 0 ? ` ${missing} model${missing === 1 ? " has" : "s have"} no configuration within the budget.` : "");
  }

  // ---------------------------------------------------------------- plot
  const M = { l: 62, r: 18, t: 14, b: 46 };

  function resizeCanvas() {
    const plot = $("plot");
    const canvas = $("canvas");
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(plot.clientWidth * dpr)), h = Math.max(1, Math.round(plot.clientHeight * dpr));
    if (plotBox.w === plot.clientWidth && plotBox.h === plot.clientHeight && canvas.width === w && canvas.height === h) return;
    plotBox = { w: plot.clientWidth, h: plot.clientHeight };
    plotStale = true; // the observer's first call, with the size already drawn, draws nothing new
    canvas.width = w;
    canvas.height = h;
  }

  function niceStep(span, n) {
    const raw = span / n;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  }

  function linearTicks(lo, hi, n) {
    const step = niceStep(hi - lo, n);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
    return out;
  }

  function logTicks(lo, hi) {
    const span = hi - lo;
    const mult = span > 5 ? [1] : span > 2.2 ? [1, 3] : span > 1 ? [1, 2, 5] : null;
    if (!mult) return linearTicks(Math.pow(10, lo), Math.pow(10, hi), 4).filter((v) => v > 0).map(Math.log10);
    const out = [];
    const stride = span > 10 ? 2 : 1;
    for (let k = Math.floor(lo); k <= Math.ceil(hi); k++) {
      if (mult.length === 1 && k % stride) continue;
      for (const m of mult) {
        const v = k + Math.log10(m);
        if (v >= lo && v <= hi) out.push(v);
      }
    }
    return out;
  }

  function domains() {
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const r of points) {
      const lx = Math.log10(r.energy);
      if (lx < x0) x0 = lx;
      if (lx > x1) x1 = lx;
      if (r.acc < y0) y0 = r.acc;
      if (r.acc > y1) y1 = r.acc;
    }
    if (!points.length) return { x0: -3, x1: 0, y0: 0, y1: 100 };
    const xs = Math.max(x1 - x0, 0.3);
    const ys = Math.max(y1 - y0, 2);
    const xc = (x0 + x1) / 2;
    const yc = (y0 + y1) / 2;
    return { x0: xc - xs * 0.55, x1: xc + xs * 0.55, y0: yc - ys * 0.56, y1: yc + ys * 0.56 };
  }

  // How a point is drawn, from its record: the colour bucket it falls in (its grade, or its
  // family where that has a colour of its own), filled (measured) or hollow (estimated), and a
  // rank: batches are drawn highest rank first, so grade A and coloured families end on top.
  function pointStyle(r) {
    const hollow = r.est;
    if (state.colorBy === "family") {
      const color = FAMILY_COLOR.get(r.family);
      const bucket = color ? "family:" + r.family : "family:other";
      return {
        key: bucket + (hollow ? "|h" : "|f"),
        color: color || PALETTE.other,
        hollow,
        rank: color ? 0 : 99,
      };
    }
    const graded = Object.prototype.hasOwnProperty.call(GRADE_COLORS, r.grade);
    return {
      key: "grade:" + (graded ? r.grade : "") + (hollow ? "|h" : "|f"),
      color: graded ? GRADE_COLORS[r.grade] : PALETTE.no_grade,
      hollow,
      rank: graded ? META.grades.indexOf(r.grade) + 1 : 99,
    };
  }

  // The plot's frame: canvas size, margins and the scales from data to pixels.
  function plotFrame() {
    const W = plotBox.w, H = plotBox.h;
    const pw = W - M.l - M.r, ph = H - M.t - M.b;
    const d = domains();
    return {
      W, H, pw, ph, d,
      sx: (e) => M.l + ((Math.log10(e) - d.x0) / (d.x1 - d.x0)) * pw,
      sy: (a) => M.t + (1 - (a - d.y0) / (d.y1 - d.y0)) * ph,
    };
  }

  // The plot in two layers: the base (axes, fronts, every point) drawn again only when what
  // is on show changes, and the marks (compared and hovered rows) over a copy of it, so a
  // hover over 300,000 points redraws a few rings, not the points.
  function drawPlot() {
    const canvas = $("canvas");
    if (plotBox.w === 0) resizeCanvas();
    const dpr = canvas.width / Math.max(1, plotBox.w);
    if (!layer.canvas || layer.canvas.width !== canvas.width || layer.canvas.height !== canvas.height) {
      layer.canvas = document.createElement("canvas");
      layer.canvas.width = canvas.width;
      layer.canvas.height = canvas.height;
      plotStale = true;
    }
    if (plotStale) {
      layer.frame = plotFrame();
      const bctx = layer.canvas.getContext("2d");
      bctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      drawBase(bctx, layer.frame);
      plotStale = false;
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(layer.canvas, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.save();
    ctx.beginPath();
    ctx.rect(M.l, M.t, layer.frame.pw, layer.frame.ph);
    ctx.clip();
    drawMarks(ctx, layer.frame);
    ctx.restore();
  }

  function drawBase(ctx, f) {
    ctx.clearRect(0, 0, f.W, f.H);
    drawAxes(ctx, f);
    drawAxisTitles(ctx, f);
    ctx.save();
    ctx.beginPath();
    ctx.rect(M.l, M.t, f.pw, f.ph);
    ctx.clip();
    drawFronts(ctx, f);
    drawPoints(ctx, f);
    ctx.restore();
    if (!points.length) drawEmptyNote(ctx, f);
  }

  // Grid lines and tick labels: log energy (x), linear top-1 (y).
  function drawAxes(ctx, { pw, ph, d, sy }) {
    ctx.font = "12px system-ui, sans-serif";
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#eceff3";
    ctx.fillStyle = "#5c6675";
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    // ticks at round values of the unit shown (the unit switch), placed on the J axis
    const shift = state.unit === "j" ? 0 : Math.log10(UNITS[state.unit].factor);
    for (const shown of logTicks(d.x0 + shift, d.x1 + shift)) {
      const v = shown - shift;
      const x = Math.round(M.l + ((v - d.x0) / (d.x1 - d.x0)) * pw) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, M.t);
      ctx.lineTo(x, M.t + ph);
      ctx.stroke();
      // J ticks carry their prefix (mJ, µJ); other units are named once, in the axis title
      ctx.fillText(shift ? sig(Math.pow(10, shown), 3) : fmtEnergy(Math.pow(10, v)), x, M.t + ph + 6);
    }
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of linearTicks(d.y0, d.y1, 6)) {
      const y = Math.round(sy(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(M.l, y);
      ctx.lineTo(M.l + pw, y);
      ctx.stroke();
      ctx.fillText(String(v), M.l - 6, y);
    }
    ctx.strokeStyle = "#9aa3af";
    ctx.strokeRect(M.l + 0.5, M.t + 0.5, pw, ph);
  }

  // Axis titles; the energy axis says which energy it is and when energies are estimates.
  function drawAxisTitles(ctx, { H, pw, ph }) {
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillStyle = "#1d2330";
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    const anyEst = points.some((r) => r.est);
    const allEst = anyEst && points.every((r) => r.est);
    const estNote = allEst ? ", estimated" : anyEst ? ", partly estimated: hollow points" : "";
    const u = UNITS[state.unit];
    const what = state.unit === "j" ? "Energy per image (J" : `Energy (${u.axis} ${u.per}`;
    ctx.fillText(`${what}, ${energyWord()}${scopeWord()}, log scale${estNote})`, M.l + pw / 2, H - 4);
    ctx.save();
    ctx.translate(14, M.t + ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText("Top-1 accuracy (%)", 0, 0);
    ctx.restore();
  }

  // The Pareto front of every comparison group that has a point on show, as a staircase;
  // dashed where the group's energies are estimates.
  function drawFronts(ctx, { sx, sy }) {
    const best = bestMode();
    const groups = new Set(points.map((r) => (best ? r.bestGroup : r.group)));
    ctx.strokeStyle = "#2b2f36";
    ctx.lineWidth = 1.5;
    for (const g of groups) {
      const f = (best ? bestFronts : FRONTS).get(g);
      if (!f) continue;
      ctx.setLineDash(f[0].est ? [5, 4] : []);
      ctx.beginPath();
      ctx.moveTo(sx(f[0].energy), sy(f[0].acc));
      for (let i = 1; i < f.length; i++) {
        ctx.lineTo(sx(f[i].energy), sy(f[i - 1].acc));
        ctx.lineTo(sx(f[i].energy), sy(f[i].acc));
      }
      ctx.stroke();
    }
    ctx.setLineDash([]);
  }

  // Every point on show, in batches of one style; also fills px/py, where the hover and
  // click look points up. The points are rasterised here, not as canvas arcs: 300,000 arcs
  // take the canvas seconds, this a fraction of one. Each batch is drawn as the canvas
  // draws one path: the union of its discs filled (85 % opaque) and then the union of their
  // outlines, or for estimated energies the union of the rings alone.
  function drawPoints(ctx, { sx, sy }) {
    px = new Float32Array(points.length);
    py = new Float32Array(points.length);
    const batches = new Map(); // style key -> { style, at: point indices }
    for (let i = 0; i < points.length; i++) {
      const r = points[i];
      px[i] = sx(r.energy);
      py[i] = sy(r.acc);
      const style = pointStyle(r);
      if (!batches.has(style.key)) batches.set(style.key, { style, at: [] });
      batches.get(style.key).at.push(i);
    }
    if (!points.length) return;
    const order = [...batches.values()].sort((a, b) => b.style.rank - a.style.rank);
    const dpr = ctx.getTransform().a;
    const { pw, ph } = layer.frame;
    const box = { x: Math.round(M.l * dpr), y: Math.round(M.t * dpr), w: Math.round(pw * dpr), h: Math.round(ph * dpr) };
    if (box.w <= 0 || box.h <= 0) return;
    const image = ctx.getImageData(box.x, box.y, box.w, box.h);
    const raster = pointRaster(image, box, dpr);
    for (const { style, at } of order) raster.batch(style, at);
    ctx.putImageData(image, box.x, box.y);
  }

  // Coverage masks of one point at 4 x 4 sub-pixel offsets, 4 x 4 samples per pixel: each
  // { dx, dy, fill, line }, one entry per pixel touched (offset from the centre's pixel,
  // coverage 0..1), as typed arrays for the raster's inner loop.
  function pointMasks(dpr) {
    const R = POINT_RADIUS_PX * dpr;
    const bands = { filled: 0.4 * dpr, hollow: 0.8 * dpr }; // half the outline's width
    const reach = Math.ceil(R + bands.hollow) + 1;
    const masks = { filled: [], hollow: [] };
    for (const kind of ["filled", "hollow"]) {
      for (let phase = 0; phase < 16; phase++) {
        const fx = (phase % 4) / 4 + 0.125, fy = Math.floor(phase / 4) / 4 + 0.125;
        const mask = [];
        for (let dy = -reach; dy <= reach; dy++) {
          for (let dx = -reach; dx <= reach; dx++) {
            let fill = 0, line = 0;
            for (let s = 0; s < 16; s++) {
              const d = Math.hypot(dx + ((s % 4) + 0.5) / 4 - fx, dy + (Math.floor(s / 4) + 0.5) / 4 - fy);
              if (d <= R) fill++;
              if (Math.abs(d - R) <= bands[kind]) line++;
            }
            if (kind === "hollow") fill = 0;
            if (fill || line) mask.push([dx, dy, fill / 16, line / 16]);
          }
        }
        const column = (k, T) => T.from(mask, (m) => m[k]);
        masks[kind].push({ dx: column(0, Int32Array), dy: column(1, Int32Array), fill: column(2, Float32Array), line: column(3, Float32Array) });
      }
    }
    return masks;
  }

  const rgbOf = (hex) => {
    if (!/^#[0-9a-fA-F]{6}$/.test(hex)) throw new Error(`colour ${hex}: not #rrggbb`);
    return [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  };

  // Points composited into `image` (the plot area of the base layer, `box` in device px):
  // source-over, straight alpha, as the canvas would.
  const rasterCache = { dpr: 0, masks: null, size: 0, fill: null, line: null, touched: null };

  function pointRaster(image, box, dpr) {
    const size = box.w * box.h;
    const cache = rasterCache;
    if (cache.dpr !== dpr) Object.assign(cache, { dpr, masks: pointMasks(dpr) });
    if (cache.size !== size) {
      const buffers = { fill: new Float32Array(size), line: new Float32Array(size), touched: new Int32Array(size) };
      Object.assign(cache, { size, ...buffers }); // zero again after each batch
    }
    const { masks, fill, line, touched } = cache;
    const data = image.data;
    const over = (k, rgb, alpha) => {
      if (alpha <= 0) return;
      const o = 4 * k, below = (data[o + 3] / 255) * (1 - alpha), a = alpha + below;
      data[o] = (rgb[0] * alpha + data[o] * below) / a;
      data[o + 1] = (rgb[1] * alpha + data[o + 1] * below) / a;
      data[o + 2] = (rgb[2] * alpha + data[o + 2] * below) / a;
      data[o + 3] = a * 255;
    };
    function batch(style, at) {
      const hollow = style.hollow, rgb = rgbOf(style.color);
      const lineRgb = hollow ? rgb : [0, 0, 0];
      const lineAlpha = hollow ? 1 : 0.35;
      let n = 0;
      for (const i of at) {
        const X = px[i] * dpr - box.x, Y = py[i] * dpr - box.y;
        if (!(X > -20 && Y > -20 && X < box.w + 20 && Y < box.h + 20)) continue;
        const cx = Math.floor(X), cy = Math.floor(Y);
        const phase = Math.min(3, Math.floor((X - cx) * 4)) + 4 * Math.min(3, Math.floor((Y - cy) * 4));
        const m = masks[hollow ? "hollow" : "filled"][phase];
        for (let j = 0; j < m.dx.length; j++) {
          const x = cx + m.dx[j], y = cy + m.dy[j];
          if (x < 0 || y < 0 || x >= box.w || y >= box.h) continue;
          const k = y * box.w + x;
          if (!fill[k] && !line[k]) touched[n++] = k;
          if (m.fill[j] > fill[k]) fill[k] = m.fill[j];
          if (m.line[j] > line[k]) line[k] = m.line[j];
        }
      }
      for (let t = 0; t < n; t++) {
        const k = touched[t];
        over(k, rgb, 0.85 * fill[k]);
        over(k, lineRgb, lineAlpha * line[k]);
        fill[k] = line[k] = 0;
      }
    }
    return { batch };
  }

  // Compared models: a ring in their comparison colour and their name; the hovered one: a
  // dark ring.
  function drawMarks(ctx, { pw }) {
    const index = { get: (id) => (id === null || pointAt[id] < 0 ? undefined : pointAt[id]) };
    ctx.font = "600 11.5px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const right = M.l + pw; // the plot area's right edge
    state.compare.forEach((id, k) => {
      const i = index.get(id);
      if (i === undefined) return;
      ring(ctx, px[i], py[i], 7, PALETTE.compare[k], 2.5);
      nameTag(ctx, ROWS[id].model || "", px[i], py[i], right);
    });
    const h = index.get(state.hoverId);
    if (h !== undefined) ring(ctx, px[h], py[h], 6.5, "#111", 2);
  }

  // A name beside its point, to the right unless it would run past `right`, on a white halo.
  function nameTag(ctx, text, x, y, right) {
    const toRight = x + 10 + ctx.measureText(text).width < right;
    ctx.textAlign = toRight ? "left" : "right";
    ctx.lineWidth = 3;
    ctx.strokeStyle = "rgba(255,255,255,0.9)";
    ctx.strokeText(text, x + (toRight ? 10 : -10), y - 9);
    ctx.fillStyle = "#1d2330";
    ctx.fillText(text, x + (toRight ? 10 : -10), y - 9);
  }

  function drawEmptyNote(ctx, { W, H }) {
    ctx.fillStyle = "#5c6675";
    ctx.font = "14px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.fillText(ROWS.length ? "No point matches the filters." : "No rows in this study.", W / 2, H / 2);
  }

  function ring(ctx, x, y, r, color, width) {
    ctx.beginPath();
    ctx.arc(x, y, r, 0, 2 * Math.PI);
    ctx.lineWidth = width;
    ctx.strokeStyle = color;
    ctx.stroke();
  }

  function nearest(x, y) {
    let best = -1, bestD = HIT_RADIUS_PX * HIT_RADIUS_PX;
    for (let i = 0; i < px.length; i++) {
      const dx = px[i] - x, dy = py[i] - y;
      const dd = dx * dx + dy * dy;
      if (dd <= bestD) {
        bestD = dd;
        best = i;
      }
    }
    return best;
  }

  function renderLegend() {
    const box = $("legend");
    box.replaceChildren();
    const key = (color, text, cls, name) => {
      const s = el("span", "key");
      const i = el("i", cls);
      if (color) i.style.background = color;
      s.append(i);
      if (name !== undefined) s.append(label("span", null, name), " ");
      s.append(el("span", null, text));
      box.append(s);
    };
    if (state.colorBy === "grade") {
      const counts = {};
      for (const r of points) counts[r.grade || ""] = (counts[r.grade || ""] || 0) + 1;
      for (const g of META.grades) key(GRADE_COLORS[g], `${g} (${counts[g] || 0})`);
      if (counts[""]) key(PALETTE.no_grade, `no grade (${counts[""]})`);
    } else {
      const counts = new Map();
      for (const r of points) counts.set(r.family, (counts.get(r.family) || 0) + 1);
      for (const [f, c] of FAMILY_COLOR) if (counts.has(f)) key(c, `(${counts.get(f)})`, null, f);
      const rest = [...counts].filter(([f]) => !FAMILY_COLOR.has(f));
      const n = rest.reduce((s, [, c]) => s + c, 0);
      if (n) key(PALETTE.other, `${rest.length} other families (${n})`);
    }
    if (bestMode()) {
      if (bestFronts.size) key(null, "energy-optimal front (best configurations)", "line");
    } else {
      const groups = new Set(points.filter((r) => FRONTS.has(r.group)).map((r) => r.group));
      if (groups.size) key(null, groups.size === 1 ? "Pareto front" : `Pareto fronts (${groups.size} groups)`, "line");
    }
    if (points.some((r) => r.est)) key(null, "hollow: estimated energy", "hollow");
  }

  // ---------------------------------------------------------------- hover card
  function fillCard(card, r) {
    card.replaceChildren(label("div", "name", r.model));
    const badges = el("div", "badges");
    badges.append(gradeChip(r.grade));
    if (r.on_front === true) badges.append(badge("front", "on the front"));
    if (r.est) badges.append(badge("est", "estimated"));
    if (r.flags) badges.append(badge("flag u", flagList(r).join(", ")));
    card.append(badges);
    const dl = el("dl");
    const add = (k, v) => {
      const dd = el("dd");
      dd.append(v instanceof Node ? v : String(v));
      dl.append(el("dt", null, k), dd);
    };
    const sep = () => dl.append(el("div", "sep"));
    add(`Energy / image (${r.dyn ? "above idle" : "total"})`, fmtEnergy(r.energy) + (r.est ? " (estimated)" : ""));
    add("95% CI", fmtCi(r) + (ciClipped(r) ? " (lower bound clipped at 0)" : ""));
    add("CV over repeats", fmtCv(r) + (r.repeats ? ` (${r.repeats} repeats)` : ""));
    const other = r.dyn ? num(r.energy_per_image_j) : num(r.dynamic_energy_per_image_j);
    add(r.dyn ? "Total energy" : "Above idle", fmtEnergy(other));
    add("Top-1", r.accuracy_source ? words(fmtPct(r.acc), " (", U(r.accuracy_source), ")") : fmtPct(r.acc));
    add("Top-5", fmtPct(num(r.top5)));
    add("Throughput", fmtNum(r.throughput_img_s) + " img/s");
    add("Latency / batch", isNaN(r.latency) ? "–" : `${sig(r.latency, 3)} ms (${r.latencyKind})`);
    add("Params · GFLOPs", `${fmtCount(r.params)} · ${fmtGflops(r.flops_per_image)}`);
    add("Efficiency index", fmtNum(r.efficiency_index, 3));
    add("Energy index", isNaN(num(r.energy_index)) ? "–" : words(`${sig(r.energy_index, 3)} × `, U(r.reference_model)));
    sep();
    const ran = r.batch_size !== r.batch_size_requested && r.batch_size ? ` (ran ${r.batch_size})` : "";
    const run = runText(r);
    run.append(ran);
    add("Run", run);
    add("Meter", words(U(r.meter)));
    add("Device", words(U(r.device_name)));
    add("Host", words(U(r.host)));
    add("Versions", words("torch ", U(r.torch_version), " · timm ", U(r.timm_version), " · driver ", U(r.driver_version)));
    add("Started (UTC)", str(r.start_time_utc));
    if (r.status !== "ok") add("Status", words(U(r.status), ": ", U(r.reason)));
    if (r.score_note) add("Note", r.score_note);
    card.append(dl);
  }

  function showCard(i, x, y) {
    const card = $("card");
    if (i < 0) {
      card.hidden = true;
      return;
    }
    fillCard(card, points[i]);
    card.hidden = false;
    const w = card.offsetWidth, h = card.offsetHeight;
    const left = x + 16 + w > plotBox.w ? Math.max(0, x - 16 - w) : x + 16;
    const top = Math.max(0, Math.min(y - h / 2, plotBox.h - h));
    card.style.left = left + "px";
    card.style.top = top + "px";
  }

  function wirePlot() {
    const canvas = $("canvas");
    const at = (e) => {
      const b = canvas.getBoundingClientRect();
      return [e.clientX - b.left, e.clientY - b.top];
    };
    canvas.addEventListener("mousemove", (e) => {
      const [x, y] = at(e);
      const i = nearest(x, y);
      const id = i < 0 ? null : points[i].id;
      if (id !== state.hoverId) {
        state.hoverId = id;
        scheduleDraw();
      }
      showCard(i, x, y);
    });
    canvas.addEventListener("mouseleave", () => {
      state.hoverId = null;
      $("card").hidden = true;
      scheduleDraw();
    });
    canvas.addEventListener("click", (e) => {
      const i = nearest(...at(e));
      if (i >= 0) toggleCompare(points[i].id);
    });
    const redraw = () => {
      if (!started) return; // (the observer's first call; or the start failed: said on the page)
      resizeCanvas();
      drawPlot();
    };
    if (window.ResizeObserver) new ResizeObserver(redraw).observe($("plot"));
    else window.addEventListener("resize", redraw);
  }

  // ---------------------------------------------------------------- compare
  function toggleCompare(id) {
    const at = state.compare.indexOf(id);
    if (at >= 0) state.compare.splice(at, 1);
    else if (state.compare.length >= MAX_COMPARE) {
      $("compare-count").textContent = `(at most ${MAX_COMPARE}: remove one first)`;
      return false;
    } else state.compare.push(id);
    compareChanged();
    return true;
  }

  function compareChanged() {
    renderCompare();
    for (const tr of $("table").tBodies[0].querySelectorAll("tr.row")) {
      const on = state.compare.includes(Number(tr.dataset.id));
      tr.classList.toggle("picked", on);
      tr.querySelector("input").checked = on;
    }
    scheduleDraw();
  }

  const BAR_METRICS = [
    ["Energy per image (lower is better)", (r) => r.energy, fmtEnergy],
    ["Top-1 accuracy (%)", (r) => r.acc, fmtPct],
    ["Throughput (img/s)", (r) => num(r.throughput_img_s), (v) => fmtNum(v)],
    ["Parameters", (r) => num(r.params), fmtCount],
    ["GFLOPs per image", (r) => num(r.flops_per_image), fmtGflops],
  ];

  function renderCompare() {
    const box = $("compare");
    const rows = state.compare.map((id) => ROWS[id]);
    box.setAttribute("data-count", String(rows.length));
    box.replaceChildren();
    $("compare-count").textContent = rows.length ? `(${rows.length} of at most ${MAX_COMPARE})` : "";
    $("compare-download").disabled = $("compare-clear").disabled = !rows.length;
    if (!rows.length) {
      box.append(el("p", "empty", `Click points in the plot or tick rows in the table to compare up to ${MAX_COMPARE} models side by side.`));
      return;
    }
    const chips = el("div", "chips");
    rows.forEach((r, k) => {
      const chip = el("span", "chip");
      const sw = el("i");
      sw.style.background = PALETTE.compare[k];
      const x = el("button", null, "×");
      x.type = "button";
      x.setAttribute("aria-label", "remove " + (r.model || ""));
      x.addEventListener("click", () => toggleCompare(r.id));
      chip.append(sw, label("span", "chip-name", r.model), x);
      chips.append(chip);
    });
    const grid = el("div", "compare-grid");
    grid.append(compareTable(rows), compareBars(rows));
    box.append(chips, grid);
  }

  function compareTable(rows) {
    const t = el("table", "compare-table");
    const head = t.createTHead().insertRow();
    head.append(el("th", null, ""));
    rows.forEach((r, k) => {
      const th = el("th");
      const sw = el("span", null, "■ ");
      sw.style.color = PALETTE.compare[k];
      th.append(sw, label("span", "model-name", r.model));
      head.append(th);
    });
    const body = t.createTBody();
    const line = (label, cell) => {
      const tr = body.insertRow();
      tr.append(el("td", null, label));
      for (const r of rows) {
        const td = el("td");
        const v = cell(r);
        if (v instanceof Node) td.append(v);
        else td.textContent = v;
        tr.append(td);
      }
    };
    line("Grade", (r) => gradeChip(r.grade));
    line("Efficiency index", (r) => fmtNum(r.efficiency_index));
    line(`Energy / image (${energyWord()})`, (r) => {
      const s = el("span", null, fmtEnergy(r.energy) + " ");
      if (r.est) s.append(badge("est", "estimated"));
      return s;
    });
    line("95% CI", fmtCi);
    line("CV", fmtCv);
    line("Top-1", (r) => fmtPct(r.acc));
    line("Top-5", (r) => fmtPct(num(r.top5)));
    line("Accuracy source", (r) => str(r.accuracy_source));
    line("Throughput (img/s)", (r) => fmtNum(r.throughput_img_s));
    line("Parameters", (r) => fmtCount(r.params));
    line("GFLOPs / image", (r) => fmtGflops(r.flops_per_image));
    line("Energy index", (r) => fmtNum(r.energy_index));
    line("Run", runText);
    line("Meter", (r) => str(r.meter));
    line("Device", (r) => str(r.device_name));
    line("Status", (r) => str(r.status));
    return t;
  }

  function compareBars(rows) {
    const wrap = el("div", "bars");
    for (const [title, get, fmt] of BAR_METRICS) {
      const block = el("div", "bar-block");
      block.append(el("h3", null, title));
      const values = rows.map(get);
      const max = Math.max(0, ...values.filter((v) => !isNaN(v)));
      rows.forEach((r, k) => {
        const v = values[k];
        const row = el("div", "bar-row");
        row.setAttribute("title", r.model || "");
        const track = el("div", "bar-track");
        const bar = el("div", "bar" + (r.est && get === BAR_METRICS[0][1] ? " est" : ""));
        bar.style.width = (isNaN(v) || max <= 0 ? 0 : (100 * v) / max).toFixed(1) + "%";
        bar.style.backgroundColor = PALETTE.compare[k];
        track.append(bar);
        row.append(track, el("span", "v", fmt(v)));
        block.append(row);
      });
      wrap.append(block);
    }
    return wrap;
  }

  // ---------------------------------------------------------------- table
  const TABLE_COLS = [
    { key: "pick", label: "", sort: false, w: 34 },
    { key: "model", label: "Model", text: true },
    { key: "family", label: "Family", text: true, w: 120 },
    { key: "device_label", label: "Device", text: true, w: 84 },
    { key: "method", label: "Method", text: true, w: 96 },
    { key: "batch_size_requested", label: "Batch", w: 58 },
    { key: "acc", label: "Top-1 %", w: 72, fmt: (r) => (isNaN(r.acc) ? "–" : r.acc.toFixed(2)) },
    { key: "energy", label: "Energy / image", w: 190 },
    { key: "throughput_img_s", label: "img/s", w: 76, fmt: (r) => fmtNum(r.throughput_img_s) },
    { key: "params", label: "Params", w: 72, fmt: (r) => fmtCount(r.params) },
    { key: "flops_per_image", label: "GFLOPs", w: 70, fmt: (r) => fmtGflops(r.flops_per_image) },
    { key: "grade", label: "Grade", text: true, w: 58 },
    { key: "efficiency_index", label: "Eff. index", w: 92, fmt: (r) => fmtNum(r.efficiency_index) },
    { key: "status", label: "Status", text: true, w: 150 },
  ];

  function buildTableHead() {
    const cols = el("colgroup"); // fixed widths: the layout never waits for the rows
    for (const c of TABLE_COLS) {
      const col = el("col");
      if (c.w) col.style.width = c.w + "px";
      cols.append(col);
    }
    $("table").prepend(cols);
    const tr = $("table").tHead.insertRow();
    for (const c of TABLE_COLS) {
      const th = el("th", c.text ? "text" : null);
      th.setAttribute("data-key", c.key);
      if (c.sort !== false) {
        const b = el("button", null, c.label);
        b.type = "button";
        b.addEventListener("click", () => {
          state.sortDir = state.sortKey === c.key ? -state.sortDir : c.text ? 1 : -1;
          state.sortKey = c.key;
          sortRows();
          renderTable(true);
        });
        th.append(b);
      }
      tr.append(th);
    }
  }

  function sortValue(r, key) {
    const v = r[key];
    if (key === "grade" || key === "status") return v || null; // grade A first when ascending
    if (typeof v === "number") return isFinite(v) ? v : null;
    return v === undefined || v === "" ? null : v;
  }

  // Every row in the order of a column, worked out once per column and direction; the table
  // is then that order, filtered: no sort on every filter change. Text sorts as
  // localeCompare would, each distinct value ranked once (a collator, not a compare per pair).
  let orderOf = { key: null, dir: 0, rows: [] };

  function textRanks(values) {
    const distinct = [...new Set(values)].sort(COLLATOR.compare);
    return new Map(distinct.map((v, k) => [v, k]));
  }

  function rowOrder(key, dir) {
    if (orderOf.key === key && orderOf.dir === dir) return orderOf.rows;
    const keys = ROWS.map((r) => sortValue(r, key));
    let ranks = null;
    if (keys.some((v) => v !== null && typeof v !== "number")) {
      const rank = textRanks(keys.filter((v) => v !== null).map(String));
      ranks = keys.map((v) => (v === null ? null : rank.get(String(v))));
    }
    const k = ranks || keys;
    const ids = ROWS.map((r) => r.id).filter((i) => k[i] !== null);
    ids.sort((a, b) => (k[a] - k[b]) * dir || a - b);
    for (const r of ROWS) if (k[r.id] === null) ids.push(r.id); // empty values last
    orderOf = { key, dir, rows: ids.map((i) => ROWS[i]) };
    return orderOf.rows;
  }

  function sortRows() {
    const key = state.sortKey, dir = state.sortDir;
    const keep = new Uint8Array(ROWS.length);
    for (const r of filtered) keep[r.id] = 1;
    sorted = rowOrder(key, dir).filter((r) => keep[r.id]);
    for (const th of $("table").tHead.rows[0].cells) {
      const k = th.getAttribute("data-key");
      if (k === key) th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    }
  }

  function tableRow(r) {
    const tr = el("tr", "row" + (r.status !== "ok" ? " failed" : ""));
    tr.dataset.id = String(r.id);
    const picked = state.compare.includes(r.id);
    if (picked) tr.classList.add("picked");
    for (const c of TABLE_COLS) {
      const td = el("td", c.text ? "text" : null);
      if (c.key === "pick") {
        const box = el("input");
        box.type = "checkbox";
        box.checked = picked;
        box.setAttribute("aria-label", "compare " + (r.model || ""));
        td.append(box);
      } else if (c.key === "model") {
        td.classList.add("model");
        td.textContent = str(r.model);
        td.setAttribute("title", str(r.model));
        td.classList.add("u");
      } else if (c.key === "energy") {
        const ci = ciOf(r);
        td.append(fmtEnergy(r.energy));
        if (!isNaN(ci.lo) && !isNaN(ci.hi) && r.energy > 0) {
          // the half-width from the upper bound: the lower one may be clipped at 0
          td.append(el("span", "ci", ` ±${sig((100 * (ci.hi - r.energy)) / r.energy, 2)}%`));
          const clipped = ciClipped(r) ? " (lower bound clipped at 0)" : "";
          td.setAttribute("title", "95% CI " + fmtCi(r) + clipped);
        }
        if (r.est) td.append(" ", badge("est", "estimated"));
      } else if (c.key === "grade") {
        td.append(gradeChip(r.grade));
      } else if (c.key === "status") {
        td.textContent = str(r.status);
        // the flag that kept it off the front (its score note names it) first
        const key = (f) => (f === offFrontFlag(r) ? 0 : INFO_FLAGS.includes(f) ? 2 : 1);
        const flags = flagList(r).sort((a, b) => key(a) - key(b));
        if (flags.length) {
          const more = flags.length > 1 ? ` +${flags.length - 1}` : "";
          td.append(" ", badge("flag u", flags[0] + more));
          td.setAttribute("title", `${str(r.status)}, flagged: ${flags.join(", ")}`);
        }
      } else {
        td.textContent = c.fmt ? c.fmt(r) : str(r[c.key]);
        if (c.text) {
          td.classList.add("u");
          td.setAttribute("title", str(r[c.key]));
        }
      }
      tr.append(td);
    }
    return tr;
  }

  function spacer(height) {
    const tr = el("tr", "spacer");
    const td = el("td");
    td.colSpan = TABLE_COLS.length;
    td.style.height = height + "px";
    tr.append(td);
    return tr;
  }

  let shownRange = [-1, -1];
  function renderTable(force) {
    const wrap = $("table-wrap");
    if (force) wrap.scrollTop = 0;
    // The wrap may still be empty (first render): fill the height it can grow to, not the
    // height it has, or the first view shows a few rows and blank space until scrolled.
    const maxH = parseFloat(getComputedStyle(wrap).maxHeight);
    const view = Math.max(wrap.clientHeight, isFinite(maxH) ? maxH : window.innerHeight);
    const first = Math.max(0, Math.floor(wrap.scrollTop / ROW_H) - OVERSCAN);
    const last = Math.min(sorted.length, Math.ceil((wrap.scrollTop + view) / ROW_H) + OVERSCAN);
    if (!force && first === shownRange[0] && last === shownRange[1]) return;
    shownRange = [first, last];
    const frag = document.createDocumentFragment();
    frag.append(spacer(first * ROW_H));
    for (let i = first; i < last; i++) frag.append(tableRow(sorted[i]));
    frag.append(spacer((sorted.length - last) * ROW_H));
    if (!sorted.length) {
      const tr = el("tr", "empty");
      const td = el("td", "text", "No row matches the filters.");
      td.colSpan = TABLE_COLS.length;
      tr.append(td);
      frag.append(tr);
    }
    $("table").tBodies[0].replaceChildren(frag);
    $("table-count").textContent = `(${fmtInt(sorted.length)} rows)`;
  }

  function wireTable() {
    const wrap = $("table-wrap");
    const body = $("table").tBodies[0];
    let queued = false;
    wrap.addEventListener("scroll", () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        renderTable(false);
      });
    });
    const rowOf = (e) => e.target.closest && e.target.closest("tr.row");
    body.addEventListener("change", (e) => {
      const tr = rowOf(e);
      if (tr && !toggleCompare(Number(tr.dataset.id))) e.target.checked = false;
    });
    body.addEventListener("mouseover", (e) => {
      const tr = rowOf(e);
      const id = tr ? Number(tr.dataset.id) : null;
      if (id !== state.hoverId) {
        state.hoverId = id;
        scheduleDraw();
      }
    });
    body.addEventListener("mouseleave", () => {
      state.hoverId = null;
      scheduleDraw();
    });
  }

  // ---------------------------------------------------------------- energy label
  // The card of joulebench.report.label (same layout, px from the top left), built as SVG
  // elements whose strings are set with textContent, so a name is always text; serialised
  // by the browser (which escapes it) and downloaded. Works offline.
  function labelText(x, y, text, size, color, weight) {
    return { kind: "text", x, y, text: printable(text), size, color, weight: weight || "normal" };
  }

  // Text as joulebench.safe_text.printable writes it on the `label` command's cards: every
  // character Python's str.isprintable rejects (controls such as NUL, bidi overrides and
  // other format characters, separators but the space, lone surrogates, unassigned code
  // points) as its visible escape (\x00, \u202e): the SVG stays well-formed XML, and a
  // reader sees that something was there instead of text drawn reversed.
  const UNPRINTABLE = /[\p{C}\p{Z}]/u;
  function printable(text) {
    let out = "";
    for (const ch of String(text)) {
      if (ch === " " || !UNPRINTABLE.test(ch)) {
        out += ch;
        continue;
      }
      const cp = ch.codePointAt(0);
      const [prefix, digits] = cp < 0x100 ? ["\\x", 2] : cp < 0x10000 ? ["\\u", 4] : ["\\U", 8];
      out += prefix + cp.toString(16).padStart(digits, "0");
    }
    return out;
  }

  function labelItems(r) {
    const INK = "#1d2330", MUTED = "#5c6675";
    const cut = (t, n) => (t.length <= n ? t : t.slice(0, n - 1) + "…");
    const t = (v) => printable(v === null || v === undefined || v === "" ? "–" : String(v));
    const e1k = r.energy * 1000;
    const half = (ciOf(r).hi - r.energy) * 1000;
    const ej = (j) => (!isFinite(j) ? "–" : j >= 1000 ? sig(j / 1000, 3) + " kJ" : sig(j, 3) + " J");
    const items = [
      { kind: "rect", x: 1, y: 1, w: 378, h: 234, fill: "#ffffff", stroke: "#aab3c0" },
      labelText(14, 22, "ENERGY LABEL · joulebench", 10, MUTED, "bold"),
      labelText(14, 44, cut(t(r.model), 44), 15, INK, "bold"),
      labelText(14, 62, cut(`${t(r.device_label)} · ${t(r.method)} · batch ${t(r.batch_size_requested)}`, 56), 11, INK),
    ];
    META.grades.forEach((g, i) => {
      const y = 74 + i * 17, mine = g === r.grade;
      items.push({ kind: "rect", x: 14, y, w: 34 + 10 * i, h: 14, fill: GRADE_COLORS[g], stroke: mine ? INK : "none" });
      items.push(labelText(18, y + 11, g, 10, i >= 3 ? "#ffffff" : INK, "bold"));
      if (mine) items.push(labelText(54 + 10 * i, y + 11, "◀", 11, INK, "bold"));
    });
    if (!r.grade) items.push(labelText(14, 206, "no grade", 9, MUTED));
    const date = t(String(r.start_time_utc || "").slice(0, 10) || "date unknown");
    items.push(
      labelText(150, 90, "Energy per 1,000 images", 10, MUTED),
      labelText(150, 114, `${ej(e1k)} ± ${ej(half)}`, 18, INK, "bold"),
      labelText(150, 131, `(${sig(e1k / 3600, 3)} Wh; ± is the 95% CI)`, 10, MUTED),
      labelText(150, 154, cut(`Top-1 ${r.acc.toFixed(1)} % (${t(r.accuracy_source)})`, 34), 11, INK),
      labelText(150, 176, r.est ? "ESTIMATE (power model)" : "measured (energy counter)", 10, r.est ? "#b45309" : INK, "bold"),
      labelText(150, 192, cut(`meter ${t(r.meter)}`, 38), 9, MUTED),
      labelText(150, 206, cut(t(r.device_name || r.device_label), 38), 9, MUTED),
      labelText(14, 226, `${date} · ${t(META.generated_by)} · grade within its device, method and batch`, 9, MUTED)
    );
    return items;
  }

  function labelSvg(r) {
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    const attrs = (node, a) => Object.entries(a).forEach(([k, v]) => node.setAttribute(k, String(v)));
    attrs(svg, { width: 380, height: 236, viewBox: "0 0 380 236", "font-family": "DejaVu Sans, Arial, sans-serif" });
    for (const it of labelItems(r)) {
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

  function downloadLabel(r) {
    const name = String(r.model || "model").replace(/[^A-Za-z0-9_.-]+/g, "_");
    download(`joulebench-label-${name}.svg`, [labelSvg(r)], "image/svg+xml");
  }

  // ---------------------------------------------------------------- CSV download
  function csvCell(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    let s = String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s; // a spreadsheet must not read a name as a formula
    return /[",\r\n]/.test(s) || s !== s.trim() ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  // The CSV as a list of chunks (a Blob takes them as they are): 300,000 rows never become
  // one string. A column of distinct values formats each value once.
  function csvParts(rows) {
    const cells = COLUMNS.map((c) => {
      const col = COLS[c];
      if (!col.values) return (r) => csvCell(r[c]);
      const text = col.values.map(csvCell);
      return col.codes ? (r) => text[col.codes[r.id]] : () => text[0] || "";
    });
    const parts = [COLUMNS.map(csvCell).join(",") + "\r\n"];
    const CHUNK_ROWS = 5000;
    for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
      const lines = [];
      for (const r of rows.slice(start, start + CHUNK_ROWS)) lines.push(cells.map((cell) => cell(r)).join(","));
      parts.push(lines.join("\r\n") + "\r\n");
    }
    return parts;
  }

  function download(filename, parts, type = "text/csv;charset=utf-8") {
    const url = URL.createObjectURL(new Blob(parts, { type }));
    const a = el("a");
    a.href = url;
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
  }

  // ---------------------------------------------------------------- page text
  function describe() {
    const distinct = (col) => {
      const all = COLS[col].values || ROWS.map((r) => r[col]); // a dictionary: its values
      return new Set(all.filter((v) => v !== null && v !== undefined));
    };
    const models = distinct("model").size;
    const devices = [...distinct("device_label")];
    const methods = [...distinct("method")];
    const LISTED = 12; // labels named in the sentence; the facets list every one
    const list = (values) => [
      ...values.slice(0, LISTED).flatMap((v, i) => (i ? [", ", U(v)] : [U(v)])),
      values.length > LISTED ? ` and ${fmtInt(values.length - LISTED)} more` : "",
    ];
    $("overview").replaceChildren(
      words(
        `${fmtInt(ROWS.length)} rows: ${fmtInt(models)} models, `,
        `${devices.length} device${devices.length === 1 ? "" : "s"} (`,
        ...list(devices),
        `), ${methods.length} method${methods.length === 1 ? "" : "s"} (`,
        ...list(methods),
        `). Energy per image is ${META.energy_kind === "dynamic" ? "the energy above idle" : "the total energy, idle included"}.`
      )
    );
    $("estimate-banner").hidden = !ROWS.some((r) => r.est);
    const t = META.grade_thresholds;
    const letters = Object.keys(t);
    $("grade-bands").textContent =
      letters.map((g) => `${g} ≥ ${t[g]}`).join(", ") +
      `, ${META.grades[META.grades.length - 1]} below ${t[letters[letters.length - 1]]}`;
    $("reference-model").textContent = META.reference_model ? str(META.reference_model) : "none set";
    $("reference-model").classList.add("u");
  }

  // ---------------------------------------------------------------- start
  // A failure while starting is said on the page (a blank page says nothing) and in the
  // console; the page then stays without data-ready.
  function showStartupError(err) {
    const box = $("startup");
    box.textContent = "The page could not start: " + (err && err.message ? `${err.name}: ${err.message}` : String(err));
    box.classList.add("error");
    box.hidden = false;
    document.documentElement.setAttribute("data-error", "true");
  }

  // Milliseconds from navigation start at each stage of the start, on <html> for the
  // benchmark (bench/bench_webapp.py): script (the HTML parsed), data (decoded), ready.
  const startedMs = { script: performance.now() };

  try {
    load();
    startedMs.data = performance.now();
    describe();
    buildFacets();
    buildTableHead();
    wireControls();
    wireSliders();
    window.addEventListener("hashchange", applyHash);
    wireTable();
    wirePlot();
    resizeCanvas();
    renderCompare();
    if (location.hash.length > 1) applyHash();
    else syncSliders();
    update();
    startedMs.ready = performance.now();
    for (const [k, v] of Object.entries(startedMs)) document.documentElement.setAttribute(`data-${k}-ms`, v.toFixed(1));
    $("startup").hidden = true;
    started = true;
    document.documentElement.setAttribute("data-ready", "true");
  } catch (err) {
    showStartupError(err);
    throw err;
  }
})();
