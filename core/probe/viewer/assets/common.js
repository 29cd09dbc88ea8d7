"use strict";
// Shared by every probe page. Data from a dump or a db reaches the page as text only: elements are
// built with el()/svgEl() and filled with textContent, never parsed as markup.
const Probe = (function () {
  // The data blocks are gzip-compressed JSON in base64, inflated with the browser's DecompressionStream.
  async function loadBlob(id) {
    const node = document.getElementById(id);
    if (!node) return null;
    const raw = atob(node.textContent.trim());
    const bytes = new Uint8Array(raw.length);
    for (let k = 0; k < raw.length; k++) bytes[k] = raw.charCodeAt(k);
    if (typeof DecompressionStream === "undefined") throw new Error("this browser has no DecompressionStream; use a current Chrome, Firefox, Edge or Safari");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  // el("td", {className: "x", title: "...", dataset: {name: "..."}}, "text", childNode, ...)
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === "dataset") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
        else if (key === "text") node.textContent = String(value);
        else node[key] = value;
      }
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  const NS = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, parent) {
    const node = document.createElementNS(NS, tag);
    if (attrs) for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) node.setAttribute(key, String(value));
    if (parent) parent.appendChild(node);
    return node;
  }
  // a CSS colour from data is used only when it is a plain colour (no url(), no expressions)
  function safeColor(text) {
    const t = String(text).trim();
    return /^(#[0-9a-f]{3,8}|rgba?\([\d\s.,%]+\)|[a-z]{3,20})$/i.test(t) ? t : null;
  }
  function fail(err) {
    window.__errors = (window.__errors || []).concat([String(err)]);
    document.body.prepend(el("p", { className: "load-error", text: "Cannot read the embedded data: " + String(err) }));
  }
  return { loadBlob, el, svgEl, safeColor, fail };
})();
