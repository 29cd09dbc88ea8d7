// The standalone diagnosis page: the chart, the suspect list, and the figures of the picked op.
(function () {
  const { el, loadBlob, fail } = Probe;
  loadBlob("chart-data").then((data) => {
    document.getElementById("title").textContent = document.title;
    const verdict = document.getElementById("verdict");
    verdict.textContent = data.verdict || "n/a";
    verdict.classList.add(/^[a-z]+$/.test(data.verdict) ? data.verdict : "unknown");
    const point = document.getElementById("point");
    function show(k, i, number) {
      const s = data.series[k];
      const suspect = number || s.suspect[i];
      const info = suspect ? data.suspects[suspect - 1] : null;
      const row = (name, value) => el("tr", null, el("td", { text: name }), el("td", { text: value }));
      point.replaceChildren(...[
        el("h3", { id: "details-name", text: s.node[i] }),
        info ? el("div", { className: "suspect-note", text: `suspect ${suspect} (${info.kind}): ${info.evidence}` }) : null,
        el("table", null,
          row("series", s.label), row("op order", String(s.order[i])), row("direction", s.backward[i] ? "backward" : "forward"),
          row("error", s.nonfinite[i] ? "NaN/inf" : ProbeChart.fmt(s.error[i])), row("noise floor", ProbeChart.fmt(s.floor[i])),
          row("module", s.module[i] || "-"))].filter(Boolean));
      for (const li of document.querySelectorAll("#suspect-list li")) li.classList.toggle("active", +li.dataset.suspect === suspect);
    }
    ProbeChart.render(document.getElementById("chart-host"), data, { onPick: (k, i) => show(k, i, 0) });
    ProbeChart.renderSuspects(document.getElementById("suspect-list"), data, (n) => {
      const p = ProbeChart.suspectPoint(data, n);
      if (p) show(p[0], p[1], n);
      else point.replaceChildren(el("h3", { id: "details-name", text: data.suspects[n - 1].node }), el("div", { className: "suspect-note", text: data.suspects[n - 1].evidence }));
    });
    document.body.dataset.ready = "1";
  }, fail);
})();
