// N-way pages (probe graph -gp G -tp T1 -tp T2 ...): the golden (Bench) pane shows every target's
// verdict per node (one dot per target), its rows take the colour of the target chosen in the
// selector, and the nodes where the targets disagree are outlined and listed. Works on the rendered
// rows (data-name of .row in #pane-Bench) and the page's own data block "nway-<graph>", so it needs
// nothing from the viewer's internals; text only, never markup.
(function () {
  const { el, loadBlob, fail } = Probe;
  const VERDICTS = ["pass", "warning", "error", "unmatched", "na"];
  let NW = null, index = new Map(), disagree = new Set(), target = 0, observer = null, group = null;

  function verdict(t, i) {
    if (!NW.matched[t][i]) return "unmatched";
    const p = NW.precision[t][i];
    if (p === null || p === undefined) return "na";
    return p >= 0.6 ? "error" : p >= 0.3 ? "warning" : "pass";
  }
  const shown = (v) => (v === "na" ? "n/a" : v);

  function decorate(row) {
    const i = index.get(row.dataset.name);
    if (i === undefined) return;
    for (const v of VERDICTS) row.classList.remove("nway-" + v);
    row.classList.add("nway-" + verdict(target, i));
    row.classList.toggle("nway-disagree", disagree.has(i));
    let dots = row.querySelector(":scope > .nway-dots");
    if (!dots) {
      dots = el("span", { className: "nway-dots" });
      NW.labels.forEach((label, t) => {
        const v = verdict(t, i);
        dots.append(el("i", { className: "nway-dot nway-" + v, title: `${label}: ${shown(v)}`,
                              dataset: { target: label, verdict: shown(v) } }));
      });
      if (disagree.has(i)) dots.append(el("span", { className: "badge nway-badge", text: "targets disagree" }));
      row.append(dots);
    }
    for (const dot of dots.querySelectorAll(".nway-dot")) dot.classList.toggle("nway-current", dot.dataset.target === NW.labels[target]);
  }
  function decorateAll(root) {
    for (const row of root.querySelectorAll(".row[data-name]")) decorate(row);
  }
  function setTarget(t) {
    target = t;
    const note = document.getElementById("nway-title");
    if (note) note.textContent = `verdicts of ${NW.labels[t]} (dots: ${NW.labels.join(", ")})`;
    const pane = document.getElementById("pane-Bench");
    if (pane) decorateAll(pane);
  }
  function listDisagreeing() {
    // the viewer's own results list: its click handler reveals and selects the node
    document.getElementById("results-title").textContent = `${NW.disagree.length} golden node(s) where the targets disagree`;
    const items = NW.disagree.slice(0, 500).map((i) => el("li", {
      text: NW.names[i] + "  [" + NW.labels.map((l, t) => `${l}: ${shown(verdict(t, i))}`).join(", ") + "]",
      dataset: { side: "Bench", name: NW.names[i], i },
    }));
    document.getElementById("result-list").replaceChildren(...items);
  }
  function toolbar() {
    if (group) return;
    const select = el("select", { id: "nway-target" });
    NW.labels.forEach((name, t) => select.append(el("option", { value: String(t), text: name })));
    select.onchange = () => setTarget(+select.value);
    const button = el("button", { type: "button", id: "nway-disagree" });
    button.onclick = listDisagreeing;
    group = el("span", { className: "group", id: "nway" }, el("label", null, "Golden coloured by target ", select), button);
    document.getElementById("toolbar").append(group);
  }
  // each graph (step, rank) of the page has its own block; the panes are rebuilt when one is shown
  async function attach() {
    const k = +(document.getElementById("graph-select")?.value || 0);
    NW = await loadBlob("nway-" + k);
    if (observer) observer.disconnect();
    if (!NW || !NW.labels || !NW.labels.length) { if (group) group.hidden = true; return; }
    index = new Map(NW.names.map((n, i) => [n, i]));
    disagree = new Set(NW.disagree);
    target = Math.min(target, NW.labels.length - 1);
    toolbar();
    group.hidden = false;
    document.getElementById("nway-disagree").textContent = `Targets disagree (${NW.disagree.length})`;
    const npu = document.querySelector("#pane-NPU h2");
    if (npu) npu.append(el("span", { className: "badge", id: "nway-npu-title", text: `${NW.labels[0]} (each target's own graph: OUT/<label>/compare_*.vis.db)` }));
    const pane = document.getElementById("pane-Bench");
    if (!pane) return;
    pane.querySelector("h2").append(el("span", { className: "badge", id: "nway-title" }));
    observer = new MutationObserver((records) => {
      for (const record of records) for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        if (node.matches(".row[data-name]")) decorate(node);
        decorateAll(node);
      }
    });
    observer.observe(pane, { childList: true, subtree: true });
    setTarget(target);
    document.body.dataset.nwayReady = "1";
  }
  function onReady() {
    document.body.dataset.nwayReady = "0";
    attach().catch(fail);
  }
  new MutationObserver(() => { if (document.body.dataset.ready === "1") onReady(); })
    .observe(document.body, { attributes: true, attributeFilter: ["data-ready"] });
  if (document.body.dataset.ready === "1") onReady();
})();
