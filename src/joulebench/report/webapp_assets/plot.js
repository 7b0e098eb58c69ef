/* joulebench web page, plot: top-1 against energy per image on a canvas, its legend and the
   hover card. A Plot (createPlot) owns everything it keeps between draws (its size, the
   base layer, where each point was drawn, the hovered and compared rows); the page hands it
   the rows on show (data.viewOf) and hears of clicks through a callback. */
const jbPlot = (function (D, dom) {
  "use strict";
  const { el, label, words, U, str, badge } = dom;
  const HIT_RADIUS_PX = 9;
  const POINT_RADIUS_PX = 3.6;
  const M = { l: 62, r: 18, t: 14, b: 46 }; // margins, px

  // ---------------------------------------------------------------- scales and ticks
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

  // The axes' ranges: the points on show with a little room (log10 energy, top-1); a
  // prediction's whole interval is on show.
  function domains(points) {
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const r of points) {
      const lo = r.pred && r.lo > 0 ? Math.log10(r.lo) : Math.log10(r.energy);
      const hi = r.pred && r.hi > 0 ? Math.log10(r.hi) : Math.log10(r.energy);
      if (lo < x0) x0 = lo;
      if (hi > x1) x1 = hi;
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

  // The plot's frame: size, margins and the scales from data to pixels.
  function plotFrame(box, points) {
    const W = box.w, H = box.h;
    const pw = W - M.l - M.r, ph = H - M.t - M.b;
    const d = domains(points);
    return {
      W, H, pw, ph, d,
      sx: (e) => M.l + ((Math.log10(e) - d.x0) / (d.x1 - d.x0)) * pw,
      sy: (a) => M.t + (1 - (a - d.y0) / (d.y1 - d.y0)) * ph,
    };
  }

  // ---------------------------------------------------------------- point styles
  // How points are drawn: the colour bucket a row falls in (its grade, or its family where
  // that has a colour of its own), filled (measured) or hollow (estimated), and a rank:
  // batches are drawn highest rank first, so grade A and coloured families end on top.
  // styleOf(r) is a small number, worked out per distinct grade or family.
  function pointStyles(study, colorBy) {
    const { palette, meta, cols } = study;
    const buckets = []; // { color, rank }
    let bucketOf;
    if (colorBy === "family") {
      const colored = [...study.familyColor.entries()];
      colored.forEach(([, color]) => buckets.push({ color, rank: 0 }));
      buckets.push({ color: palette.other, rank: 99 });
      const index = new Map(colored.map(([f], k) => [f, k]));
      bucketOf = D.perValue(cols.family, (f) => (index.has(f) ? index.get(f) : colored.length));
    } else {
      meta.grades.forEach((g, k) => buckets.push({ color: palette.grade[g], rank: k + 1 }));
      buckets.push({ color: palette.no_grade, rank: 99 });
      const graded = (g) => Object.prototype.hasOwnProperty.call(palette.grade, g);
      bucketOf = D.perValue(cols.grade, (g) => (graded(g) ? meta.grades.indexOf(g) : meta.grades.length));
    }
    const styles = buckets.flatMap((b) => [0, 1].map((hollow) => ({ ...b, hollow: hollow === 1 })));
    // a prediction has no grade: by grade it takes the predictions' own colour
    const predColor = (r) => (colorBy === "family" ? buckets[bucketOf(r.id)].color : palette.predicted);
    return { styles, styleOf: (r) => 2 * bucketOf(r.id) + (r.est ? 1 : 0), predColor };
  }

  // ---------------------------------------------------------------- rasterised points
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
            const inner = Math.max(0, R - bands[kind]) ** 2, outer = (R + bands[kind]) ** 2;
            for (let s = 0; s < 16; s++) {
              const x = dx + ((s % 4) + 0.5) / 4 - fx, y = dy + (Math.floor(s / 4) + 0.5) / 4 - fy;
              const dd = x * x + y * y;
              if (dd <= R * R) fill++;
              if (dd >= inner && dd <= outer) line++;
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

  // Points composited into `image` (the plot area, `box` in device px), source-over and
  // straight alpha as the canvas would: per batch, the union of its discs filled 85 %
  // opaque, then the union of their outlines (for estimated energies the rings alone).
  // 300,000 canvas arcs take seconds; this a fraction of one.
  function pointRaster(cache, image, box, dpr) {
    const size = box.w * box.h;
    if (cache.dpr !== dpr) Object.assign(cache, { dpr, masks: pointMasks(dpr) });
    if (cache.size !== size) {
      const buffers = { fill: new Float32Array(size), line: new Float32Array(size), touched: new Int32Array(size) };
      // fill, line: zero again after each batch; seen: the last stamp on each pixel
      Object.assign(cache, { size, ...buffers, seen: new Int32Array(size), batches: 0 });
    }
    const { masks, fill, line, touched, seen } = cache;
    const data = image.data;
    const over = (k, rgb, alpha) => {
      if (alpha <= 0) return;
      const o = 4 * k, below = (data[o + 3] / 255) * (1 - alpha), a = alpha + below;
      data[o] = (rgb[0] * alpha + data[o] * below) / a;
      data[o + 1] = (rgb[1] * alpha + data[o + 1] * below) / a;
      data[o + 2] = (rgb[2] * alpha + data[o + 2] * below) / a;
      data[o + 3] = a * 255;
    };
    function batch(style, xs, ys) {
      const rgb = rgbOf(style.color), lineRgb = style.hollow ? rgb : [0, 0, 0];
      const lineAlpha = style.hollow ? 1 : 0.35;
      const kind = masks[style.hollow ? "hollow" : "filled"];
      const serial = 16 * ++cache.batches;
      let n = 0;
      for (let i = 0; i < xs.length; i++) {
        const X = xs[i] * dpr - box.x, Y = ys[i] * dpr - box.y;
        if (!(X > -20 && Y > -20 && X < box.w + 20 && Y < box.h + 20)) continue;
        const cx = Math.floor(X), cy = Math.floor(Y);
        const phase = Math.min(3, Math.floor((X - cx) * 4)) + 4 * Math.min(3, Math.floor((Y - cy) * 4));
        // the same mask at the same place again adds nothing to the union: skip it
        const centre = cx >= 0 && cy >= 0 && cx < box.w && cy < box.h ? cy * box.w + cx : -1;
        if (centre >= 0) {
          if (seen[centre] === serial + phase) continue;
          seen[centre] = serial + phase;
        }
        const m = kind[phase];
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

  // ---------------------------------------------------------------- the plot
  // study: data.loadStudy; els: { plot, canvas, card, legend }; on: { pick(id) }. A Plot
  // keeps what it needs between draws: its size, the base layer, where each point is
  // drawn, the compared and hovered rows.
  class Plot {
    #study;
    #els;
    #box = { w: 0, h: 0 }; // CSS px
    #view = { best: false, points: [], bestFronts: new Map() };
    #fronts = []; // the fronts on show (data.frontsOnShow), each with its colour
    #look = { colorBy: "grade", unit: "j" };
    #stale = true; // what is on show changed: the base layer is drawn again
    #layer = { canvas: null, frame: null }; // the base layer and the frame it was drawn in
    #raster = { dpr: 0, size: 0 }; // pointRaster's masks and buffers
    #px = new Float32Array(0); // where points[i] is drawn, CSS px
    #py = new Float32Array(0);
    #pointAt; // row id -> index in points, -1 when not on show
    #compare = []; // row ids, in the order picked
    #hoverId = null;
    #drawSoon = dom.oncePerFrame(() => this.draw());

    constructor(study, els, on) {
      this.#study = study;
      this.#els = els;
      this.#pointAt = new Int32Array(study.rows.length).fill(-1);
      const at = (e) => {
        const b = els.canvas.getBoundingClientRect();
        return [e.clientX - b.left, e.clientY - b.top];
      };
      els.canvas.addEventListener("mousemove", (e) => {
        const [x, y] = at(e);
        const i = this.#nearest(x, y);
        this.setHover(i < 0 ? null : this.#view.points[i].id);
        this.#showCard(i, x, y);
      });
      els.canvas.addEventListener("mouseleave", () => {
        this.setHover(null);
        els.card.hidden = true;
      });
      els.canvas.addEventListener("click", (e) => {
        const i = this.#nearest(...at(e));
        if (i >= 0) on.pick(this.#view.points[i].id);
      });
    }

    get #fmtEnergy() {
      return D.energyFormat(this.#study.units, this.#look.unit);
    }

    // Follow the plot's box (and the screen's pixel ratio); nothing is drawn when unchanged.
    resize() {
      const { plot, canvas } = this.#els;
      const dpr = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round(plot.clientWidth * dpr)), h = Math.max(1, Math.round(plot.clientHeight * dpr));
      if (this.#box.w === plot.clientWidth && this.#box.h === plot.clientHeight && canvas.width === w && canvas.height === h) return;
      this.#box = { w: plot.clientWidth, h: plot.clientHeight };
      this.#stale = true;
      canvas.width = w;
      canvas.height = h;
    }

    // What is on show (data.viewOf) and how (colorBy, unit): drawn at once, legend too.
    show(view, look) {
      for (const r of this.#view.points) this.#pointAt[r.id] = -1;
      this.#view = view;
      this.#look = { colorBy: look.colorBy, unit: look.unit };
      view.points.forEach((r, i) => (this.#pointAt[r.id] = i));
      this.#fronts = D.frontsOnShow(this.#study, view);
      this.#stale = true;
      this.draw();
      renderLegend(this.#els.legend, this.#study, view, look.colorBy, this.#fronts);
    }

    // The hovered row (from the plot or from the table); null: none.
    setHover(id) {
      if (id === this.#hoverId) return;
      this.#hoverId = id;
      this.#drawSoon();
    }

    setCompare(ids) {
      this.#compare = [...ids];
      this.#drawSoon();
    }

    // Two layers: the base (axes, fronts, every point), drawn again only when what is on
    // show changes, and the marks (compared and hovered rows) over a copy of it, so a hover
    // over 300,000 points redraws a few rings, not the points.
    draw() {
      const canvas = this.#els.canvas, layer = this.#layer;
      if (this.#box.w === 0) this.resize();
      const dpr = canvas.width / Math.max(1, this.#box.w);
      if (!layer.canvas || layer.canvas.width !== canvas.width || layer.canvas.height !== canvas.height) {
        layer.canvas = document.createElement("canvas");
        layer.canvas.width = canvas.width;
        layer.canvas.height = canvas.height;
        this.#stale = true;
      }
      if (this.#stale) {
        layer.frame = plotFrame(this.#box, this.#view.points);
        const bctx = layer.canvas.getContext("2d");
        bctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        this.#drawBase(bctx, layer.frame, dpr);
        this.#stale = false;
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
      this.#drawMarks(ctx, layer.frame);
      ctx.restore();
    }

    #drawBase(ctx, f, dpr) {
      ctx.clearRect(0, 0, f.W, f.H);
      this.#drawAxes(ctx, f);
      this.#drawAxisTitles(ctx, f);
      ctx.save();
      ctx.beginPath();
      ctx.rect(M.l, M.t, f.pw, f.ph);
      ctx.clip();
      drawFronts(ctx, f, this.#fronts);
      const { predColor } = pointStyles(this.#study, this.#look.colorBy);
      drawPredicted(ctx, f, this.#view.points.filter((r) => r.pred), predColor);
      ctx.restore();
      this.#drawPoints(ctx, f, dpr);
      if (!this.#view.points.length) {
        ctx.fillStyle = "#5c6675";
        ctx.font = "14px system-ui, sans-serif";
        ctx.textAlign = "center";
        ctx.fillText(this.#study.rows.length ? "No point matches the filters." : "No rows in this study.", f.W / 2, f.H / 2);
      }
    }

    // Grid lines and tick labels: log energy (x), linear top-1 (y).
    #drawAxes(ctx, { pw, ph, d, sy }) {
      ctx.font = "12px system-ui, sans-serif";
      ctx.lineWidth = 1;
      ctx.strokeStyle = "#eceff3";
      ctx.fillStyle = "#5c6675";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      // ticks at round values of the unit shown (the unit switch), placed on the J axis
      const unit = this.#look.unit;
      const shift = unit === "j" ? 0 : Math.log10(this.#study.units[unit].factor);
      const fmt = this.#fmtEnergy;
      for (const shown of logTicks(d.x0 + shift, d.x1 + shift)) {
        const v = shown - shift;
        const x = Math.round(M.l + ((v - d.x0) / (d.x1 - d.x0)) * pw) + 0.5;
        ctx.beginPath();
        ctx.moveTo(x, M.t);
        ctx.lineTo(x, M.t + ph);
        ctx.stroke();
        // J ticks carry their prefix (mJ, µJ); other units are named once, in the axis title
        ctx.fillText(shift ? D.sig(Math.pow(10, shown), 3) : fmt(Math.pow(10, v)), x, M.t + ph + 6);
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
    #drawAxisTitles(ctx, { H, pw, ph }) {
      const { meta, units } = this.#study, points = this.#view.points, unit = this.#look.unit;
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillStyle = "#1d2330";
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      const measured = points.filter((r) => !r.pred);
      const anyEst = measured.some((r) => r.est);
      const allEst = anyEst && measured.every((r) => r.est);
      const estNote = allEst ? ", estimated" : anyEst ? ", partly estimated: hollow points" : "";
      const u = units[unit];
      const what = unit === "j" ? "Energy per image (J" : `Energy (${u.axis} ${u.per}`;
      ctx.fillText(`${what}, ${D.energyWord(meta)}${D.scopeWord(meta)}, log scale${estNote})`, M.l + pw / 2, H - 4);
      ctx.save();
      ctx.translate(14, M.t + ph / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.textBaseline = "middle";
      ctx.fillText("Top-1 accuracy (%)", 0, 0);
      ctx.restore();
    }

    // Every point on show, in batches of one style, rasterised into the plot area; also
    // fills px/py, where the hover and click look points up.
    #drawPoints(ctx, { sx, sy, pw, ph }, dpr) {
      const points = this.#view.points, n = points.length;
      const { styles, styleOf } = pointStyles(this.#study, this.#look.colorBy);
      const px = (this.#px = new Float32Array(n)), py = (this.#py = new Float32Array(n));
      const style = new Uint16Array(n), start = new Int32Array(styles.length + 1);
      // predictions are drawn apart (drawPredicted), under the measured points
      for (let i = 0; i < n; i++) {
        const r = points[i];
        px[i] = sx(r.energy);
        py[i] = sy(r.acc);
        if (r.pred) continue;
        style[i] = styleOf(r);
        start[style[i] + 1]++;
      }
      for (let k = 0; k < styles.length; k++) start[k + 1] += start[k];
      // the points grouped by style (a counting sort), each batch a slice
      const xs = new Float32Array(n), ys = new Float32Array(n), next = start.slice(0, -1);
      for (let i = 0; i < n; i++) {
        if (points[i].pred) continue;
        const j = next[style[i]]++;
        xs[j] = px[i];
        ys[j] = py[i];
      }
      const area = { x: Math.round(M.l * dpr), y: Math.round(M.t * dpr), w: Math.round(pw * dpr), h: Math.round(ph * dpr) };
      if (!n || area.w <= 0 || area.h <= 0) return;
      const image = ctx.getImageData(area.x, area.y, area.w, area.h);
      const paint = pointRaster(this.#raster, image, area, dpr);
      const used = styles.map((s, k) => k).filter((k) => start[k + 1] > start[k]);
      for (const k of used.sort((a, b) => styles[b].rank - styles[a].rank)) {
        paint.batch(styles[k], xs.subarray(start[k], start[k + 1]), ys.subarray(start[k], start[k + 1]));
      }
      ctx.putImageData(image, area.x, area.y);
    }

    // Compared rows: a ring in their comparison colour and their name; the hovered one: a
    // dark ring.
    #drawMarks(ctx, { pw }) {
      const index = (id) => (id === null || this.#pointAt[id] < 0 ? undefined : this.#pointAt[id]);
      const px = this.#px, py = this.#py;
      ctx.font = "600 11.5px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      const right = M.l + pw; // the plot area's right edge
      this.#compare.forEach((id, k) => {
        const i = index(id);
        if (i === undefined) return;
        ring(ctx, px[i], py[i], 7, this.#study.palette.compare[k], 2.5);
        nameTag(ctx, this.#study.rows[id].model || "", px[i], py[i], right);
      });
      const h = index(this.#hoverId);
      if (h !== undefined) ring(ctx, px[h], py[h], 6.5, "#111", 2);
    }

    #nearest(x, y) {
      const px = this.#px, py = this.#py;
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

    #showCard(i, x, y) {
      const card = this.#els.card;
      if (i < 0) {
        card.hidden = true;
        return;
      }
      fillCard(card, this.#study, this.#view.points[i], this.#fmtEnergy);
      card.hidden = false;
      const w = card.offsetWidth, h = card.offsetHeight;
      const left = x + 16 + w > this.#box.w ? Math.max(0, x - 16 - w) : x + 16;
      const top = Math.max(0, Math.min(y - h / 2, this.#box.h - h));
      card.style.left = left + "px";
      card.style.top = top + "px";
    }
  }

  const createPlot = (study, els, on) => new Plot(study, els, on);

  // The Pareto front of every comparison group that has a point on show (data.frontsOnShow),
  // as a staircase in the front's colour; dashed where the group's energies are estimates.
  // Grey ones (past the palette) first, so the coloured ones lie on top.
  function drawFronts(ctx, { sx, sy }, fronts) {
    ctx.lineWidth = 2;
    for (const { rows: f, color, est } of [...fronts].reverse()) {
      ctx.strokeStyle = color;
      ctx.setLineDash(est ? [6, 4] : []);
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

  // Predictions: each a horizontal bar over its interval (with end ticks) and a hollow
  // ring on white at its point, in its colour; never joined to a front. Measured points are
  // drawn over them.
  function drawPredicted(ctx, { sx, sy }, rows, colorOf) {
    const byColor = new Map();
    for (const r of rows) {
      const c = colorOf(r);
      if (!byColor.has(c)) byColor.set(c, []);
      byColor.get(c).push(r);
    }
    const R = POINT_RADIUS_PX + 0.6;
    for (const [color, rs] of byColor) {
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      for (const r of rs) {
        if (!(r.lo > 0 && r.hi > 0)) continue;
        const y = Math.round(sy(r.acc) - 0.5) + 0.5, x0 = sx(r.lo), x1 = sx(r.hi); // crisp
        ctx.moveTo(x0, y);
        ctx.lineTo(x1, y);
        ctx.moveTo(x0, y - 3);
        ctx.lineTo(x0, y + 3);
        ctx.moveTo(x1, y - 3);
        ctx.lineTo(x1, y + 3);
      }
      ctx.stroke();
      ctx.fillStyle = "#fff";
      ctx.lineWidth = 1.6;
      for (const r of rs) {
        ctx.beginPath();
        ctx.arc(sx(r.energy), sy(r.acc), R, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
    }
  }

  function ring(ctx, x, y, r, color, width) {
    ctx.beginPath();
    ctx.arc(x, y, r, 0, 2 * Math.PI);
    ctx.lineWidth = width;
    ctx.strokeStyle = color;
    ctx.stroke();
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

  // ---------------------------------------------------------------- legend and card
  function renderLegend(box, study, view, colorBy, fronts) {
    const { meta, palette, familyColor } = study;
    const points = view.points;
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
    const measured = points.filter((r) => !r.pred);
    if (colorBy === "grade") {
      const counts = {};
      for (const r of measured) counts[r.grade || ""] = (counts[r.grade || ""] || 0) + 1;
      for (const g of meta.grades) key(palette.grade[g], `${g} (${counts[g] || 0})`);
      if (counts[""]) key(palette.no_grade, `no grade (${counts[""]})`);
    } else {
      const counts = new Map();
      for (const r of points) counts.set(r.family, (counts.get(r.family) || 0) + 1);
      for (const [f, c] of familyColor) if (counts.has(f)) key(c, `(${counts.get(f)})`, null, f);
      const rest = [...counts].filter(([f]) => !familyColor.has(f));
      const n = rest.reduce((s, [, c]) => s + c, 0);
      if (n) key(palette.other, `${rest.length} other famil${rest.length === 1 ? "y" : "ies"} (${n})`);
    }
    if (measured.some((r) => r.est)) key(null, "hollow: estimated energy", "hollow");
    const predicted = points.length - measured.length;
    if (predicted) {
      const level = D.num(points.find((r) => r.pred).pi_level);
      const pct = isNaN(level) ? "" : ` (${D.sig(100 * level, 3)} % interval)`;
      const s = el("span", "key pred-key");
      const i = el("i", "pred");
      i.style.setProperty("--pc", colorBy === "grade" ? palette.predicted : "#555");
      s.append(i, el("span", null, `hollow with a bar: predicted${pct}, not measured (${D.fmtInt(predicted)}; a grade range, never a grade)`));
      box.append(s);
    }
    legendFronts(box, study, view, fronts);
  }

  // One entry per front on show, its line in its colour and its group named; past the
  // palette, one entry for the grey rest.
  function legendFronts(box, study, view, fronts) {
    if (!fronts.length) return;
    const what = view.best ? "Energy-optimal front" : "Pareto front";
    const line = el("div", "fronts");
    line.setAttribute("data-fronts", String(fronts.length));
    line.append(el("span", "fronts-title", fronts.length === 1 ? `${what}:` : `${what}s (${fronts.length}):`));
    const colored = fronts.filter((f) => f.color !== study.palette.other);
    for (const f of colored) {
      const s = el("span", "key front");
      const i = el("i", "line");
      i.style.borderTopColor = f.color;
      i.style.borderTopStyle = f.est ? "dashed" : "solid";
      s.append(i, dom.words(...f.label));
      line.append(s);
    }
    const rest = fronts.length - colored.length;
    if (rest) {
      const s = el("span", "key front");
      const i = el("i", "line");
      i.style.borderTopColor = study.palette.other;
      s.append(i, `${rest} more in grey: pick a device, method or batch size to tell them apart`);
      line.append(s);
    }
    box.append(line);
  }

  // The hover card: a row's numbers, their uncertainty and provenance.
  function fillCard(card, study, r, fmtEnergy) {
    if (r.pred) return fillPredictedCard(card, study, r, fmtEnergy);
    const { num, sig, fmtPct, fmtNum, fmtCount, fmtGflops } = D;
    card.replaceChildren(label("div", "name", r.model));
    const badges = el("div", "badges");
    badges.append(dom.gradeChip(r.grade, study.palette.grade));
    if (r.on_front === true) badges.append(badge("front", "on the front"));
    if (r.est) badges.append(badge("est", "estimated"));
    if (r.flags) badges.append(badge("flag u", D.flagList(r, study.flags).join(", ")));
    card.append(badges);
    const { dl, add } = definitions();
    add(`Energy / image (${r.dyn ? "above idle" : "total"})`, fmtEnergy(r.energy) + (r.est ? " (estimated)" : ""));
    add("95% CI", D.fmtCi(r, fmtEnergy) + (D.ciClipped(r, study.flags) ? " (lower bound clipped at 0)" : ""));
    add("CV over repeats", D.fmtCv(r) + (r.repeats ? ` (${r.repeats} repeats)` : ""));
    const other = r.dyn ? num(r.energy_per_image_j) : num(r.dynamic_energy_per_image_j);
    add(r.dyn ? "Total energy" : "Above idle", fmtEnergy(other));
    add("Top-1", r.accuracy_source ? words(fmtPct(r.acc), " (", U(r.accuracy_source), ")") : fmtPct(r.acc));
    add("Top-5", fmtPct(num(r.top5)));
    add("Throughput", fmtNum(r.throughput_img_s) + " img/s");
    const busy = num(r.gpu_busy_fraction);
    const waits = D.hostBound(r, study.flags) ? " (host-bound: it waits on kernel launches)" : "";
    if (!isNaN(busy)) add("GPU busy", `${Math.round(busy * 100)}% of a step${waits}`);
    add("Latency / batch", isNaN(r.latency) ? "–" : `${sig(r.latency, 3)} ms (${r.latencyKind})`);
    add("Params · GFLOPs", `${fmtCount(r.params)} · ${fmtGflops(r.flops_per_image)}`);
    add("Efficiency index", fmtNum(r.efficiency_index, 3));
    add("Energy index", isNaN(num(r.energy_index)) ? "–" : words(`${sig(r.energy_index, 3)} × `, U(r.reference_model)));
    dl.append(el("div", "sep"));
    const run = dom.runText(r);
    run.append(r.batch_size !== r.batch_size_requested && r.batch_size ? ` (ran ${r.batch_size})` : "");
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

  // A card's list of terms: `add(term, text or node)`.
  function definitions() {
    const dl = el("dl");
    const add = (k, v) => {
      const dd = el("dd");
      dd.append(v instanceof Node ? v : String(v));
      dl.append(el("dt", null, k), dd);
    };
    return { dl, add };
  }

  // A prediction's card: what was predicted and how well such predictions held, its grade
  // range; nothing of a measurement (no CI, meter, host or versions: nothing ran).
  function fillPredictedCard(card, study, r, fmtEnergy) {
    const { num, fmtPct, fmtNum, fmtCount, fmtGflops } = D;
    card.replaceChildren(label("div", "name", r.model));
    const badges = el("div", "badges");
    badges.append(dom.gradeRangeChip(r.grade_range), badge("pred", "predicted"));
    if (r.est) badges.append(badge("est", "estimated energies in its group"));
    card.append(badges);
    const { dl, add } = definitions();
    add("Energy / image", `${fmtEnergy(r.energy)}: ${D.predictedWords(r, fmtEnergy)}`);
    add("Grade range", r.grade_range ? `${r.grade_range} (from its interval's ends; no grade)` : "–");
    const tLo = num(r.throughput_img_s_pi_low), tHi = num(r.throughput_img_s_pi_high);
    add("Throughput", `${fmtNum(r.throughput_img_s)} img/s` + (isNaN(tLo) ? "" : ` (${fmtNum(tLo)}–${fmtNum(tHi)})`));
    const cov = num(r.energy_cv_coverage);
    add("Checked", `${fmtNum(r.n_measured)} models measured in its group; held out, ${isNaN(cov) ? "–" : Math.round(100 * cov) + " %"} of them fell inside their interval`);
    add("Closest kin measured", str(r.kin));
    add("Top-1", r.accuracy_source ? words(fmtPct(r.acc), " (", U(r.accuracy_source), ")") : fmtPct(r.acc));
    add("Params · GFLOPs", `${fmtCount(r.params)} · ${fmtGflops(r.flops_per_image)}`);
    dl.append(el("div", "sep"));
    add("Run", dom.runText(r));
    if (r.score_note) add("Note", r.score_note);
    card.append(dl);
  }

  return { createPlot, linearTicks, logTicks };
})(jbData, jbDom);
