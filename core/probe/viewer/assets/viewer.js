// The graph viewer: two synced trees (target / golden), search, filters, details, manual matching,
// a step/rank selector, and the "error along the network" chart with the suspect list.
(function () {
  const { el, loadBlob, safeColor, fail } = Probe;
  let PAGE_META = null, CHART = null, current = -1, view = null, chartView = null;

  async function boot() {
    PAGE_META = await loadBlob("page-meta");
    CHART = await loadBlob("chart-data");
    const graphs = PAGE_META.graphs;
    const select = document.getElementById("graph-select");
    graphs.forEach((g, k) => select.append(el("option", { value: k, text: `step ${g.step}, rank ${g.rank}` })));
    document.getElementById("graph-picker").hidden = graphs.length < 2;
    select.onchange = () => showGraph(+select.value);
    if (CHART && CHART.series.length) setupChart();
    const v = await showGraph(PAGE_META.current || 0);
    // arrived from another page of the same db to open a node (see jump)
    if (location.hash.startsWith("#open=")) {
      try { const t = JSON.parse(decodeURIComponent(location.hash.slice(6))); v.jump(String(t.node), t.note ? String(t.note) : null); } catch (e) { /* not ours */ }
    }
  }
  boot().catch(fail);

  // graph k of the page (the one of (step, rank)), or -1
  function graphOf(step, rank) { return PAGE_META.graphs.findIndex((g) => g.step === step && g.rank === rank); }
  // graph k: decoded from this page, or (a db split into one page per graph) the page that has it
  async function showGraph(k, open) {
    if (k === current) return view;
    if (PAGE_META.pages && k !== (PAGE_META.current || 0)) {
      location.href = encodeURIComponent(PAGE_META.pages[k]) + (open ? "#open=" + encodeURIComponent(JSON.stringify(open)) : "");
      return null;
    }
    document.body.dataset.ready = "0";
    const data = await loadBlob("graph-" + k);
    current = k;
    document.getElementById("graph-select").value = String(k);
    view = main(data);
    document.body.dataset.ready = "1";
    return view;
  }
  // jump to `node` of graph (step, rank): both trees reveal and select it; `note` goes above the details
  async function jump(node, step, rank, note) {
    const k = graphOf(step, rank);
    if (k < 0) { document.getElementById("results-title").textContent = `step ${step}, rank ${rank} is not in this page`; return; }
    const v = await showGraph(k, { node, note });
    if (v) v.jump(node, note);
  }
  function setupChart() {
    document.getElementById("chart-panel").hidden = false;
    const noteOf = (n) => { const s = CHART.suspects[n - 1]; return s ? `suspect ${n} (${s.kind}): ${s.evidence}` : null; };
    chartView = ProbeChart.render(document.getElementById("chart-host"), CHART, {
      onPick: (k, i) => { const s = CHART.series[k]; jump(s.node[i], s.step, s.rank, s.suspect[i] ? noteOf(s.suspect[i]) : null); },
    });
    ProbeChart.renderSuspects(document.getElementById("suspect-list"), CHART, (n) => {
      const s = CHART.suspects[n - 1];
      for (const li of document.querySelectorAll("#suspect-list li")) li.classList.toggle("active", +li.dataset.suspect === n);
      jump(s.node, s.step, s.rank, noteOf(n));
    });
  }

  function main(DATA) {
  const META = Object.assign({}, PAGE_META.meta, DATA.meta);
  const COMPARE = META.graphType === "compare";
  const REVIEW = 0.8;  // automatic pairs below this confidence are marked for review
  const SIDES = Object.keys(DATA.sides);
  const PAGE = 400; // children rendered per "show more"
  const OVERFLOW_COLORS = { medium: "rgb(230,243,254)", high: "rgb(141,197,248)", critical: "rgb(22,104,220)" };
  const UNMATCHED = "#C7C7C7";
  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------- model
  const G = {};
  for (const side of SIDES) {
    const s = DATA.sides[side];
    const n = s.names.length;
    s.children = Array.from({ length: n }, () => []);
    s.index = new Map();
    s.lower = s.names.map((x) => x.toLowerCase());
    s.root = -1;
    for (let i = 0; i < n; i++) {
      s.index.set(s.names[i], i);
      if (s.parents[i] < 0) s.root = i; else s.children[s.parents[i]].push(i);
    }
    s.expanded = new Uint8Array(n);
    s.shown = new Int32Array(n).fill(PAGE);
    s.el = new Map(); // node index -> rendered .node element
    G[side] = s;
  }
  // worst verdict among the descendants of each node (1 pass, 2 warning, 3 error; 0 none), so a
  // collapsed parent never hides an error child
  const RANK = { pass: 1, warning: 2, error: 3 }, RANKED = [null, "pass", "warning", "error"];
  for (const side of SIDES) {
    const s = G[side], n = s.names.length;
    s.worst = new Uint8Array(n);
    if (!COMPARE || side !== "NPU") continue;
    const depth = new Int32Array(n);
    for (let i = 0; i < n; i++) { let d = 0; for (let p = s.parents[i]; p >= 0 && d <= n; p = s.parents[p]) d++; depth[i] = d; }
    const byDepth = Array.from({ length: n }, (_, i) => i).sort((a, b) => depth[b] - depth[a]);
    for (const i of byDepth) {
      const p = s.parents[i];
      if (p < 0) continue;
      const own = s.match[i] == null ? 0 : RANK[verdictOf(s.precision[i])] || 0;
      s.worst[p] = Math.max(s.worst[p], s.worst[i], own);
    }
  }
  const other = (side) => (side === "NPU" ? "Bench" : "NPU");
  const partner = (side, i) => {
    const name = G[side].match[i];
    const o = G[other(side)];
    return name != null && o ? o.index.get(name) : undefined;
  };
  const colorRanges = [];
  if (META.colors) {
    for (const [color, spec] of Object.entries(META.colors)) {
      if (spec && Array.isArray(spec.value) && spec.value.length === 2 && safeColor(color)) colorRanges.push([+spec.value[0], +spec.value[1], safeColor(color), String(spec.accuracy_level)]);
    }
  }
  function verdictOf(p) {
    if (p === null || p === undefined) return null;
    if (p >= 0.6) return "error";
    if (p >= 0.3) return "warning";
    return "pass";
  }
  function colorOf(side, i) {
    const s = G[side];
    if (state.overflowMode && s.overflow[i]) return OVERFLOW_COLORS[s.overflow[i]] || "#fff";
    if (!COMPARE || side !== "NPU") return "#fff";
    if (s.match[i] == null) return UNMATCHED;
    const p = s.precision[i];
    if (p === null || p === undefined) return "#fff";
    for (const [lo, hi, color] of colorRanges) if (p >= lo && (p < hi || (hi === 1 && p <= 1))) return color;
    return "#fff";
  }
  function label(side, i) {
    const s = G[side];
    const name = s.names[i];
    const parent = s.parents[i];
    if (parent < 0 || parent === s.root) return name;
    const parts = name.split(".");
    if (s.kinds[i] === "1") {
      const k = parts.length >= 3 && /^\d+$/.test(parts[parts.length - 2]) ? 3 : 2;
      return parts.slice(-k).join(".");
    }
    const k = parts.length >= 4 && /^\d+$/.test(parts[parts.length - 4]) ? 5 : 4;
    return parts.slice(-k).join(".");
  }

  // ---------------------------------------------------------------- state
  const state = { selected: null, overflowMode: false, pick: { NPU: null, Bench: null }, pairs: [] };

  // ---------------------------------------------------------------- rendering (lazy)
  const panes = {};
  function buildPanes() {
    const host = $("graphs");
    host.replaceChildren();
    for (const side of SIDES) {
      const pane = document.createElement("div");
      pane.className = "pane";
      pane.id = "pane-" + side;
      const title = side === "NPU" ? (COMPARE ? "Target (NPU)" : "Graph") : "Golden (Bench)";
      pane.append(el("h2", null, title + " ", el("span", { className: "badge", text: `${G[side].names.length} nodes` })));
      const tree = document.createElement("div");
      tree.className = "tree";
      pane.appendChild(tree);
      host.appendChild(pane);
      panes[side] = tree;
      tree.onclick = (ev) => onTreeClick(side, ev);
      const root = G[side].root;
      if (root >= 0) {
        tree.appendChild(renderNode(side, root));
        setExpanded(side, root, true, false);
      }
    }
  }
  function renderNode(side, i) {
    const s = G[side];
    const wrap = document.createElement("div");
    wrap.className = "node";
    wrap.dataset.i = i;
    const row = document.createElement("div");
    const kind = s.kinds[i] === "1" ? " api" : s.kinds[i] === "9" ? " collection" : "";
    row.className = "row" + kind;
    row.dataset.name = s.names[i];
    row.title = s.names[i];
    row.style.background = colorOf(side, i);
    const hasKids = s.children[i].length > 0;
    row.append(el("span", { className: "toggle", text: hasKids ? (s.expanded[i] ? "▾" : "▸") : "" }), el("span", { className: "label", text: label(side, i) }));
    if (s.overflow[i]) row.append(el("span", { className: "badge", title: "overflow level", text: s.overflow[i] }));
    if (s.dist[i]) row.append(el("span", { className: "badge", text: "comm" }));
    if (s.auto && s.auto[i] != null) {  // --auto-match: a pair made automatically, low confidence marked for review
      const review = s.auto[i] < REVIEW;
      if (review) row.classList.add("review");
      row.append(el("span", { className: "badge auto" + (review ? " review" : ""), title: s.autoWhy[i] || "", text: `${review ? "review" : "auto"} ${s.auto[i].toFixed(2)}` }));
    }
    const own = s.match[i] == null ? 0 : RANK[verdictOf(s.precision[i])] || 0;
    if (hasKids && s.worst[i] > 1 && s.worst[i] > own) {
      const v = RANKED[s.worst[i]];
      row.append(el("span", { className: "badge inside " + v, title: `a node inside is ${v}`, dataset: { inside: v }, text: `${v} inside` }));
    }
    wrap.appendChild(row);
    s.el.set(i, wrap);
    if (s.expanded[i]) renderChildren(side, i, wrap);
    return wrap;
  }
  function renderChildren(side, i, wrap) {
    const s = G[side];
    let box = wrap.querySelector(":scope > .children");
    if (box) box.remove();
    box = document.createElement("div");
    box.className = "children";
    const kids = s.children[i];
    const limit = Math.min(kids.length, s.shown[i]);
    const frag = document.createDocumentFragment();
    for (let k = 0; k < limit; k++) frag.appendChild(renderNode(side, kids[k]));
    box.appendChild(frag);
    if (limit < kids.length) {
      const more = document.createElement("div");
      more.className = "more";
      more.dataset.more = i;
      more.textContent = `show ${Math.min(PAGE, kids.length - limit)} more of ${kids.length - limit}…`;
      box.appendChild(more);
    }
    wrap.appendChild(box);
  }
  function forget(side, i) {
    const s = G[side];
    const stack = [...s.children[i]];
    while (stack.length) {
      const k = stack.pop();
      if (s.el.delete(k)) stack.push(...s.children[k]);
    }
  }
  function setExpanded(side, i, open, sync) {
    const s = G[side];
    if (!s.children[i].length || !!s.expanded[i] === open) return;
    s.expanded[i] = open ? 1 : 0;
    const wrap = s.el.get(i);
    if (wrap) {
      wrap.querySelector(":scope > .row .toggle").textContent = open ? "▾" : "▸";
      if (open) renderChildren(side, i, wrap);
      else { forget(side, i); const box = wrap.querySelector(":scope > .children"); if (box) box.remove(); }
    }
    if (sync && $("sync").checked) {
      const j = partner(side, i);
      if (j !== undefined) {
        const o = other(side);
        if (open) reveal(o, j, false); else setExpanded(o, j, false, false);
        if (open) setExpanded(o, j, true, false);
      }
    }
  }
  function onTreeClick(side, ev) {
    const more = ev.target.closest(".more");
    if (more) {
      const i = +more.dataset.more;
      G[side].shown[i] += PAGE;
      renderChildren(side, i, G[side].el.get(i));
      return;
    }
    const row = ev.target.closest(".row");
    if (!row) return;
    const i = +row.parentNode.dataset.i;
    if (ev.target.classList.contains("toggle")) setExpanded(side, i, !G[side].expanded[i], true);
    else select(side, i, true);
  }
  // expand all ancestors of i, make sure it is rendered (paging included)
  function reveal(side, i, sync) {
    const s = G[side];
    const chain = [];
    for (let p = s.parents[i]; p >= 0; p = s.parents[p]) chain.push(p);
    chain.reverse();
    let prev = -1;
    for (const p of chain) {
      if (prev >= 0) {
        const pos = s.children[prev].indexOf(p);
        if (pos >= s.shown[prev]) { s.shown[prev] = pos + 1; if (s.expanded[prev]) renderChildren(side, prev, s.el.get(prev)); }
      }
      setExpanded(side, p, true, sync);
      prev = p;
    }
    if (prev >= 0) {
      const pos = s.children[prev].indexOf(i);
      if (pos >= s.shown[prev]) { s.shown[prev] = pos + 1; renderChildren(side, prev, s.el.get(prev)); }
    }
    return s.el.get(i);
  }
  function select(side, i, fromClick, note) {
    for (const sd of SIDES) for (const r of panes[sd].querySelectorAll(".row.selected")) r.classList.remove("selected");
    const wrap = reveal(side, i, true);
    const j = partner(side, i);
    const o = other(side);
    let wrap2 = null;
    if (j !== undefined) wrap2 = reveal(o, j, false);
    for (const w of [wrap, wrap2]) if (w) {
      const row = w.querySelector(":scope > .row");
      row.classList.add("selected");
      row.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    state.selected = [side, i];
    showDetails(side, i, note);
    if (chartView) chartView.mark(META.step, META.rank, G[side].names[i]); // where it is along the network
    if (COMPARE && (G[side].match[i] == null || (G.NPU && G.NPU.auto))) pickForMatch(side, i);  // automatic pairs can be re-picked
  }

  // ---------------------------------------------------------------- details
  const STAT_KEYS = ["dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "md5"];
  const SKIP_KEYS = new Set(["type", "data_name", "Result", "Err_message", "Requires_grad Consistent", ...STAT_KEYS]);
  // Key metric columns first (after the name, which stays in view when the table scrolls sideways)
  function ioTable(title, npuData, benchData) {
    const nk = Object.keys(npuData), bk = Object.keys(benchData || {});
    if (!nk.length && !bk.length) return null;
    const metricCols = [];
    for (const k of nk) {
      const item = npuData[k];
      if (item && typeof item === "object") for (const c of Object.keys(item)) if (!SKIP_KEYS.has(c) && c !== "value" && !metricCols.includes(c)) metricCols.push(c);
    }
    const KEY_FIRST = ["Cosine", "MaxRelativeErr", "NormRelativeErr", "MaxAbsErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio"];
    metricCols.sort((a, b) => (KEY_FIRST.includes(a) ? KEY_FIRST.indexOf(a) : 99) - (KEY_FIRST.includes(b) ? KEY_FIRST.indexOf(b) : 99));
    const has = (data, keys, c) => keys.some((k) => data[k] && typeof data[k] === "object" && c in data[k]);
    const statCols = STAT_KEYS.filter((c) => has(npuData, nk, c) || (benchData && has(benchData, bk, c)));
    const key = ["Name", ...(COMPARE ? ["Result"] : []), ...metricCols];
    const head = [...key, ...(COMPARE ? ["Err_message"] : []), ...statCols.map((c) => "NPU " + c), ...(benchData ? ["Bench name", ...statCols.map((c) => "Bench " + c)] : [])];
    const tr = el("tr");
    head.forEach((h, k) => tr.append(el("th", { className: k < key.length ? "key" : "", text: h })));
    const body = el("tbody");
    const n = Math.max(nk.length, benchData ? bk.length : 0);
    const cell = (item, c) => (item && typeof item === "object" ? item[c] ?? (c === "Max" ? item.value : undefined) ?? "" : "");
    for (let r = 0; r < n; r++) {
      const a = nk[r] !== undefined ? npuData[nk[r]] : {}, b = benchData && bk[r] !== undefined ? benchData[bk[r]] : null;
      const row = el("tr");
      row.append(el("td", { text: nk[r] || "" }));
      if (COMPARE) { const res = String(cell(a, "Result")); row.append(el("td", { className: /^(pass|warning|error)$/.test(res) ? res : "", text: res })); }
      for (const c of metricCols) row.append(el("td", { text: cell(a, c) }));
      if (COMPARE) {
        let msg = String(cell(a, "Err_message"));
        try { const list = JSON.parse(msg); if (Array.isArray(list)) msg = list.join("; "); } catch (e) { /* keep the raw text */ }
        row.append(el("td", { text: msg }));
      }
      for (const c of statCols) row.append(el("td", { text: cell(a, c) }));
      if (benchData) {
        row.append(el("td", { text: bk[r] || "" }));
        for (const c of statCols) row.append(el("td", { text: cell(b, c) }));
      }
      body.append(row);
    }
    const frag = document.createDocumentFragment();
    frag.append(el("h4", { text: title }), el("table", { className: "io" }, el("thead", null, tr), body));
    return frag;
  }
  function parse(text) { try { return JSON.parse(text || "{}"); } catch (e) { return {}; } }
  // parameter items of node i: output=false -> inputs, true -> outputs ({row name: {key: value}})
  function items(s, i, output) {
    if (!s.rowStart) {
      s.rowStart = new Int32Array(s.names.length + 1);
      for (let k = 0; k < s.names.length; k++) s.rowStart[k + 1] = s.rowStart[k] + s.nIn[k] + s.nOut[k];
    }
    const start = s.rowStart[i] + (output ? s.nIn[i] : 0);
    const end = start + (output ? s.nOut[i] : s.nIn[i]);
    const res = Object.create(null);
    for (let k = start; k < end; k++) {
      const suffix = s.rowNames[k];
      const keys = DATA.schemas[s.rowSchemas[k]], vals = s.rowValues[k];
      const item = Object.create(null);
      for (let j = 0; j < keys.length; j++) item[keys[j]] = typeof vals[j] === "number" ? DATA.strings[vals[j]] : vals[j];
      res[suffix.startsWith(".") ? s.names[i] + suffix : suffix] = item;
    }
    return res;
  }
  function showDetails(side, i, note) {
    const s = G[side];
    const j = partner(side, i);
    const npuSide = side === "NPU" ? "NPU" : other(side);
    const ni = side === "NPU" ? i : j;
    const bi = side === "NPU" ? j : i;
    const N = G[npuSide], B = G.Bench;
    const nIn = ni !== undefined ? items(N, ni, false) : {}, nOut = ni !== undefined ? items(N, ni, true) : {};
    const bIn = B && bi !== undefined ? items(B, bi, false) : (COMPARE ? {} : null), bOut = B && bi !== undefined ? items(B, bi, true) : (COMPARE ? {} : null);
    const prec = ni !== undefined ? N.precision[ni] : null;
    const info = el("div", null, `side: ${side}; micro step: ${s.micro[i] ?? ""}`);
    if (COMPARE) {
      info.append("; match: ", j !== undefined ? G[other(side)].names[j] : el("b", { text: "unmatched" }), "; verdict: ", el("b", { id: "details-verdict", text: verdictOf(prec) || "n/a" }));
      if (s.worst[i] > 1) info.append(`; worst inside: ${RANKED[s.worst[i]]}`);
      const A = G[npuSide];
      if (ni !== undefined && A.auto && A.auto[ni] != null) {
        info.append("; ", el("b", { id: "details-auto", text: `automatic match, confidence ${A.auto[ni].toFixed(2)}${A.auto[ni] < REVIEW ? " (review)" : ""}` }), `: ${A.autoWhy[ni] || ""}`);
      }
    }
    if (s.overflow[i]) info.append("; overflow level: ", el("b", { text: s.overflow[i] }));
    const parts = [el("h3", { id: "details-name", text: s.names[i] })];
    if (note) parts.push(el("div", { className: "suspect-note", id: "details-note", text: note }));
    parts.push(info, ioTable("Inputs", nIn, bIn), ioTable("Outputs", nOut, bOut));
    if (s.dist[i]) parts.push(el("h4", { text: "Communication" }), el("pre", { className: "stack", text: s.dist[i] }));
    if (s.merge[i]) { const m = parse(s.merge[i]); parts.push(el("h4", { text: "Parallel merge" }), el("pre", { className: "stack", text: Array.isArray(m) ? m.join("\n") : s.merge[i] })); }
    const stack = DATA.stacks[s.stack[i]];
    parts.push(el("h4", { text: "Stack" }), el("pre", { className: "stack", text: Array.isArray(stack) && stack.length ? stack.join("\n") : String(stack && !Array.isArray(stack) ? stack : "(none)") }));
    $("details").replaceChildren(...parts.filter(Boolean));
  }

  // ---------------------------------------------------------------- search & filters
  function fuzzyScore(hay, needle) {
    const direct = hay.indexOf(needle);
    if (direct >= 0) return 1000 - direct - hay.length * 0.01;
    let pos = 0, score = 0, last = -2;
    for (const ch of needle) {
      const k = hay.indexOf(ch, pos);
      if (k < 0) return -1;
      score += k === last + 1 ? 5 : 1;
      last = k;
      pos = k + 1;
    }
    return score - hay.length * 0.01;
  }
  function showResults(title, items) {
    $("results-title").textContent = title;
    const list = $("result-list");
    list.replaceChildren();
    const frag = document.createDocumentFragment();
    for (const [side, i, note] of items.slice(0, 500)) {
      const li = document.createElement("li");
      li.textContent = G[side].names[i] + (note ? `  [${note}]` : "") + (SIDES.length > 1 ? `  (${side})` : "");
      li.dataset.side = side;
      li.dataset.name = G[side].names[i];
      if (note) li.dataset.note = note;
      li.dataset.i = i;
      frag.appendChild(li);
    }
    list.appendChild(frag);
  }
  $("result-list").onclick = (ev) => {
    const li = ev.target.closest("li");
    if (!li) return;
    select(li.dataset.side, +li.dataset.i, false);
    const row = G[li.dataset.side].el.get(+li.dataset.i)?.querySelector(":scope > .row");
    if (row) { row.classList.add("flash"); setTimeout(() => row.classList.remove("flash"), 1200); }
  };
  let searchTimer = 0;
  $("search").oninput = () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 120);
  };
  function runSearch() {
    const q = $("search").value.trim().toLowerCase();
    if (!q) { showResults("Search or tick a filter", []); return; }
    const hits = [];
    const tokens = q.split(/[\s]+/).filter(Boolean);
    for (const side of SIDES) {
      const low = G[side].lower;
      for (let i = 0; i < low.length; i++) {
        let sc = 0;
        for (const token of tokens) {
          const t = fuzzyScore(low[i], token);
          if (t < 0) { sc = -1; break; }
          sc += t;
        }
        if (sc >= 0) hits.push([sc, side, i]);
      }
    }
    hits.sort((a, b) => b[0] - a[0]);
    showResults(`${hits.length} node(s) match "${q}"`, hits.map((h) => [h[1], h[2]]));
  }
  const PREC_IDS = ["pass", "warning", "error", "unmatched"], OVF_IDS = ["medium", "high", "critical"];
  function runFilters() {
    const prec = PREC_IDS.filter((v) => $("filter-" + v).checked);
    const ovf = OVF_IDS.filter((v) => $("filter-" + v).checked);
    const wasOverflow = state.overflowMode;
    state.overflowMode = ovf.length > 0;
    if (wasOverflow !== state.overflowMode) recolor();
    if (!prec.length && !ovf.length) { showResults("Search or tick a filter", []); return; }
    const s = G.NPU, items = [];
    for (let i = 0; i < s.names.length; i++) {
      if (s.children[i].length) continue; // leaves only, like the TensorBoard plugin
      let note = null;
      if (prec.length && COMPARE) {
        const v = s.match[i] == null ? "unmatched" : verdictOf(s.precision[i]);
        if (v && prec.includes(v)) note = v;
      }
      if (!note && ovf.length && s.overflow[i] && ovf.includes(s.overflow[i])) note = s.overflow[i];
      if (note) items.push(["NPU", i, note]);
    }
    const what = [...prec, ...ovf].join(", ");
    showResults(`${items.length} node(s): ${what}` + (ovf.length && !META.overflowCheck ? " (graph built without -oc)" : ""), items);
  }
  for (const v of [...PREC_IDS, ...OVF_IDS]) $("filter-" + v).onchange = runFilters;
  function recolor() {
    for (const side of SIDES) for (const [i, wrap] of G[side].el) wrap.querySelector(":scope > .row").style.background = colorOf(side, i);
  }
  $("collapse-all").onclick = () => {
    for (const side of SIDES) {
      const s = G[side];
      s.expanded.fill(0);
      s.el.clear();
      panes[side].replaceChildren(renderNode(side, s.root));
      setExpanded(side, s.root, true, false);
    }
  };

  // ---------------------------------------------------------------- manual matching
  function pickForMatch(side, i) {
    for (const r of document.querySelectorAll(`#pane-${side} .row.picked`)) r.classList.remove("picked");
    state.pick[side] = i;
    const wrap = G[side].el.get(i);
    if (wrap) wrap.querySelector(":scope > .row").classList.add("picked");
    $(side === "NPU" ? "pick-npu" : "pick-bench").textContent = G[side].names[i];
    $("add-pair").disabled = !(state.pick.NPU !== null && state.pick.Bench !== null);
  }
  function groupKeys(data) {
    const groups = { input: [], parameters: [], output: [] };
    for (const k of Object.keys(data)) {
      const g = k.includes(".output.") ? "output" : k.includes(".parameters.") ? "parameters" : "input";
      groups[g].push(k);
    }
    return groups;
  }
  function yamlKey(text) { return /^[A-Za-z0-9_.\-]+$/.test(text) ? text : JSON.stringify(text); }
  function listPair(pair) {  // pair: [npu name, bench name, npu index, bench index, auto confidence | null]
    const li = pair[5] || document.createElement("li");
    const conf = pair[4];
    li.textContent = conf == null ? `${pair[0]} → ${pair[1]}` : `${pair[0]} → ${pair[1]} (auto ${conf.toFixed(2)}${conf < REVIEW ? ", review" : ""})`;
    li.className = conf == null ? "manual" : conf < REVIEW ? "auto review" : "auto";
    pair[5] = li;
    if (!li.parentNode) $("pair-list").appendChild(li);
  }
  function proposeAutoPairs() {  // manual matching starts from the automatic proposal
    const N = G.NPU, B = G.Bench;
    if (!COMPARE || !N || !B || !N.auto) return;
    for (let i = 0; i < N.names.length; i++) {
      const bi = N.auto[i] != null && N.match[i] != null ? B.index.get(N.match[i]) : undefined;
      if (bi !== undefined) { const pair = [N.names[i], B.names[bi], i, bi, N.auto[i]]; state.pairs.push(pair); listPair(pair); }
    }
    $("export-yaml").disabled = state.pairs.length === 0;
  }
  $("add-pair").onclick = () => {
    const a = G.NPU.names[state.pick.NPU], b = G.Bench.names[state.pick.Bench];
    const pair = [a, b, state.pick.NPU, state.pick.Bench, null];
    const old = state.pairs.findIndex((p) => p[0] === a);
    if (old >= 0) { pair[5] = state.pairs[old][5]; state.pairs[old] = pair; } else state.pairs.push(pair);  // a manual pair replaces the proposal
    listPair(pair);
    state.pick = { NPU: null, Bench: null };
    $("pick-npu").textContent = "-"; $("pick-bench").textContent = "-";
    for (const r of document.querySelectorAll(".row.picked")) r.classList.remove("picked");
    $("add-pair").disabled = true;
    $("export-yaml").disabled = false;
  };
  function mappingYaml() {
    const lines = ["# target (NPU) name: golden (bench) name", "# node pairs picked in the probe viewer, then their rows, paired by position"];
    for (const [a, b, ni, bi, conf] of state.pairs) {
      lines.push(`${yamlKey(a)}: ${yamlKey(b)}` + (conf == null ? "" : `  # auto, confidence ${conf.toFixed(3)}`));
      const na = { ...items(G.NPU, ni, false), ...items(G.NPU, ni, true) };
      const nb = { ...items(G.Bench, bi, false), ...items(G.Bench, bi, true) };
      const ga = groupKeys(na), gb = groupKeys(nb);
      for (const g of ["input", "parameters", "output"]) {
        const n = Math.min(ga[g].length, gb[g].length);
        for (let k = 0; k < n; k++) lines.push(`${yamlKey(ga[g][k])}: ${yamlKey(gb[g][k])}`);
      }
    }
    return lines.join("\n") + "\n";
  }
  $("export-yaml").onclick = () => {
    const text = mappingYaml();
    $("yaml-out").value = text;
    const blob = new Blob([text], { type: "text/yaml" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "mapping.yaml";
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  };

  // ---------------------------------------------------------------- jump (chart, suspects)
  function jump(node, note) {
    for (const side of SIDES) {
      const i = G[side].index.get(node);
      if (i === undefined) continue;
      select(side, i, false, note);
      const row = G[side].el.get(i)?.querySelector(":scope > .row");
      if (row) { row.classList.add("flash"); setTimeout(() => row.classList.remove("flash"), 1200); }
      return true;
    }
    $("results-title").textContent = `${node} is not a node of this graph`;
    return false;
  }

  // ---------------------------------------------------------------- boot
  $("title").textContent = `${META.source} — ${COMPARE ? "compare (" + META.task + ")" : "build"} — step ${META.step}, rank ${META.rank}`;
  $("precision-filters").style.display = COMPARE ? "" : "none";
  $("matching").style.display = COMPARE ? "" : "none";
  $("pair-list").replaceChildren();
  $("yaml-out").value = "";
  $("pick-npu").textContent = "-"; $("pick-bench").textContent = "-";
  $("add-pair").disabled = true; $("export-yaml").disabled = true;
  $("details").replaceChildren(el("div", { className: "hint", text: "Click a node to see its inputs, outputs and stack." }));
  const legend = Object.entries(META.colors || {}).map(([c, spec]) => {
    const span = el("span", { text: spec && spec.accuracy_level !== undefined ? String(spec.accuracy_level) : "" });
    if (safeColor(c)) span.style.background = safeColor(c);
    return span;
  });
  $("legend").replaceChildren(...legend);
  buildPanes();
  runFilters();
  proposeAutoPairs();
  return { jump };
  }
})();
