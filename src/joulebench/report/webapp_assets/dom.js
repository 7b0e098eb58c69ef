/* joulebench web page, DOM helpers. Every string from the data reaches the page through
   textContent or setAttribute, never innerHTML, so a model name is always text. Each label
   also sits in its own element with unicode-bidi: isolate (class "u"; words() builds
   sentences that hold labels), so a right-to-left override in a name cannot reverse the
   text around it. */
const jbDom = (function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const LABEL_MAX = 60; // characters of a label shown in a legend or chip; the rest on hover

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
  const clip = (v) => (str(v).length > LABEL_MAX ? str(v).slice(0, LABEL_MAX - 1) + "…" : str(v));
  // U(value) marks a label inside a sentence built by words(): it gets its own element.
  const U = (v) => ({ label: v });

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = balanced(String(text));
    return e;
  }

  // A sentence with labels in it: each U(value) is its own bidi-isolated element, so the
  // text copies cleanly and no label can reorder its neighbours.
  function words(...parts) {
    const s = el("span");
    for (const p of parts) {
      const isLabel = p !== null && typeof p === "object" && "label" in p;
      s.append(isLabel ? el("span", "u", str(p.label)) : String(p));
    }
    return s;
  }

  // "device · method · batch n", each label isolated.
  const runText = (r) => words(U(r.device_label), " · ", U(r.method), ` · batch ${str(r.batch_size_requested)}`);

  // One user string in its own bidi-isolated element (CSS .u), cut short with the full text
  // on hover when it is long.
  function label(tag, cls, text) {
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

  const badge = (kind, text) => el("span", "badge " + kind, text);

  // A name that may wrap (CSS .wrap2: at most two lines; its cell's title has the rest): a
  // line may break after each ".", "_", "-" or "/" (a <wbr>, so the text is unchanged).
  function wrapName(text) {
    const e = el("div", "wrap2 u");
    str(text)
      .split(/(?<=[._\-/])/)
      .forEach((part, k) => e.append(...(k ? [el("wbr"), part] : [part])));
    return e;
  }

  // A grade letter on its colour (`colors`: the palette's grade colours).
  function gradeChip(g, colors) {
    const s = el("span", "grade", g || "–");
    if (g) {
      s.style.background = colors[g];
      s.style.color = inkOn(colors[g]);
    }
    return s;
  }

  // A predicted row's grade range ("B–D"): outlined, never on a grade's colour, as it is no
  // grade; "–" where there is none.
  function gradeRangeChip(range) {
    const s = el("span", "grade grade-range", range || "–");
    s.setAttribute("title", range ? "grade range of a prediction: from its interval's low to its high energy, not a grade" : "no grade range");
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

  // A file made here (text chunks) saved through a link to a blob: no network involved.
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

  return { $, LABEL_MAX, balanced, str, clip, U, el, words, runText, label, inkOn, badge, wrapName, gradeChip, gradeRangeChip, debounce, oncePerFrame, download };
})();
