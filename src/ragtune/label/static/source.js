// One document as the loader extracted it, the section of ?anchor= marked and in view.
"use strict";

window.addEventListener("DOMContentLoaded", async () => {
  const anchor = new URLSearchParams(location.search).get("anchor") || "";
  const headers = {};
  const key = sessionStorage.getItem("ragtune-key");
  if (key) headers["X-API-Key"] = key;
  const r = await fetch("/api/source?anchor=" + encodeURIComponent(anchor), { headers });
  const d = await r.json();
  if (!r.ok) { const m = document.getElementById("message"); m.textContent = d.error; m.hidden = false; return; }
  document.title = `${d.anchor} · ragtune label`;
  const loc = Object.entries(d.location || {}).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ");
  document.getElementById("where").textContent = `${d.source || d.doc_id} (${d.format})` + (loc ? ` · ${loc}` : "");
  const pre = document.getElementById("doc");
  const mark = Object.assign(document.createElement("mark"), { id: "target", textContent: d.text.slice(d.start, d.end) });
  pre.append(document.createTextNode(d.text.slice(0, d.start)), mark, document.createTextNode(d.text.slice(d.end)));
  mark.scrollIntoView({ block: "start" });
  document.body.dataset.ready = "1";
});
