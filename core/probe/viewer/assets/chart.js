// "Error along the network": x = op order, y = the op's key error (log scale), the noise floor as a
// band, module calls shaded, suspects marked with their number; one line per rank/step series.
const ProbeChart = (function () {
  const { el, svgEl } = Probe;
  const PALETTE = ["#1f6feb", "#8250df", "#1a7f37", "#bf8700", "#cf222e", "#0a7f8f", "#6e7781", "#e16f24"];
  const fmt = (v) => (v === null || v === undefined ? "n/a" : Math.abs(v) >= 0.01 && Math.abs(v) < 1000 ? v.toPrecision(3) : v.toExponential(2));

  // nearest point of series s to order o (binary search)
  function nearest(s, o) {
    const xs = s.order;
    let lo = 0, hi = xs.length - 1;
    if (hi < 0) return -1;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (xs[mid] <= o) lo = mid; else hi = mid; }
    return Math.abs(xs[lo] - o) <= Math.abs(xs[hi] - o) ? lo : hi;
  }

  // host: element to draw into; data: chart data; opts.onPick(seriesIndex, pointIndex)
  function render(host, data, opts) {
    opts = opts || {};
    const visible = data.series.map((_, k) => k < 8);
    let marked = null; // [step, rank, node] of the node selected elsewhere (drawn as a ring)
    const box = el("div", { className: "chart-box" });
    const tip = el("div", { className: "chart-tip", hidden: true });
    const controls = el("div", { className: "chart-controls" });
    const shown = data.series.reduce((a, s) => a + s.order.length, 0), total = data.series.reduce((a, s) => a + s.total, 0);
    controls.append(
      el("strong", { text: "Error along the network" }),
      el("span", { className: "chart-note", text: ` y: ${data.metric} (log); green band: noise floor; grey bands: module calls; red: suspects` + (shown < total ? `; ${shown} of ${total} points drawn (every suspect and per-pixel maximum kept)` : "") }),
    );
    const toggles = el("span", { className: "chart-series", id: "chart-series" });
    data.series.forEach((s, k) => {
      const box = el("input", { type: "checkbox", checked: visible[k], dataset: { series: k } });
      box.onchange = () => { visible[k] = box.checked; draw(); };
      const swatch = el("span", { className: "swatch" });
      swatch.style.background = PALETTE[k % PALETTE.length];
      toggles.append(el("label", null, box, swatch, s.label));
    });
    if (data.series.length > 1) controls.append(toggles);
    const fold = el("button", { type: "button", id: "chart-fold", text: "Hide chart" });
    fold.onclick = () => { box.hidden = !box.hidden; tip.hidden = true; fold.textContent = box.hidden ? "Show chart" : "Hide chart"; if (!box.hidden) draw(); };
    controls.append(fold);
    host.replaceChildren(controls, box, tip);

    function draw() {
      if (box.hidden) return;
      const W = Math.max(box.clientWidth || 900, 300), H = Math.round(Math.min(230, Math.max(150, window.innerHeight * 0.24)));
      const m = { l: 58, r: 14, t: 22, b: 28 };
      const lane = m.t - 6; // NaN/inf lane at the top
      box.replaceChildren();
      const root = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart", id: "error-chart", role: "img" }, box);
      const vis = data.series.map((s, k) => [s, k]).filter(([s, k]) => visible[k] && s.order.length);
      if (!vis.length) { svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, root).textContent = "no series selected"; return; }
      let xmin = Infinity, xmax = -Infinity, vmin = Infinity, vmax = -Infinity;
      for (const [s] of vis) {
        xmin = Math.min(xmin, s.order[0]); xmax = Math.max(xmax, s.order[s.order.length - 1]);
        for (const arr of [s.error, s.floor]) for (const v of arr) if (v !== null && v > 0) { if (v < vmin) vmin = v; if (v > vmax) vmax = v; }
      }
      if (xmax <= xmin) xmax = xmin + 1;
      if (!(vmin < Infinity)) { vmin = 1e-8; vmax = 1; }
      let lo = Math.floor(Math.log10(vmin)), hi = Math.ceil(Math.log10(vmax));
      if (hi <= lo) hi = lo + 1;
      const left = m.l, right = W - m.r, top = m.t, bottom = H - m.b;
      const X = (o) => left + ((o - xmin) / (xmax - xmin)) * (right - left);
      const Y = (v) => (v === null || !(v > 0) ? bottom : bottom - ((Math.log10(v) - lo) / (hi - lo)) * (bottom - top));
      root.dataset.left = left; root.dataset.right = right; root.dataset.orderMin = xmin; root.dataset.orderMax = xmax;
      // floor and module bands of one series: the one of suspect 1 when shown, else the first shown
      const [first] = vis.find(([, k]) => k === data.primary) || vis[0];
      // module bands
      const bands = svgEl("g", { class: "bands" }, root);
      first.runs.forEach(([a, b, mod], k) => {
        if (k % 2) return;
        const x0 = X(a - 0.5), x1 = X(b + 0.5);
        const r = svgEl("rect", { x: Math.max(left, x0), y: top, width: Math.max(0.5, Math.min(right, x1) - Math.max(left, x0)), height: bottom - top, class: "band" }, bands);
        svgEl("title", null, r).textContent = first.runNames[mod];
      });
      // forward / backward
      const turn = first.backward.indexOf(1);
      if (turn > 0) {
        const x = X(first.order[turn] - 0.5);
        svgEl("line", { x1: x, x2: x, y1: lane, y2: bottom, class: "turn" }, root);
        svgEl("text", { x: x + 4, y: top + 10, class: "axis" }, root).textContent = "backward →";
      }
      // y axis: decades
      const stepDec = hi - lo > 8 ? 2 : 1;
      for (let d = lo; d <= hi; d += stepDec) {
        const y = Y(10 ** d);
        svgEl("line", { x1: left, x2: right, y1: y, y2: y, class: "grid" }, root);
        svgEl("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "axis" }, root).textContent = `1e${d}`;
      }
      svgEl("text", { x: 4, y: lane + 4, class: "axis nan" }, root).textContent = "NaN/inf";
      // x axis
      for (let k = 0; k <= 5; k++) {
        const o = xmin + ((xmax - xmin) * k) / 5, x = X(o);
        svgEl("text", { x, y: H - 10, "text-anchor": k === 0 ? "start" : k === 5 ? "end" : "middle", class: "axis" }, root).textContent = String(Math.round(o));
      }
      svgEl("text", { x: (left + right) / 2, y: H - 1, "text-anchor": "middle", class: "axis" }, root).textContent = "op order (forward, then backward)";
      // noise floor band, then the error lines
      for (const s of [first]) {
        let d = "", open = false, lastX = 0;
        s.order.forEach((o, i) => {
          const f = s.floor[i];
          if (f === null || !(f > 0)) { if (open) { d += `L${lastX},${bottom}Z`; open = false; } return; }
          const x = X(o), y = Y(f);
          d += open ? `L${x},${y}` : `M${x},${bottom}L${x},${y}`;
          open = true; lastX = x;
        });
        if (open) d += `L${lastX},${bottom}Z`;
        if (d) svgEl("path", { d, class: "floor" }, root);
      }
      for (const [s, k] of vis) {
        let d = "", pen = false; // pen: the path has started
        s.order.forEach((o, i) => {
          const v = s.error[i];
          if (v === null) return; // ops without a compared output: the line goes on to the next one
          d += `${pen ? "L" : "M"}${X(o).toFixed(1)},${Y(v).toFixed(1)}`;
          pen = true;
        });
        svgEl("path", { d, class: "line", stroke: PALETTE[k % PALETTE.length], "data-series": k }, root);
        s.nonfinite.forEach((bad, i) => {
          if (!bad) return;
          const x = X(s.order[i]);
          svgEl("path", { d: `M${x - 4},${lane - 6}L${x + 4},${lane - 6}L${x},${lane + 1}Z`, class: "nonfinite" }, root);
        });
      }
      // hover / click layer, under the markers
      const hit = svgEl("rect", { x: left, y: lane - 8, width: right - left, height: bottom - lane + 8, class: "hit" }, root);
      const cross = svgEl("line", { y1: lane - 8, y2: bottom, class: "cross", visibility: "hidden" }, root);
      const pick = (ev) => {
        const rect = root.getBoundingClientRect();
        const o = xmin + ((ev.clientX - rect.left - left) / (right - left)) * (xmax - xmin);
        const i = nearest(first, o);
        return i < 0 ? null : [data.series.indexOf(first), i];
      };
      hit.onmousemove = (ev) => {
        const p = pick(ev);
        if (!p) return;
        const s = data.series[p[0]], i = p[1];
        const x = X(s.order[i]);
        cross.setAttribute("x1", x); cross.setAttribute("x2", x); cross.setAttribute("visibility", "visible");
        tip.hidden = false;
        tip.replaceChildren(...[
          el("b", { text: s.node[i] }),
          el("div", { text: `#${Math.round(s.order[i])} ${s.backward[i] ? "backward" : "forward"} · ${s.label}` }),
          el("div", { text: `error ${s.nonfinite[i] ? "NaN/inf" : fmt(s.error[i])} · floor ${fmt(s.floor[i])}` }),
          s.module[i] ? el("div", { text: s.module[i] }) : null,
          s.suspect[i] ? el("div", { className: "tip-suspect", text: `suspect ${s.suspect[i]}` }) : null,
        ].filter(Boolean));
        const bx = box.getBoundingClientRect();
        tip.style.left = Math.min(x + 12, bx.width - 320) + "px";
        tip.style.top = "28px";
      };
      hit.onmouseleave = () => { tip.hidden = true; cross.setAttribute("visibility", "hidden"); };
      hit.onclick = (ev) => { const p = pick(ev); if (p && opts.onPick) opts.onPick(p[0], p[1]); };
      // the node selected in the graphs
      if (marked) {
        for (const [s] of vis) {
          if (s.step !== marked[0] || s.rank !== marked[1]) continue;
          const i = s.node.indexOf(marked[2]);
          if (i < 0) continue;
          const x = X(s.order[i]), y = s.nonfinite[i] || s.error[i] === null ? lane - 2 : Y(s.error[i]);
          svgEl("line", { x1: x, x2: x, y1: lane - 8, y2: bottom, class: "selected-line" }, root);
          svgEl("circle", { cx: x, cy: y, r: 6, class: "selected-point", "data-node": marked[2] }, root);
        }
      }
      // suspects
      for (const [s, k] of vis) {
        s.suspect.forEach((n, i) => {
          if (!n) return;
          const x = X(s.order[i]), y = s.nonfinite[i] || s.error[i] === null ? lane - 2 : Y(s.error[i]);
          const g = svgEl("g", { class: "suspect-marker", "data-suspect": n, "data-series": k, "data-order": s.order[i], "data-node": s.node[i], transform: `translate(${x.toFixed(1)},${y.toFixed(1)})` }, root);
          svgEl("circle", { r: 8 }, g);
          svgEl("text", { y: 3.5, "text-anchor": "middle" }, g).textContent = String(n);
          svgEl("title", null, g).textContent = `suspect ${n}: ${s.node[i]}`;
          g.onclick = () => opts.onPick && opts.onPick(k, i);
        });
      }
    }
    let timer = 0;
    window.addEventListener("resize", () => { clearTimeout(timer); timer = setTimeout(draw, 150); });
    draw();
    return { draw, mark: (step, rank, node) => { marked = [step, rank, node]; draw(); } };
  }

  // the ranked suspect list; onSuspect(number) when one is clicked
  function renderSuspects(list, data, onSuspect) {
    list.replaceChildren();
    if (!data.suspects.length) {
      list.append(el("li", { className: "none", text: data.verdict ? `verdict: ${data.verdict}; no suspect` : "no diagnosis in this page (probe view --diagnosis FILE, or probe diagnose --html)" }));
      return;
    }
    data.suspects.forEach((s, k) => {
      const li = el("li", { dataset: { suspect: k + 1, node: s.node } },
        el("span", { className: "num", text: String(k + 1) }),
        el("code", { text: s.node }),
        el("span", { className: "meta", text: ` ${s.kind}${s.score !== null ? ", score " + fmt(s.score) : ""}, step ${s.step}, rank ${s.rank}` }),
        el("div", { className: "evidence", text: s.evidence }));
      li.onclick = () => onSuspect(k + 1);
      list.append(li);
    });
  }

  // the series point of suspect number n (or null)
  function suspectPoint(data, n) {
    for (let k = 0; k < data.series.length; k++) {
      const i = data.series[k].suspect.indexOf(n);
      if (i >= 0) return [k, i];
    }
    return null;
  }
  return { render, renderSuspects, suspectPoint, fmt };
})();
