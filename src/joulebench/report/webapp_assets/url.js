/* joulebench web page, URL state: the view (filters, budget, colouring, ticked facets) as the
   address's hash and back, so a view can be shared and restored (also from file://). Labels
   are percent-encoded by URLSearchParams. No DOM: panels.js reads and sets the controls. */
const jbUrl = (function () {
  "use strict";
  // the hash's key of each typed input, by the input's id
  const INPUTS = [
    ["q", "search"],
    ["top1_min", "acc-min"],
    ["top1_max", "acc-max"],
    ["energy_min", "energy-min"],
    ["energy_max", "energy-max"],
    ["latency_max_ms", "latency-budget"],
  ];

  // `view`: { inputs: input id -> text, bestOnly, showPredicted (false: predictions hidden),
  // colorBy, facets: column -> Set of the ticked keys (absent or undefined: all ticked) } ->
  // "#..." ("" for the default view).
  function encodeView(view) {
    const p = new URLSearchParams();
    for (const [k, id] of INPUTS) {
      const v = String(view.inputs[id] || "").trim();
      if (v) p.set(k, v);
    }
    if (view.bestOnly) p.set("best", "1");
    if (view.showPredicted === false) p.set("pred", "0");
    if (view.colorBy !== "grade") p.set("color", view.colorBy);
    for (const [col, allowed] of Object.entries(view.facets)) {
      if (!allowed) continue;
      if (!allowed.size) p.append("f." + col, "");
      for (const k of allowed) p.append("f." + col, k);
    }
    const text = p.toString();
    return text ? "#" + text : "";
  }

  // The view a hash names, for the facet columns given: facets column -> Set of the keys to
  // tick, or null for all of them.
  function decodeView(hash, facetColumns) {
    const p = new URLSearchParams(String(hash).replace(/^#/, ""));
    const inputs = Object.fromEntries(INPUTS.map(([k, id]) => [id, p.get(k) || ""]));
    const facets = {};
    for (const col of facetColumns) {
      const key = "f." + col;
      facets[col] = p.has(key) ? new Set(p.getAll(key).filter(Boolean)) : null;
    }
    return { inputs, bestOnly: p.get("best") === "1", showPredicted: p.get("pred") !== "0", colorBy: p.get("color") === "family" ? "family" : "grade", facets };
  }

  return { INPUTS, encodeView, decodeView };
})();
if (typeof module === "object" && module.exports) module.exports = jbUrl;
