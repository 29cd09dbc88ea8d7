"use strict";
(function () {
  // The data is gzip-compressed JSON in base64, inflated with the browser's DecompressionStream.
  async function loadData() {
    const text = document.getElementById("graph-data").textContent.trim();
    const raw = atob(text);
    const bytes = new Uint8Array(raw.length);
    for (let k = 0; k < raw.length; k++) bytes[k] = raw.charCodeAt(k);
    if (typeof DecompressionStream === "undefined") throw new Error("this browser has no DecompressionStream; use a current Chrome, Firefox, Edge or Safari");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  loadData().then(main, (err) => {
    window.__errors = [String(err)];
    document.body.insertAdjacentHTML("afterbegin", `<p class="load-error">Cannot read the embedded graph: ${String(err).replace(/</g, "&lt;")}</p>`);
  });

  function main(DATA) {
  const META = DATA.meta;
  const COMPARE = META.graphType === "compare";
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
  const other = (side) => (side === "NPU" ? "Bench" : "NPU");
  const partner = (side, i) => {
    const name = G[side].match[i];
    const o = G[other(side)];
    return name != null && o ? o.index.get(name) : undefined;
  };
  const colorRanges = [];
  if (META.colors) {
    for (const [color, spec] of Object.entries(META.colors)) {
      if (Array.isArray(spec.value) && spec.value.length === 2) colorRanges.push([spec.value[0], spec.value[1], color, spec.accuracy_level]);
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
    if (state.overflowMode && s.overflow[i]) return OVERFLOW_COLORS[s.overflow[i]];
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
    for (const side of SIDES) {
      const pane = document.createElement("div");
      pane.className = "pane";
      pane.id = "pane-" + side;
      const title = side === "NPU" ? (COMPARE ? "Target (NPU)" : "Graph") : "Golden (Bench)";
      pane.innerHTML = `<h2>${title} <span class="badge">${G[side].names.length} nodes</span></h2>`;
      const tree = document.createElement("div");
      tree.className = "tree";
      pane.appendChild(tree);
      host.appendChild(pane);
      panes[side] = tree;
      tree.addEventListener("click", (ev) => onTreeClick(side, ev));
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
    const extra = [];
    if (s.overflow[i]) extra.push(`<span class="badge">${s.overflow[i]}</span>`);
    if (s.dist[i]) extra.push(`<span class="badge">comm</span>`);
    row.innerHTML = `<span class="toggle">${hasKids ? (s.expanded[i] ? "▾" : "▸") : ""}</span><span class="label"></span>${extra.join("")}`;
    row.querySelector(".label").textContent = label(side, i);
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
  function select(side, i, fromClick) {
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
    showDetails(side, i);
    if (COMPARE && G[side].match[i] == null) pickForMatch(side, i);
  }

  // ---------------------------------------------------------------- details
  function esc(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }
  const STAT_KEYS = ["dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad", "md5"];
  const SKIP_KEYS = new Set(["type", "data_name", "Result", "Err_message", "Requires_grad Consistent", ...STAT_KEYS]);
  function ioTable(title, npuData, benchData) {
    const nk = Object.keys(npuData), bk = Object.keys(benchData || {});
    if (!nk.length && !bk.length) return "";
    const metricCols = [];
    for (const k of nk) for (const c of Object.keys(npuData[k])) if (!SKIP_KEYS.has(c) && c !== "value" && !metricCols.includes(c)) metricCols.push(c);
    const statCols = STAT_KEYS.filter((c) => nk.some((k) => c in npuData[k]) || bk.some((k) => c in benchData[k]));
    const head = ["Name", ...statCols.map((c) => "NPU " + c), ...(benchData ? ["Bench name", ...statCols.map((c) => "Bench " + c)] : []), ...metricCols, ...(COMPARE ? ["Result", "Err_message"] : [])];
    let html = `<h4>${title}</h4><table class="io"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>`;
    const n = Math.max(nk.length, benchData ? bk.length : 0);
    for (let r = 0; r < n; r++) {
      const a = nk[r] !== undefined ? npuData[nk[r]] : {}, b = benchData && bk[r] !== undefined ? benchData[bk[r]] : null;
      const cells = [nk[r] || "", ...statCols.map((c) => a[c] ?? (c === "Max" && a.value) ?? "")];
      if (benchData) cells.push(bk[r] || "", ...statCols.map((c) => (b ? b[c] ?? "" : "")));
      cells.push(...metricCols.map((c) => a[c] ?? ""));
      let tail = "";
      if (COMPARE) {
        const res = a.Result || "";
        let msg = a.Err_message || "";
        try { msg = JSON.parse(msg).join("; "); } catch (e) { /* keep the raw text */ }
        tail = `<td class="${esc(res)}">${esc(res)}</td><td>${esc(msg)}</td>`;
      }
      html += `<tr>${cells.map((c) => `<td>${esc(c)}</td>`).join("")}${tail}</tr>`;
    }
    return html + "</tbody></table>";
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
    const res = {};
    for (let k = start; k < end; k++) {
      const suffix = s.rowNames[k];
      const keys = DATA.schemas[s.rowSchemas[k]], vals = s.rowValues[k];
      const item = {};
      for (let j = 0; j < keys.length; j++) item[keys[j]] = typeof vals[j] === "number" ? DATA.strings[vals[j]] : vals[j];
      res[suffix.startsWith(".") ? s.names[i] + suffix : suffix] = item;
    }
    return res;
  }
  function showDetails(side, i) {
    const s = G[side];
    const j = partner(side, i);
    const npuSide = side === "NPU" ? "NPU" : other(side);
    const ni = side === "NPU" ? i : j;
    const bi = side === "NPU" ? j : i;
    const N = G[npuSide], B = G.Bench;
    const nIn = ni !== undefined ? items(N, ni, false) : {}, nOut = ni !== undefined ? items(N, ni, true) : {};
    const bIn = B && bi !== undefined ? items(B, bi, false) : (COMPARE ? {} : null), bOut = B && bi !== undefined ? items(B, bi, true) : (COMPARE ? {} : null);
    const prec = ni !== undefined ? N.precision[ni] : null;
    let html = `<h3 id="details-name">${esc(s.names[i])}</h3><div>`;
    html += `side: ${esc(side)}; micro step: ${s.micro[i]}`;
    if (COMPARE) html += `; match: ${j !== undefined ? esc(G[other(side)].names[j]) : "<b>unmatched</b>"}; verdict: <b id="details-verdict">${esc(verdictOf(prec) || "n/a")}</b>`;
    if (s.overflow[i]) html += `; overflow: <b>${esc(s.overflow[i])}</b>`;
    html += "</div>";
    html += ioTable("Inputs", nIn, bIn) + ioTable("Outputs", nOut, bOut);
    if (s.dist[i]) html += `<h4>Communication</h4><pre class="stack">${esc(s.dist[i])}</pre>`;
    if (s.merge[i]) html += `<h4>Parallel merge</h4><pre class="stack">${esc(parse(s.merge[i]).join ? parse(s.merge[i]).join("\n") : s.merge[i])}</pre>`;
    const stack = DATA.stacks[s.stack[i]] || [];
    html += `<h4>Stack</h4><pre class="stack">${stack.length ? esc(stack.join("\n")) : "(none)"}</pre>`;
    $("details").innerHTML = html;
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
    list.innerHTML = "";
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
  $("result-list").addEventListener("click", (ev) => {
    const li = ev.target.closest("li");
    if (!li) return;
    select(li.dataset.side, +li.dataset.i, false);
    const row = G[li.dataset.side].el.get(+li.dataset.i)?.querySelector(":scope > .row");
    if (row) { row.classList.add("flash"); setTimeout(() => row.classList.remove("flash"), 1200); }
  });
  let searchTimer = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 120);
  });
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
  for (const v of [...PREC_IDS, ...OVF_IDS]) $("filter-" + v).addEventListener("change", runFilters);
  function recolor() {
    for (const side of SIDES) for (const [i, wrap] of G[side].el) wrap.querySelector(":scope > .row").style.background = colorOf(side, i);
  }
  $("collapse-all").addEventListener("click", () => {
    for (const side of SIDES) {
      const s = G[side];
      s.expanded.fill(0);
      s.el.clear();
      panes[side].innerHTML = "";
      panes[side].appendChild(renderNode(side, s.root));
      setExpanded(side, s.root, true, false);
    }
  });

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
  $("add-pair").addEventListener("click", () => {
    const a = G.NPU.names[state.pick.NPU], b = G.Bench.names[state.pick.Bench];
    if (!state.pairs.some((p) => p[0] === a)) state.pairs.push([a, b, state.pick.NPU, state.pick.Bench]);
    const li = document.createElement("li");
    li.textContent = `${a} → ${b}`;
    $("pair-list").appendChild(li);
    state.pick = { NPU: null, Bench: null };
    $("pick-npu").textContent = "-"; $("pick-bench").textContent = "-";
    for (const r of document.querySelectorAll(".row.picked")) r.classList.remove("picked");
    $("add-pair").disabled = true;
    $("export-yaml").disabled = false;
  });
  function mappingYaml() {
    const lines = ["# target (NPU) name: golden (bench) name", "# node pairs picked in the probe viewer, then their rows, paired by position"];
    for (const [a, b, ni, bi] of state.pairs) {
      lines.push(`${yamlKey(a)}: ${yamlKey(b)}`);
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
  $("export-yaml").addEventListener("click", () => {
    const text = mappingYaml();
    $("yaml-out").value = text;
    const blob = new Blob([text], { type: "text/yaml" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "mapping.yaml";
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 0);
  });

  // ---------------------------------------------------------------- boot
  $("title").textContent = `${META.source} — ${COMPARE ? "compare (" + META.task + ")" : "build"} — step ${META.step}, rank ${META.rank}`;
  if (!COMPARE) { $("precision-filters").style.display = "none"; $("matching").style.display = "none"; }
  if (META.colors) {
    $("legend").innerHTML = Object.entries(META.colors).map(([c, s]) => `<span style="background:${esc(c)}">${esc(s.accuracy_level)}</span>`).join("");
  }
  buildPanes();
  document.body.dataset.ready = "1";
  }
})();
