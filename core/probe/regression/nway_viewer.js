"use strict";
// N-way addition to the graph viewer: the golden (Bench) pane shows every target's verdict per
// node (one dot per target), colours the rows by the target chosen in the selector, and marks the
// nodes where the targets disagree. Works on the rendered rows only (data-name of .row elements
// of #pane-Bench), so it needs nothing from the viewer's internals.
(function () {
  // the data element may follow this script: look for it once the document is parsed
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot); else boot();
  function boot() {
  const holder = document.getElementById("nway-data");
  if (!holder || typeof DecompressionStream === "undefined") return;
  async function load() {
    const raw = atob(holder.textContent.trim());
    const bytes = new Uint8Array(raw.length);
    for (let k = 0; k < raw.length; k++) bytes[k] = raw.charCodeAt(k);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  load().then((data) => {
    if (data && Array.isArray(data.labels) && data.labels.length) run(data);
  }, (err) => { window.__errors = (window.__errors || []).concat(["n-way data: " + String(err)]); });

  function run(NW) {
  const VERDICTS = ["pass", "warning", "error", "unmatched", "n/a"];
  function verdict(t, i) {
    if (!NW.matched[t][i]) return "unmatched";
    const p = NW.precision[t][i];
    if (p === null || p === undefined) return "n/a";
    return p >= 0.6 ? "error" : p >= 0.3 ? "warning" : "pass";
  }
  const disagree = new Set(NW.disagree);
  const state = { target: 0, index: new Map(NW.names.map((n, i) => [n, i])) };

  function decorate(row) {
    const i = state.index.get(row.dataset.name);
    if (i === undefined) return;
    for (const v of VERDICTS) row.classList.remove("nway-" + v.replace("/", ""));
    row.classList.add("nway-" + verdict(state.target, i).replace("/", ""));
    row.classList.toggle("nway-disagree", disagree.has(i));
    let dots = row.querySelector(":scope > .nway-dots");
    if (!dots) {
      dots = document.createElement("span");
      dots.className = "nway-dots";
      NW.labels.forEach((label, t) => {
        const dot = document.createElement("i");
        const v = verdict(t, i);
        dot.className = "nway-dot nway-" + v.replace("/", "");
        dot.dataset.target = label;
        dot.dataset.verdict = v;
        dot.title = `${label}: ${v}`;
        dots.appendChild(dot);
      });
      if (disagree.has(i)) {
        const mark = document.createElement("span");
        mark.className = "badge nway-badge";
        mark.textContent = "targets disagree";
        dots.appendChild(mark);
      }
      row.appendChild(dots);
    }
    for (const dot of dots.querySelectorAll(".nway-dot")) dot.classList.toggle("nway-current", dot.dataset.target === NW.labels[state.target]);
  }
  function decorateAll(root) {
    for (const row of root.querySelectorAll(".row[data-name]")) decorate(row);
  }

  function start() {
    const pane = document.getElementById("pane-Bench");
    if (!pane) return;
    const bar = document.getElementById("toolbar");
    const group = document.createElement("span");
    group.className = "group";
    group.id = "nway";
    const label = document.createElement("label");
    label.textContent = "Golden coloured by target ";
    const select = document.createElement("select");
    select.id = "nway-target";
    NW.labels.forEach((name, t) => {
      const option = document.createElement("option");
      option.value = String(t);
      option.textContent = name;
      select.appendChild(option);
    });
    label.appendChild(select);
    const button = document.createElement("button");
    button.type = "button";
    button.id = "nway-disagree";
    button.textContent = `Targets disagree (${NW.disagree.length})`;
    group.append(label, button);
    bar.appendChild(group);
    const npuTitle = document.querySelector("#pane-NPU h2");
    if (npuTitle) {
      const shown = document.createElement("span");
      shown.className = "badge";
      shown.id = "nway-npu-title";
      shown.textContent = `${NW.labels[0]} (each target's own graph: OUT/<label>/compare_*.vis.db)`;
      npuTitle.appendChild(shown);
    }
    const title = pane.querySelector("h2");
    const note = document.createElement("span");
    note.className = "badge";
    note.id = "nway-title";
    title.appendChild(note);
    function setTarget(t) {
      state.target = t;
      note.textContent = `verdicts of ${NW.labels[t]} (dots: ${NW.labels.join(", ")})`;
      decorateAll(pane);
    }
    select.addEventListener("change", () => setTarget(+select.value));
    button.addEventListener("click", () => {
      // the viewer's own results list: its click handler reveals and selects the node
      document.getElementById("results-title").textContent = `${NW.disagree.length} golden node(s) where the targets disagree`;
      const list = document.getElementById("result-list");
      list.innerHTML = "";
      for (const i of NW.disagree.slice(0, 500)) {
        const li = document.createElement("li");
        li.textContent = NW.names[i] + "  [" + NW.labels.map((l, t) => `${l}: ${verdict(t, i)}`).join(", ") + "]";
        li.dataset.side = "Bench";
        li.dataset.name = NW.names[i];
        li.dataset.i = String(i);
        list.appendChild(li);
      }
    });
    new MutationObserver((records) => {
      for (const record of records) for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.matches(".row[data-name]")) decorate(node);
        decorateAll(node);
      }
    }).observe(pane, { childList: true, subtree: true });
    setTarget(0);
    document.body.dataset.nwayReady = "1";
  }
  function whenReady() {
    if (document.body.dataset.ready === "1") { start(); return; }
    new MutationObserver((_, observer) => {
      if (document.body.dataset.ready === "1") { observer.disconnect(); start(); }
    }).observe(document.body, { attributes: true, attributeFilter: ["data-ready"] });
  }
  whenReady();
  }
  }
})();
