/* joulebench web page, tables: "All rows" (every row that passes the filters, sortable by any
   column, drawn only where scrolled into view, so 300,000 rows stay fast) and "Best
   configurations". A Table (createTable) owns its order, the rows drawn and the picked rows. */
const jbTable = (function (D, dom) {
  "use strict";
  const { $, el, str, label, badge } = dom;
  const ROW_H = 30; // px, fixed: the table renders only the rows scrolled into view
  const OVERSCAN = 12; // rows rendered above and below the view
  const BEST_SHOWN = 200; // rows of the best-configurations table; "All rows" holds every one
  const MODEL_MIN_W = 200; // px: the model column takes what the others leave, never less

  // Names (wrap: true) take up to two lines, breaking after . _ - /, the rest on hover.
  const TABLE_COLS = [
    { key: "pick", label: "", sort: false, w: 34 },
    { key: "model", label: "Model", text: true, wrap: true },
    { key: "family", label: "Family", text: true, wrap: true, w: 96 },
    { key: "device_label", label: "Device", text: true, wrap: true, w: 76 },
    { key: "method", label: "Method", text: true, wrap: true, w: 100 },
    { key: "batch_size_requested", label: "Batch", w: 56 },
    { key: "acc", label: "Top-1 %", w: 76, fmt: (r) => (isNaN(r.acc) ? "–" : r.acc.toFixed(2)) },
    { key: "energy", label: "Energy / image", w: 180 },
    { key: "throughput_img_s", label: "img/s", w: 64, fmt: (r) => D.fmtNum(r.throughput_img_s) },
    { key: "params", label: "Params", w: 70, fmt: (r) => D.fmtCount(r.params) },
    { key: "flops_per_image", label: "GFLOPs", w: 72, fmt: (r) => D.fmtGflops(r.flops_per_image) },
    { key: "grade", label: "Grade", text: true, w: 60 },
    { key: "efficiency_index", label: "Eff. index", w: 98, fmt: (r) => D.fmtNum(r.efficiency_index) },
    { key: "status", label: "Status", text: true, w: 132 },
  ];

  // study: data.loadStudy; els: { table, wrap, count }; on: { pick(id) -> false if refused,
  // hover(id or null) }. A Table keeps its order, the rows it lists and the picked rows.
  class Table {
    #study;
    #els;
    #sortKey = "efficiency_index"; // best first
    #sortDir = -1;
    #order = { key: null, dir: 0, rows: [] }; // every row in the order of a column
    #rows = []; // the rows listed, in order
    #shown = [-1, -1]; // the range drawn
    #picked = new Set();
    #fmtEnergy = D.fmtJoules;

    constructor(study, els, on) {
      this.#study = study;
      this.#els = els;
      this.#buildHead();
      const body = els.table.tBodies[0];
      els.wrap.addEventListener("scroll", dom.oncePerFrame(() => this.#render(false)));
      const rowAt = (e) => e.target.closest && e.target.closest("tr.row");
      body.addEventListener("change", (e) => {
        const tr = rowAt(e);
        if (tr && on.pick(Number(tr.dataset.id)) === false) e.target.checked = false;
      });
      body.addEventListener("mouseover", (e) => {
        const tr = rowAt(e);
        on.hover(tr ? Number(tr.dataset.id) : null);
      });
      body.addEventListener("mouseleave", () => on.hover(null));
    }

    // The rows to list (any order) and the energy format: listed from the top.
    show(visible, fmtEnergy) {
      this.#fmtEnergy = fmtEnergy;
      this.#keep(visible);
      this.#els.table.setAttribute("data-row-count", String(this.#rows.length));
      this.#render(true);
    }

    // The rows listed, in the table's order (what "Download filtered rows" writes).
    rows() {
      return this.#rows;
    }

    // The compared rows (ids): ticked and marked where drawn.
    setPicked(ids) {
      this.#picked = new Set(ids);
      for (const tr of this.#els.table.tBodies[0].querySelectorAll("tr.row")) {
        const on = this.#picked.has(Number(tr.dataset.id));
        tr.classList.toggle("picked", on);
        tr.querySelector("input").checked = on;
      }
    }

    // `visible` in the order of the sort column: every row's order is worked out once per
    // column and direction, then filtered, so a filter change sorts nothing.
    #keep(visible) {
      const order = this.#order;
      if (order.key !== this.#sortKey || order.dir !== this.#sortDir) {
        const rows = D.orderRows(this.#study.rows, this.#sortKey, this.#sortDir);
        this.#order = { key: this.#sortKey, dir: this.#sortDir, rows };
      }
      const keep = new Uint8Array(this.#study.rows.length);
      for (const r of visible) keep[r.id] = 1;
      this.#rows = this.#order.rows.filter((r) => keep[r.id]);
    }

    #sortBy(key, text) {
      this.#sortDir = this.#sortKey === key ? -this.#sortDir : text ? 1 : -1;
      this.#sortKey = key;
      this.#keep(this.#rows);
      this.#render(true);
    }

    #buildHead() {
      // fixed widths: the layout never waits for the rows; the table scrolls sideways
      // before the model column would narrow below MODEL_MIN_W
      const fixed = TABLE_COLS.reduce((sum, c) => sum + (c.w || 0), 0);
      this.#els.table.style.minWidth = fixed + MODEL_MIN_W + "px";
      const cols = el("colgroup");
      for (const c of TABLE_COLS) {
        const col = el("col");
        if (c.w) col.style.width = c.w + "px";
        cols.append(col);
      }
      this.#els.table.prepend(cols);
      const tr = this.#els.table.tHead.insertRow();
      for (const c of TABLE_COLS) {
        const th = el("th", c.text ? "text" : null);
        th.setAttribute("data-key", c.key);
        if (c.sort !== false) {
          const b = el("button", null, c.label);
          b.type = "button";
          b.addEventListener("click", () => this.#sortBy(c.key, c.text));
          th.append(b);
        }
        tr.append(th);
      }
    }

    #render(force) {
      const wrap = this.#els.wrap, rows = this.#rows;
      if (force) wrap.scrollTop = 0;
      for (const th of this.#els.table.tHead.rows[0].cells) {
        if (th.getAttribute("data-key") === this.#sortKey) th.setAttribute("aria-sort", this.#sortDir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      }
      // The wrap may still be empty (first render): fill the height it can grow to, not the
      // height it has, or the first view shows a few rows and blank space until scrolled.
      const maxH = parseFloat(getComputedStyle(wrap).maxHeight);
      const height = Math.max(wrap.clientHeight, isFinite(maxH) ? maxH : window.innerHeight);
      const first = Math.max(0, Math.floor(wrap.scrollTop / ROW_H) - OVERSCAN);
      const last = Math.min(rows.length, Math.ceil((wrap.scrollTop + height) / ROW_H) + OVERSCAN);
      if (!force && first === this.#shown[0] && last === this.#shown[1]) return;
      this.#shown = [first, last];
      const frag = document.createDocumentFragment();
      frag.append(spacer(first * ROW_H));
      for (let i = first; i < last; i++) frag.append(this.#rowOf(rows[i]));
      frag.append(spacer((rows.length - last) * ROW_H));
      if (!rows.length) {
        const tr = el("tr", "empty");
        const td = el("td", "text", "No row matches the filters.");
        td.colSpan = TABLE_COLS.length;
        tr.append(td);
        frag.append(tr);
      }
      this.#els.table.tBodies[0].replaceChildren(frag);
      this.#els.count.textContent = `(${D.fmtInt(rows.length)} rows)`;
    }

    #rowOf(r) {
      const tr = el("tr", "row" + (r.pred ? " predicted" : r.status !== "ok" ? " failed" : ""));
      tr.dataset.id = String(r.id);
      const picked = this.#picked.has(r.id);
      if (picked) tr.classList.add("picked");
      for (const c of TABLE_COLS) tr.append(cellOf(this.#study, r, c, picked, this.#fmtEnergy));
      return tr;
    }
  }

  const createTable = (study, els, on) => new Table(study, els, on);

  function cellOf(study, r, c, picked, fmtEnergy) {
    const td = el("td", c.text ? "text" : null);
    if (c.key === "pick") {
      const box = el("input");
      box.type = "checkbox";
      box.checked = picked;
      box.setAttribute("aria-label", "compare " + (r.model || ""));
      td.append(box);
    } else if (c.wrap) {
      td.classList.add(c.key === "model" ? "model" : "name");
      td.append(dom.wrapName(r[c.key]));
      td.setAttribute("title", str(r[c.key]));
    } else if (c.key === "energy" && r.pred) {
      td.append(fmtEnergy(r.energy), " ", badge("pred", "predicted"));
      td.setAttribute("title", D.predictedWords(r, fmtEnergy));
    } else if (c.key === "energy") {
      td.append(fmtEnergy(r.energy));
      if (!isNaN(D.ciOf(r).lo) && D.ciHalfPct(r)) {
        td.append(el("span", "ci", D.ciHalfPct(r)));
        const clipped = D.ciClipped(r, study.flags) ? " (lower bound clipped at 0)" : "";
        td.setAttribute("title", "95% CI " + D.fmtCi(r, fmtEnergy) + clipped);
      }
      if (r.est) td.append(" ", badge("est", "estimated"));
    } else if (c.key === "grade") {
      td.append(r.pred ? dom.gradeRangeChip(r.grade_range) : dom.gradeChip(r.grade, study.palette.grade));
    } else if (c.key === "status") {
      td.textContent = str(r.status);
      if (r.pred) td.setAttribute("title", D.predictedWords(r, fmtEnergy) + (r.score_note ? `\n${str(r.score_note)}` : ""));
      const flags = D.flagsInOrder(r, study.flags);
      if (flags.length) {
        const more = flags.length > 1 ? ` +${flags.length - 1}` : "";
        td.append(" ", badge("flag u", flags[0] + more));
        const said = (f) => [f, D.flagMeaning(f, study.flags)].filter(Boolean).join(": ");
        td.setAttribute("title", `${str(r.status)}, flagged:\n` + flags.map(said).join("\n"));
      }
    } else {
      td.textContent = c.fmt ? c.fmt(r) : str(r[c.key]);
      if (c.text) {
        td.classList.add("u");
        td.setAttribute("title", str(r[c.key]));
      }
    }
    return td;
  }

  function spacer(height) {
    const tr = el("tr", "spacer");
    const td = el("td");
    td.colSpan = TABLE_COLS.length;
    td.style.height = height + "px";
    tr.append(td);
    return tr;
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

  // The best-configurations section: each model's best row of `view` (data.viewOf), with
  // a button that downloads its energy label (onLabel(row)).
  function renderBest(study, view, budget, fmtEnergy, onLabel) {
    $("best-section").hidden = !view.best;
    const table = $("best-table");
    if (!view.best) {
      table.setAttribute("data-row-count", "0");
      return;
    }
    if (!table.tHead.rows.length) {
      const tr = table.tHead.insertRow();
      for (const [name, cls] of BEST_COLS) tr.append(el("th", cls || null, name));
    }
    const rows = D.bestTableOrder(view.points);
    const body = table.tBodies[0];
    body.replaceChildren(...rows.slice(0, BEST_SHOWN).map((r) => bestRow(study, r, fmtEnergy, onLabel)));
    table.setAttribute("data-row-count", String(rows.length));
    $("best-count").textContent =
      rows.length > BEST_SHOWN ? `(first ${BEST_SHOWN} of ${D.fmtInt(rows.length)}; all are in the table of rows below)` : `(${rows.length})`;
    const missing = D.modelsWithout(view.base, rows); // comparable rows, none within the budget
    $("best-note").textContent =
      "Each model at the configuration (method, batch size) spending the least energy per image" +
      (isNaN(budget) ? "" : ` within ${D.sig(budget, 3)} ms per batch`) +
      ", among the rows the filters keep and the score compares (flagged rows never count)." +
      (missing > 0 ? ` ${missing} model${missing === 1 ? " has" : "s have"} no configuration within the budget.` : "");
  }

  function bestRow(study, r, fmtEnergy, onLabel) {
    const tr = el("tr");
    tr.dataset.id = String(r.id);
    const energy = el("td", null, fmtEnergy(r.energy));
    if (D.ciHalfPct(r)) energy.append(el("span", "ci", D.ciHalfPct(r)));
    if (r.est) energy.append(" ", badge("est", "estimated"));
    const lat = el("td", null, isNaN(r.latency) ? "–" : `${D.sig(r.latency, 3)} (${r.latencyKind})`);
    const grade = el("td", "text");
    grade.append(dom.gradeChip(r.grade, study.palette.grade));
    const get = el("button", "label-svg", "SVG");
    get.type = "button";
    get.setAttribute("aria-label", "energy label of " + (r.model || "") + " (SVG)");
    get.addEventListener("click", () => onLabel(r));
    const labelCell = el("td", "text");
    labelCell.append(get);
    tr.append(
      label("td", "text model", r.model),
      label("td", "text", r.device_label),
      label("td", "text", r.method),
      el("td", null, str(r.batch_size_requested)),
      el("td", null, D.fmtPct(r.acc)),
      energy,
      lat,
      el("td", null, D.fmtNum(r.throughput_img_s)),
      grade,
      labelCell
    );
    return tr;
  }

  return { createTable, renderBest };
})(jbData, jbDom);
