/* joulebench web page, start and update: reads the study (data.loadStudy), builds the
   panels, plot and tables, and on every change works out what is on show (data.viewOf)
   and hands it to each. The compared rows are kept here; the settings live in the controls
   (panels.readSettings) and in the URL. */
(function (D, url, dom, jbPlot, jbTable, panels) {
  "use strict";
  const { $ } = dom;
  // Milliseconds from navigation start at each stage of the start, on <html> for the
  // benchmark (bench/bench_webapp.py): script (the HTML parsed), data (decoded), ready.
  const startedMs = { script: performance.now() };
  let study = null, plot = null, table = null;
  let view = null; // what is on show (data.viewOf) and the settings it was made with
  let compare = []; // row ids, in the order picked

  // A change event after the input event it follows (the search box losing focus to a
  // click) asks for the same view: drawing it again would replace the button under the
  // pointer between mousedown and mouseup, and the click would be lost.
  function update() {
    const settings = panels.readSettings();
    const key = viewKey(settings);
    if (view && view.key === key) return;
    panels.syncSliders(study, settings.filters);
    const next = D.viewOf(study, settings.filters);
    view = { ...next, settings, key };
    const fmt = D.energyFormat(study.units, settings.unit);
    const { points, rows } = view;
    $("plot").setAttribute("data-visible-count", String(points.length));
    $("plot").setAttribute("data-mode", view.best ? "best" : "all");
    const noPoint = rows.length - points.length;
    const budget = settings.filters.budget;
    $("counts").textContent = view.best
      ? `${D.fmtInt(points.length)} models at their least-energy configuration` +
        (isNaN(budget) ? "" : ` within ${D.sig(budget, 3)} ms per batch`)
      : `${D.fmtInt(points.length)} of ${D.fmtInt(study.plottable)} points shown` +
        (noPoint ? ` · ${D.fmtInt(noPoint)} matching rows are not plotted: failed, or no energy or top-1 (table only)` : "");
    plot.show(view, settings);
    table.show(rows, fmt);
    jbTable.renderBest(study, view, budget, fmt, (r) => panels.downloadLabel(study, r));
    renderCompare();
    writeHash();
  }
  const updateSoon = dom.oncePerFrame(update);

  // The colouring or the unit changed: the same rows, drawn and written anew.
  function lookChanged() {
    const settings = panels.readSettings();
    const unitChanged = settings.unit !== view.settings.unit;
    view = { ...view, settings, key: viewKey(settings) };
    plot.show(view, settings);
    if (unitChanged) {
      const fmt = D.energyFormat(study.units, settings.unit);
      table.show(view.rows, fmt);
      jbTable.renderBest(study, view, settings.filters.budget, fmt, (r) => panels.downloadLabel(study, r));
      renderCompare();
    }
    writeHash();
  }

  function viewKey(settings) {
    return url.encodeView(panels.viewState(settings)) + "|" + settings.unit;
  }

  function writeHash() {
    const want = url.encodeView(panels.viewState(view.settings));
    if (want !== location.hash) history.replaceState(null, "", location.pathname + location.search + want);
  }

  function applyHash() {
    panels.applyView(url.decodeView(location.hash, panels.FACETS.map(([col]) => col)));
    updateSoon();
  }

  // ---------------------------------------------------------------- compare
  // Pick or drop a row; false when the comparison is full.
  function toggleCompare(id) {
    const at = compare.indexOf(id);
    const most = study.palette.compare.length;
    if (at >= 0) compare.splice(at, 1);
    else if (compare.length >= most) {
      $("compare-count").textContent = `(at most ${most}: remove one first)`;
      return false;
    } else compare.push(id);
    renderCompare();
    table.setPicked(compare);
    plot.setCompare(compare);
    return true;
  }

  function renderCompare() {
    const fmt = D.energyFormat(study.units, view ? view.settings.unit : "j");
    panels.renderCompare(study, compare.map((id) => study.rows[id]), fmt, toggleCompare);
  }

  function download(name, rows) {
    dom.download(name, D.csvParts(study, rows));
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

  function start() {
    const tag = $("jb-data");
    study = D.loadStudy(JSON.parse(tag.textContent));
    tag.textContent = ""; // the rows now live in typed arrays: let the text go
    startedMs.data = performance.now();
    panels.describe(study);
    panels.wireControls(study, {
      filters: updateSoon,
      look: lookChanged,
      csv: () => download("joulebench-rows.csv", table.rows()),
      compareCsv: () => download("joulebench-compare.csv", compare.map((id) => study.rows[id])),
      compareClear: () => {
        compare = [];
        renderCompare();
        table.setPicked(compare);
        plot.setCompare(compare);
      },
    });
    window.addEventListener("hashchange", applyHash);
    table = jbTable.createTable(study, { table: $("table"), wrap: $("table-wrap"), count: $("table-count") }, {
      pick: toggleCompare,
      hover: (id) => plot.setHover(id),
    });
    const els = { plot: $("plot"), canvas: $("canvas"), card: $("card"), legend: $("legend") };
    plot = jbPlot.createPlot(study, els, { pick: toggleCompare });
    plot.resize();
    if (location.hash.length > 1) panels.applyView(url.decodeView(location.hash, panels.FACETS.map(([col]) => col)));
    update();
    const redraw = () => {
      plot.resize();
      plot.draw();
    };
    if (window.ResizeObserver) new ResizeObserver(redraw).observe($("plot"));
    else window.addEventListener("resize", redraw);
  }

  try {
    start();
    startedMs.ready = performance.now();
    for (const [k, v] of Object.entries(startedMs)) document.documentElement.setAttribute(`data-${k}-ms`, v.toFixed(1));
    $("startup").hidden = true;
    document.documentElement.setAttribute("data-ready", "true");
  } catch (err) {
    showStartupError(err);
    throw err;
  }
})(jbData, jbUrl, jbDom, jbPlot, jbTable, jbPanels);
