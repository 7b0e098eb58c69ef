/* joulebench web page, data: the embedded study decoded into rows, and everything worked out
   from rows alone (ranges, fronts, best configurations, filters, order, flags, energy units,
   CSV, the energy label's layout). No DOM and no shared state: every function takes what it
   reads, so this file also runs under node (tests/test_webapp_data.py). */
const jbData = (function () {
  "use strict";
  const NONE_KEY = "(none)";
  const COLLATOR = new Intl.Collator(); // sorts text as localeCompare does, faster

  function num(v) {
    return typeof v === "number" && isFinite(v) ? v : NaN;
  }

  function keyOf(v) {
    return v === null || v === undefined || v === "" ? NONE_KEY : String(v);
  }

  // ---------------------------------------------------------------- decoding
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

  // One column: { get(row id) } and, for a column of distinct values, its values and codes.
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

  // ---------------------------------------------------------------- rows
  // A row holds the fields the page works out for it; every column is a getter on the
  // prototype that reads the decoded column, so r.model and r[c] work as on a plain object.
  // (Fields assigned one by one, in one order: every row then shares one compact shape.)
  function rowType(cols) {
    function Row(id) {
      this.id = id;
      this.est = false; // the energy is an estimate
      this.pred = false; // a prediction (source predicted), not a measurement
      this.lo = NaN; // a prediction's interval, J per image (pi_level)
      this.hi = NaN;
      this.dyn = false; // the energy is the one above idle
      this.energy = NaN; // the scored energy, J per image
      this.acc = NaN; // top-1, %
      this.plottable = false;
      this.comparable = false; // the score compared it: decisions may use it
      this.latency = NaN; // ms per batch
      this.latencyKind = ""; // p95, mean or derived
      this.bestKey = 0; // keys of the groups it is in (keysOf): numbers, or text
      this.bestGroup = 0;
      this.group = 0;
      this.searchText = null;
    }
    const own = Object.keys(new Row(0));
    Object.defineProperty(Row.prototype, "text", {
      get() {
        if (this.searchText === null) this.searchText = [this.model, this.family, this.architecture].join(" ").toLowerCase();
        return this.searchText;
      },
    });
    for (const [c, col] of Object.entries(cols)) {
      if (c in Row.prototype || own.includes(c)) throw new Error(`column ${c} clashes with the page's own`);
      const get = col.get;
      Object.defineProperty(Row.prototype, c, { get() { return get(this.id); } });
    }
    return Row;
  }

  // The rows the figures plot (report/figures.py, _has_point): status ok, a finite energy
  // above 0 and a finite top-1. A failed row that carries an energy is in the table only.
  // A prediction is plotted apart (hollow, with its interval), where its energy is the one
  // the page compares (its scored energy: none where it is not).
  const isPlottable = (r) => (r.status === "ok" || r.pred) && r.energy > 0 && !isNaN(r.acc);

  function makeRows(cols, meta) {
    const Row = rowType(cols);
    const rows = new Array(meta.rows);
    const estimateMeter = perValue(cols.meter, (v) => String(v || "").startsWith("estimate:"));
    const dynamic = perValue(cols.energy_kind, (v) => (v || meta.energy_kind) === "dynamic");
    for (let i = 0; i < rows.length; i++) {
      const r = new Row(i);
      r.est = r.energy_is_estimate === true || estimateMeter(i);
      r.dyn = dynamic(i);
      r.pred = r.source === "predicted";
      const fallback = r.pred ? null : r.dyn ? r.dynamic_energy_per_image_j : r.energy_per_image_j;
      r.energy = num(r.scored_energy_per_image_j ?? fallback);
      if (r.pred) [r.lo, r.hi] = [num(r.energy_per_image_j_pi_low), num(r.energy_per_image_j_pi_high)];
      r.acc = num(r.top1);
      r.plottable = isPlottable(r);
      // Decisions follow the score's rules: a row counts where the score stage scored it.
      r.comparable = r.scored === true && r.plottable;
      setLatency(r);
      rows[i] = r;
    }
    const est = { size: 2, at: (i) => (rows[i].est ? 1 : 0) };
    const keys = (c) => columnKeys(cols[c], rows.length);
    const [phase, device, model] = ["phase", "device_label", "model"].map(keys);
    const bestKey = keysOf([phase, device, est, model]);
    const bestGroup = keysOf([phase, device, est]);
    const group = keysOf(meta.score_group.map(keys)); // the score stage's comparison group
    for (const r of rows) {
      r.bestKey = bestKey(r.id);
      r.bestGroup = bestGroup(r.id);
      r.group = group(r.id);
    }
    return rows;
  }

  // fn of each row's value of a column: for a column of distinct values, once per value.
  function perValue(col, fn) {
    if (!col.values) return (i) => fn(col.get(i));
    const out = col.values.map(fn);
    return col.codes ? (i) => out[col.codes[i]] : () => out[0];
  }

  // A column's values numbered so that two rows share a number where keyOf of their values
  // is the same: { size, at(row id) }.
  function columnKeys(col, n) {
    const ids = new Map();
    const idOf = (v) => {
      const k = keyOf(v);
      if (!ids.has(k)) ids.set(k, ids.size);
      return ids.get(k);
    };
    if (col.values) {
      const at = perValue(col, idOf);
      return { size: ids.size, at };
    }
    const all = Int32Array.from({ length: n }, (_, i) => idOf(col.get(i)));
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

  // ---------------------------------------------------------------- the study
  // Everything the page reads from the embedded data, worked out once. The text it was read
  // from is not kept.
  function loadStudy(raw) {
    const meta = raw.meta;
    const cols = {};
    for (const c of raw.columns) cols[c] = decodeColumn(raw.data[c], meta.rows, c);
    const rows = makeRows(cols, meta);
    const palette = meta.palettes; // joulebench/palettes.py, shared with the figures
    return {
      meta,
      columns: raw.columns,
      cols,
      rows,
      palette,
      units: energyUnits(meta),
      flags: flagInfo(meta.flags),
      plottable: rows.filter((r) => r.plottable).length,
      predicted: rows.filter((r) => r.pred).length,
      fronts: makeFronts(rows),
      familyColor: familyColors(rows, palette.series),
      latRange: log10Range(rows.filter((r) => r.comparable).map((r) => r.latency)),
      accRange: accRange(rows.filter((r) => r.plottable).map((r) => r.acc)),
    };
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

  // Each score group's front (its rows on_front), by energy.
  function makeFronts(rows) {
    const fronts = new Map();
    for (const r of rows) {
      if (r.on_front !== true || !r.plottable) continue;
      if (!fronts.has(r.group)) fronts.set(r.group, []);
      fronts.get(r.group).push(r);
    }
    for (const f of fronts.values()) f.sort((a, b) => a.energy - b.energy || a.acc - b.acc);
    return fronts;
  }

  // A colour of its own for each of the families with the most points.
  function familyColors(rows, series) {
    const counts = new Map();
    for (const r of rows) if (r.plottable) counts.set(r.family, (counts.get(r.family) || 0) + 1);
    const top = [...counts.entries()]
      .filter(([f]) => f !== null && f !== undefined)
      .sort((a, b) => b[1] - a[1] || COLLATOR.compare(String(a[0]), String(b[0])))
      .slice(0, series.length);
    return new Map(top.map(([f], i) => [f, series[i]]));
  }

  // ---------------------------------------------------------------- filters and decisions
  // What the page shows: `filters` are { facets: column -> Set of keys (absent: all),
  // terms, accMin, accMax, eMin, eMax (NaN: none), budget (ms per batch, NaN: none), bestOnly,
  // predicted (false: predictions hidden) }.
  const bestMode = (filters) => !isNaN(filters.budget) || filters.bestOnly;

  // The filters as one test of a row; a facet's answer is worked out once per distinct value.
  function rowFilter(study, filters) {
    const tests = [];
    for (const [col, allowed] of Object.entries(filters.facets)) {
      if (!allowed) continue;
      const ok = perValue(study.cols[col], (v) => allowed.has(keyOf(v)));
      tests.push((r) => ok(r.id));
    }
    const { terms, accMin, accMax, eMin, eMax } = filters;
    if (filters.predicted === false) tests.push((r) => !r.pred);
    if (terms.length) tests.push((r) => terms.every((t) => r.text.includes(t)));
    if (!isNaN(accMin)) tests.push((r) => r.acc >= accMin);
    if (!isNaN(accMax)) tests.push((r) => r.acc <= accMax);
    if (!isNaN(eMin)) tests.push((r) => r.energy >= eMin);
    if (!isNaN(eMax)) tests.push((r) => r.energy <= eMax);
    return (r) => tests.every((test) => test(r));
  }

  // The rows on show: `base` passes the filters; `rows` are those or, in best mode, each
  // model's best configuration; `points` the plottable ones; `bestFronts` their fronts.
  function viewOf(study, filters) {
    const best = bestMode(filters);
    const base = study.rows.filter(rowFilter(study, filters));
    const rows = best ? bestOf(base, filters.budget) : base;
    const points = rows.filter((r) => r.plottable);
    return { best, base, rows, points, bestFronts: best ? frontsOf(points) : new Map() };
  }

  // Each model (per phase, device and kind of meter) once: its least-energy comparable
  // configuration within the latency budget (NaN: none), among `rows`.
  function bestOf(rows, budget) {
    const best = new Map();
    for (const r of rows) {
      if (!r.comparable) continue;
      if (!isNaN(budget) && !(r.latency <= budget)) continue;
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

  // The best configurations as their table lists them: by device, measured first, energy.
  function bestTableOrder(points) {
    const device = textRanks(points.map((r) => String(r.device_label)));
    const rank = (r) => device.get(String(r.device_label));
    return [...points].sort((a, b) => rank(a) - rank(b) || Number(a.est) - Number(b.est) || a.energy - b.energy);
  }

  // How many models the score compares in `base` have no configuration among `best`.
  function modelsWithout(base, best) {
    const have = new Set(base.filter((r) => r.comparable).map((r) => r.bestKey));
    return have.size - new Set(best.map((r) => r.bestKey)).size;
  }

  // ---------------------------------------------------------------- fronts on show
  // Each front on show (a comparison group with a point on show; in best mode, each group of
  // best configurations), told apart: in the order of their labels, each in its own colour of
  // the palette's fronts (grey past its end, said by the legend), dashed where its energies
  // are estimates. A label is a list of text and {label} parts (data, shown isolated).
  function frontsOnShow(study, view) {
    const fronts = view.best ? view.bestFronts : study.fronts;
    const keys = new Set(view.points.map((r) => (view.best ? r.bestGroup : r.group)));
    const phases = new Set(study.rows.map((r) => keyOf(r.phase))).size > 1;
    // what the group is made of: the score's group, or (best mode) phase, device and meter
    const by = view.best ? ["phase", "device_label", "energy_is_estimate"] : study.meta.score_group;
    const out = [];
    for (const key of keys) {
      const rows = fronts.get(key);
      if (rows) out.push({ key, rows, est: rows[0].est, label: frontLabel(rows[0], by, view.best, phases) });
    }
    const text = (f) => f.label.map((p) => (typeof p === "string" ? p : String(p.label))).join("");
    const batch = (f) => (view.best ? 0 : num(f.rows[0].batch_size_requested));
    out.sort((a, b) => {
      const [ra, rb] = [a.rows[0], b.rows[0]];
      const by = (k) => COLLATOR.compare(keyOf(ra[k]), keyOf(rb[k]));
      return by("phase") || by("device_label") || (view.best ? 0 : by("method")) || batch(a) - batch(b) || Number(a.est) - Number(b.est) || COLLATOR.compare(text(a), text(b));
    });
    const colors = study.palette.fronts;
    out.forEach((f, i) => (f.color = i < colors.length ? colors[i] : study.palette.other));
    return out;
  }

  // A front's name: the values of the columns its group is made of (`by`), the phase only
  // where the study has two.
  function frontLabel(r, by, best, phases) {
    const parts = [];
    const add = (part) => parts.push(...(parts.length ? [" · ", part] : [part]));
    if (by.includes("phase") && phases) add({ label: r.phase });
    if (by.includes("device_label")) add({ label: r.device_label });
    if (by.includes("method")) add({ label: r.method });
    if (by.includes("batch_size_requested")) add(`batch ${r.batch_size_requested}`);
    if (best) add("best configurations");
    if (by.includes("energy_is_estimate") && r.est) parts.push(" (estimated)");
    return parts;
  }

  // ---------------------------------------------------------------- what the rows say
  // How many energies are estimates, of the rows that have one: { est, of }.
  function estimateShare(rows) {
    let est = 0, of = 0;
    for (const r of rows) {
      if (!(r.energy > 0) || r.pred) continue;
      of++;
      if (r.est) est++;
    }
    return { est, of };
  }

  // The banner's first words: "All 30 energies here are estimates" or "12 of 30 ...".
  function estimateWords({ est, of }) {
    if (!est) return "";
    const all = est === of;
    const what = all ? (of === 1 ? "The one energy" : `All ${fmtInt(of)} energies`) : `${fmtInt(est)} of ${fmtInt(of)} energies`;
    const verb = est === 1 ? "is an estimate" : "are estimates";
    return `${what} here ${verb} from a power model, not readings of an energy counter.`;
  }

  // Why a row has no grade, from the note the score stage gave it (analysis.score
  // score_notes): its status, the flag that kept it off the front, or no energy or top-1.
  function ungradedReason(r) {
    const note = String(r.score_note || "");
    const m = /^(?:status (\S+?):|flagged ([^\s:(;]+)|(no energy)|(no top1))/.exec(note);
    if (!m) return "not graded";
    if (m[1]) return m[1];
    if (m[2]) return `flagged ${m[2]}`;
    return m[3] ? "without energy" : "without top-1";
  }

  // The measured rows graded, and the others counted by why, most first: { graded, of,
  // reasons: [[reason, n], ...], predicted } (predictions are never graded: counted apart).
  function gradedCount(rows) {
    const counts = new Map();
    let graded = 0, predicted = 0;
    for (const r of rows) {
      if (r.pred) predicted++;
      else if (r.grade) graded++;
      else counts.set(ungradedReason(r), (counts.get(ungradedReason(r)) || 0) + 1);
    }
    const reasons = [...counts].sort((a, b) => b[1] - a[1] || COLLATOR.compare(a[0], b[0]));
    return { graded, of: rows.length - predicted, reasons, predicted };
  }

  // ---------------------------------------------------------------- order
  function sortValue(r, key) {
    const v = r[key];
    if (key === "grade" || key === "status") return v || null; // grade A first when ascending
    if (typeof v === "number") return isFinite(v) ? v : null;
    return v === undefined || v === "" ? null : v;
  }

  // Each distinct text's rank in collation order (one sort of the distinct values).
  function textRanks(values) {
    const distinct = [...new Set(values)].sort(COLLATOR.compare);
    return new Map(distinct.map((v, k) => [v, k]));
  }

  // `rows` (ids 0..n-1) ordered by a column, dir 1 ascending, -1 descending; ties by id and
  // empty values last whatever the direction. Text sorts as localeCompare would.
  function orderRows(rows, key, dir) {
    let keys = rows.map((r) => sortValue(r, key));
    if (keys.some((v) => v !== null && typeof v !== "number")) {
      const rank = textRanks(keys.filter((v) => v !== null).map(String));
      keys = keys.map((v) => (v === null ? null : rank.get(String(v))));
    }
    const at = rows.map((_, k) => k).filter((k) => keys[k] !== null);
    at.sort((a, b) => (keys[a] - keys[b]) * dir || rows[a].id - rows[b].id);
    for (let k = 0; k < rows.length; k++) if (keys[k] === null) at.push(k);
    return at.map((k) => rows[k]);
  }

  // ---------------------------------------------------------------- flags
  // What the page knows of flags is the registry's (joulebench/flags.py, meta.flags): the
  // separator, each flag's meaning and whether it invalidates, and ci-clipped by its role
  // (the summary raises CI lower bounds below 0 J to 0 and flags the row, docs/scoring.md).
  function flagInfo(metaFlags) {
    const known = new Map(metaFlags.known.map((f) => [f.name, f]));
    return { separator: metaFlags.separator, known, ciClipped: metaFlags.ci_clipped, hostBound: metaFlags.host_bound };
  }
  function flagList(r, info) {
    const names = String(r.flags || "").split(info.separator).map((f) => f.trim());
    return [...new Set(names.filter(Boolean))];
  }
  const ciClipped = (r, info) => flagList(r, info).includes(info.ciClipped);
  const hostBound = (r, info) => flagList(r, info).includes(info.hostBound);
  const flagMeaning = (f, info) => (info.known.has(f) ? info.known.get(f).meaning : "");
  // says something about a row, never excludes it (an unknown flag might)
  const informative = (f, info) => info.known.has(f) && !info.known.get(f).invalidates;
  // the flag its score note names as what kept it off the front
  const offFrontFlag = (r) => (/flagged ([^\s:(;]+)/.exec(String(r.score_note || "")) || [])[1];

  // The flags as the table shows them: the one that kept it off the front first, the
  // informative ones last.
  function flagsInOrder(r, info) {
    const off = offFrontFlag(r);
    const key = (f) => (f === off ? 0 : informative(f, info) ? 2 : 1);
    return flagList(r, info).sort((a, b) => key(a) - key(b));
  }

  // ---------------------------------------------------------------- numbers and units
  const sig = (v, n) => String(Number(v.toPrecision(n)));
  const fmtInt = (n) => Number(n).toLocaleString("en-US");
  const fmtNum = (v, n = 3) => (isNaN(num(v)) ? "–" : sig(v, n));
  const fmtPct = (v) => (isNaN(num(v)) ? "–" : v.toFixed(2) + "%");
  const fmtGflops = (v) => (isNaN(num(v)) ? "–" : sig(v / 1e9, 3));

  function fmtCount(v) {
    v = num(v);
    if (isNaN(v)) return "–";
    if (v >= 1e9) return sig(v / 1e9, 3) + " B";
    if (v >= 1e6) return sig(v / 1e6, 3) + " M";
    if (v >= 1e3) return sig(v / 1e3, 3) + " k";
    return sig(v, 3);
  }

  function fmtJoules(j) {
    if (!isFinite(j)) return "–";
    if (j === 0) return "0 J";
    const a = Math.abs(j);
    if (a >= 1) return sig(j, 3) + " J";
    if (a >= 1e-3) return sig(j * 1e3, 3) + " mJ";
    if (a >= 1e-6) return sig(j * 1e6, 3) + " µJ";
    return sig(j * 1e9, 3) + " nJ";
  }

  // The unit switch: J per image, Wh or gCO2e (analysis.carbon's grid intensity x PUE) per
  // 1,000 images; `factor` converts J per image.
  function energyUnits(meta) {
    return {
      j: { axis: "J", per: "per image", factor: 1 },
      wh: { axis: "Wh", per: "per 1,000 images", factor: 1000 / 3600 },
      co2e: { axis: "gCO2e", per: "per 1,000 images, estimate", factor: 1000 * (meta.co2e_g_per_j || NaN) },
    };
  }

  // Every energy shown goes through the function this returns; filters stay in J.
  function energyFormat(units, unit) {
    if (unit === "j") return fmtJoules;
    const u = units[unit];
    return (j) => (isFinite(j * u.factor) ? sig(j * u.factor, 3) + " " + u.axis : "–");
  }

  function ciOf(r) {
    const stem = r.dyn ? "dynamic_energy_per_image" : "energy_per_image";
    return { lo: num(r[stem + "_ci95_low_j"]), hi: num(r[stem + "_ci95_high_j"]), cv: num(r[stem + "_cv"]) };
  }

  function fmtCi(r, fmtEnergy) {
    const c = ciOf(r);
    return isNaN(c.lo) || isNaN(c.hi) ? "–" : fmtEnergy(c.lo) + " to " + fmtEnergy(c.hi);
  }

  // "±x%": the 95% CI's half-width from its upper bound (the lower one may be clipped at 0).
  function ciHalfPct(r) {
    const hi = ciOf(r).hi;
    return isNaN(hi) || !(r.energy > 0) ? "" : ` ±${sig((100 * (hi - r.energy)) / r.energy, 2)}%`;
  }

  // A prediction as every view says it: "predicted (90 % interval 12 mJ–25 mJ), not measured".
  function predictedWords(r, fmtEnergy) {
    const level = num(r.pi_level);
    const pct = isNaN(level) ? "" : `${sig(100 * level, 3)} % `;
    const span = isNaN(r.lo) || isNaN(r.hi) ? "" : ` (${pct}interval ${fmtEnergy(r.lo)}–${fmtEnergy(r.hi)})`;
    return `predicted${span}, not measured`;
  }

  function fmtCv(r) {
    const pct = ciOf(r).cv * 100;
    if (isNaN(pct)) return "–";
    return (pct >= 10 ? pct.toFixed(0) : sig(pct, 2)) + "%"; // 104%, not 100%
  }

  const energyWord = (meta) => (meta.energy_kind === "dynamic" ? "above idle" : "total");
  const scopeWord = (meta) => (meta.energy_scope === "node" ? ", whole node: GPU+CPU+DRAM" : "");

  // ---------------------------------------------------------------- CSV
  function csvCell(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    let s = String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s; // a spreadsheet must not read a name as a formula
    return /[",\r\n]/.test(s) || s !== s.trim() ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  // The CSV of `rows`, every column, as a list of chunks (a Blob takes them as they are):
  // 300,000 rows never become one string. A column of distinct values formats each once.
  function csvParts(study, rows) {
    const cells = study.columns.map((c) => {
      const col = study.cols[c];
      if (!col.values) return (r) => csvCell(r[c]);
      const text = col.values.map(csvCell);
      return col.codes ? (r) => text[col.codes[r.id]] : () => text[0] || "";
    });
    const parts = [study.columns.map(csvCell).join(",") + "\r\n"];
    const CHUNK_ROWS = 5000;
    for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
      const lines = [];
      for (const r of rows.slice(start, start + CHUNK_ROWS)) lines.push(cells.map((cell) => cell(r)).join(","));
      parts.push(lines.join("\r\n") + "\r\n");
    }
    return parts;
  }

  // ---------------------------------------------------------------- energy label
  // Text as joulebench.safe_text.printable writes it on the `label` command's cards: every
  // character Python's str.isprintable rejects (controls such as NUL, bidi overrides and
  // other format characters, separators but the space, lone surrogates, unassigned code
  // points) as its visible escape (\x00, \u202e): the SVG stays well-formed XML, and a
  // reader sees that something was there instead of text drawn reversed.
  const UNPRINTABLE = /[\p{C}\p{Z}]/u;
  const SHORT_ESCAPES = { "\t": "\\t", "\n": "\\n", "\r": "\\r" }; // as unicode_escape
  function printable(text) {
    let out = "";
    for (const ch of String(text)) {
      if (ch === " " || !UNPRINTABLE.test(ch)) {
        out += ch;
        continue;
      }
      if (SHORT_ESCAPES[ch]) {
        out += SHORT_ESCAPES[ch];
        continue;
      }
      const cp = ch.codePointAt(0);
      const [prefix, digits] = cp < 0x100 ? ["\\x", 2] : cp < 0x10000 ? ["\\u", 4] : ["\\U", 8];
      out += prefix + cp.toString(16).padStart(digits, "0");
    }
    return out;
  }

  function labelText(x, y, text, size, color, weight) {
    return { kind: "text", x, y, text: printable(text), size, color, weight: weight || "normal" };
  }

  // The card of joulebench.report.label (same layout, px from the top left) as boxes and
  // texts, every text printable.
  function labelItems(study, r) {
    const { meta, palette } = study;
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
    meta.grades.forEach((g, i) => {
      const y = 74 + i * 17, mine = g === r.grade;
      items.push({ kind: "rect", x: 14, y, w: 34 + 10 * i, h: 14, fill: palette.grade[g], stroke: mine ? INK : "none" });
      items.push(labelText(18, y + 11, g, 10, palette.grade_ink[g], "bold"));
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
      labelText(14, 226, `${date} · ${t(meta.generated_by)} · grade within its device, method and batch`, 9, MUTED)
    );
    return items;
  }

  return {
    NONE_KEY,
    COLLATOR,
    num,
    keyOf,
    base64Bytes,
    decodeColumn,
    loadStudy,
    extent,
    log10Range,
    accRange,
    bestMode,
    perValue,
    rowFilter,
    viewOf,
    bestOf,
    frontsOf,
    bestTableOrder,
    modelsWithout,
    frontsOnShow,
    estimateShare,
    estimateWords,
    ungradedReason,
    gradedCount,
    textRanks,
    orderRows,
    flagInfo,
    flagList,
    flagMeaning,
    ciClipped,
    hostBound,
    offFrontFlag,
    flagsInOrder,
    sig,
    fmtInt,
    fmtNum,
    fmtPct,
    fmtGflops,
    fmtCount,
    fmtJoules,
    energyFormat,
    ciOf,
    fmtCi,
    ciHalfPct,
    predictedWords,
    fmtCv,
    energyWord,
    scopeWord,
    csvCell,
    csvParts,
    printable,
    labelItems,
  };
})();
if (typeof module === "object" && module.exports) module.exports = jbData;
