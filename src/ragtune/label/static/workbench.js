// ragtune label: the judging workbench. Everything here talks to the local server's /api; nothing else.
"use strict";

const $ = (s) => document.querySelector(s);
const S = {
  questions: [], current: null, q: null, focus: 0, area: "pool", results: [], undo: [], filter: "", status: "",
  terms: [], busy: false, limits: null,
};

// -- the API (with the key, when the server asks for one)

async function api(path, body) {
  const headers = {};
  const key = sessionStorage.getItem("ragtune-key");
  if (key) headers["X-API-Key"] = key;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    headers["X-Ragtune-Workbench"] = "1";
    init.body = JSON.stringify(body);
    // a body over the server's limit is refused here, with the server's message, rather than sent to be cut off
    if (S.limits && init.body.length > S.limits.body_bytes / 4 &&
        new TextEncoder().encode(init.body).length > S.limits.body_bytes) {
      const e = new Error(S.limits.body_message); e.status = 413; e.data = {}; throw e;
    }
  }
  let r;
  try { r = await fetch(path, init); } catch (e) {
    throw new Error(`the workbench did not answer (${e.message}); is it still running?`);
  }
  let data = {};
  try { data = await r.json(); } catch (e) { data = { error: `the server answered ${r.status}` }; }
  if (r.status === 401 && data.key) {
    const k = window.prompt("This workbench needs its API key (X-API-Key):");
    if (k) { sessionStorage.setItem("ragtune-key", k); return api(path, body); }
  }
  if (!r.ok) { const e = new Error(data.error || `error ${r.status}`); e.status = r.status; e.data = data; throw e; }
  return data;
}

function say(text, ok) {
  const m = $("#message");
  m.textContent = text;
  m.className = ok ? "ok" : "";
  m.hidden = !text;
}

// a change: the question as it now is, or null when it was refused (the message says why)
async function change(path, body, undoEntry) {
  try {
    const q = await api(path, body);
    say("");
    if (undoEntry) S.undo.push(undoEntry);
    await refresh(q.deleted ? null : q);
    return q;
  } catch (e) {
    if (e.status === 409) {
      S.undo = S.undo.filter((u) => u.qid !== S.current);  // never undo over someone else's change
      say(e.message);
      await refresh(e.data.current || null, !e.data.current);
    } else {
      say(e.message);
    }
    return null;
  }
}

// -- loading and drawing

async function loadState() {
  const st = await api("/api/state");
  S.questions = st.questions;
  S.limits = st.limits || S.limits;
  $("#golden-path").textContent = st.golden;
  drawProgress(st.progress);
  drawRetrieval(st.retrieval);
  drawList();
  return st;
}

function drawRetrieval(r) {
  const el = $("#retrieval");
  el.hidden = r.ready && !r.error;
  el.textContent = r.error ? `pool retrieval: ${r.error}` :
    `building the pool retrievers (${r.systems.join(", ")}) for the first time; pools appear as they are ready`;
}

function drawProgress(p) {
  const pct = p.questions ? Math.round(100 * p.complete / p.questions) : 0;
  $("#progress-bar span").style.width = pct + "%";
  let t = `${p.complete} of ${p.questions} judged · ${p.to_go} to go`;
  if (p.minutes_left !== null) t += ` · ~${p.minutes_left} min left at ${p.seconds_per_grade.toFixed(1)} s per grade`;
  $("#progress-text").textContent = t;
  $("#progress").title = JUDGED;
}

// One meaning of "judged" everywhere (header, sidebar, filter): every section of the question's pool has a grade
// (judged@k 1 at the pool's depth for every pooled system), or the question is marked unanswerable.
const JUDGED = "judged: every section of its pool (each system's top sections) has a grade, or marked unanswerable";

function shown(q, status) {
  return !status || (status === "judged" ? q.complete : q.status === status);
}

function visible() {
  const f = S.filter.toLowerCase();
  return S.questions.filter((q) => shown(q, S.status) &&
    (!f || q.q.toLowerCase().includes(f) || q.tags.some((t) => t.toLowerCase().includes(f))));
}

function drawList() {
  const ol = $("#questions");
  ol.replaceChildren();
  const shown = visible();
  const by = {};
  for (const q of S.questions) by[q.status] = (by[q.status] || 0) + 1;
  const judged = S.questions.filter((q) => q.complete).length;
  $("#counts").textContent = `${S.questions.length} question${S.questions.length === 1 ? "" : "s"}: ` +
    `${judged} judged` + (by.unanswerable ? ` (${by.unanswerable} unanswerable)` : "") + ", " +
    ["partly judged", "to judge", "draft"].map((s) => `${by[s] || 0} ${s}`).join(", ");
  $("#counts").title = JUDGED;
  for (const q of shown) {
    const li = document.createElement("li");
    li.dataset.id = q.id;
    if (q.id === S.current) li.className = "current";
    const b = document.createElement("span");
    b.className = "badge " + q.status.replace(" ", "-");
    b.textContent = q.status;
    const t = document.createElement("span");
    t.className = "q";
    if (q.conversation !== null && q.conversation !== undefined)  // a turn: its conversation and place first
      t.append(Object.assign(document.createElement("span"), { className: "turn", textContent: `${q.conversation} · turn ${q.turn + 1} ` }),
        document.createTextNode(q.q));
    else t.textContent = q.q;
    const n = document.createElement("span");
    n.className = "n";
    n.textContent = (q.pool !== null ? `${q.graded} of ${q.pool} graded` : "not pooled yet") +
      (q.added ? ` · ${q.added} added by judging` : "") +
      (q.tags.length ? " · " + q.tags.join(", ") : "") + (q.asked ? ` · asked ${q.asked}×` : "");
    li.append(b, t, n);
    li.addEventListener("click", () => open(q.id));
    ol.append(li);
  }
  $("#empty").hidden = S.questions.length > 0;
  if (!S.questions.length) $("#question").hidden = true;
}

async function open(qid, keepFocus) {
  if (!qid) { S.current = null; S.q = null; $("#question").hidden = true; drawList(); return; }
  try {
    const q = await api(`/api/question/${encodeURIComponent(qid)}`);
    S.current = qid;
    if (!keepFocus) { S.focus = firstUngraded(q); S.area = "pool"; S.results = []; $("#search").value = ""; }
    drawQuestion(q);
    drawList();
  } catch (e) { say(e.message); }
}

async function refresh(q, reloadOnly) {
  await loadState();
  if (reloadOnly || !q) {
    if (S.current && !S.questions.some((x) => x.id === S.current)) S.current = null;
    return open(S.current, true);
  }
  drawQuestion(q);
  drawList();
}

function firstUngraded(q) {
  const i = q.candidates.findIndex((c) => c.grade === null);
  return i < 0 ? 0 : i;
}

function drawQuestion(q) {
  S.q = q;
  S.terms = q.terms;
  $("#question").hidden = false;
  $("#q-text").textContent = q.q;
  const st = $("#q-status");
  st.textContent = q.status;
  st.className = "badge " + q.status.replace(" ", "-");
  const tags = $("#q-tags");
  tags.replaceChildren(...q.tags.map((t) => Object.assign(document.createElement("span"), { className: "tag", textContent: t })));
  $("#q-origin").textContent = (q.origin && q.origin !== "workbench" ? `from ${q.origin}` : "") +
    (q.asked ? ` · asked ${q.asked}×` : "");
  $("#unanswerable").textContent = q.status === "unanswerable" ? "Back to judging (U)" : "Unanswerable (u)";
  $("#accept-draft").hidden = !q.candidates.some((c) => c.proposed);
  $("#q-added").textContent = addedNote(q);
  drawConversation(q);
  $("#q-evidence").textContent = evidenceNote(q);
  const graded = q.candidates.filter((c) => c.grade !== null).length;
  $("#pool-count").textContent = `${graded} of ${q.candidates.length} graded`;
  drawCards($("#pool"), q.candidates, "pool");
  drawCards($("#results"), S.results, "search");
  markFocus();
}

// A turn of a conversation is judged with the turns before it in view: the question means what it means after them.
function drawConversation(q) {
  const box = $("#q-conversation");
  box.hidden = q.conversation === null || q.conversation === undefined;
  if (box.hidden) return;
  const turns = S.questions.filter((x) => x.conversation === q.conversation).length || q.turn + 1;
  $("#q-turn").textContent = `turn ${q.turn + 1} of ${turns} in conversation ${q.conversation}` +
    (q.history.length ? "; asked before it:" : ": the first question");
  $("#q-history").replaceChildren(...q.history.map((h) => Object.assign(document.createElement("li"), { textContent: h })));
}

// the evidence groups a multi-hop question needs: one section of every group must be retrieved
function evidenceNote(q) {
  const groups = q.evidence || [];
  if (!groups.length) return "";
  return `evidence: ${groups.map((g, i) => `group ${i + 1}: ${g.join(", ")}`).join(" · ")} — fully supported ` +
    "when a section of every group is retrieved (g moves the section in view to the next group)";
}

function groupOf(q, anchor) { return (q.evidence || []).findIndex((g) => g.includes(anchor)); }

// none -> 1 -> 2 -> ... -> a new group -> none (a section alone in the last group goes back to none)
function nextGroup(q, anchor) {
  const groups = q.evidence || [];
  const g = groupOf(q, anchor);
  if (g < 0) return 0;
  if (g < groups.length - 1 || groups[g].length > 1) return g + 1;
  return null;
}

async function cycleEvidence(i) {
  if (!S.q || S.busy) return;
  const c = S.q.candidates[i];
  if (!c) return;
  if (!(c.grade > 0)) { say("grade the section 1 or 2 before putting it in an evidence group"); return; }
  S.busy = true;
  const q = await change(`/api/question/${encodeURIComponent(S.q.id)}/evidence`,
    { rev: S.q.rev, anchor: c.anchor, group: nextGroup(S.q, c.anchor) });
  S.busy = false;
  if (q) { S.area = "pool"; S.focus = i; markFocus(); }
}

// Judging that adds relevant sections after the question was authored moves its recall: say so, with the counts.
function addedNote(q) {
  if (!q.added) return "";
  const all = q.authored + q.added;
  return `${q.added} relevant section${q.added === 1 ? "" : "s"} added by judging: recall is now measured against ` +
    `${all} anchors, not the ${q.authored} authored, so it can fall with nothing else changed`;
}

function drawCards(box, cands, area) {
  box.replaceChildren();
  cands.forEach((c, i) => {
    const card = document.createElement("article");
    card.className = "card" + (c.grade !== null && c.grade !== undefined ? ` g${c.grade}` : "");
    card.dataset.anchor = c.anchor;
    card.dataset.area = area;
    card.dataset.index = i;
    const head = document.createElement("div");
    head.className = "card-head";
    const title = Object.assign(document.createElement("span"), { className: "card-title", textContent: c.title });
    const anchor = Object.assign(document.createElement("a"), {
      className: "card-anchor", textContent: c.anchor, target: "_blank", rel: "noopener",
      href: "/source?anchor=" + encodeURIComponent(c.anchor), title: "open in its source (o)",
    });
    head.append(title, anchor);
    if (c.location && Object.keys(c.location).length)
      head.append(Object.assign(document.createElement("span"), { className: "muted", textContent: where(c.location) }));
    if (c.proposed) head.append(Object.assign(document.createElement("span"), { className: "proposed", textContent: "proposed by the drafter" }));
    const grades = document.createElement("span");
    grades.className = "grades";
    for (const v of [0, 1, 2]) {
      const b = document.createElement("button");
      b.className = `v${v}` + (c.grade === v ? " on" : "");
      b.textContent = v;
      b.title = ["not relevant", "partly relevant", "answers it"][v] + ` (${v})`;
      b.addEventListener("click", () => { S.area = area; S.focus = i; gradeFocused(v); });
      grades.append(b);
    }
    head.append(grades);
    if (area === "pool" && c.grade > 0) {
      const g = groupOf(S.q, c.anchor);
      const ev = Object.assign(document.createElement("button"), {
        className: "evidence" + (g >= 0 ? " on" : ""), textContent: g >= 0 ? `evidence group ${g + 1}` : "evidence: none",
        title: "the evidence group of this section: click (or g) for the next one",
      });
      ev.addEventListener("click", () => cycleEvidence(i));
      head.append(ev);
    }
    const body = document.createElement("div");
    body.className = "card-body";
    renderText(body, c.text);
    highlight(body, S.terms);
    card.append(head, body);
    card.addEventListener("click", (e) => { if (e.target.tagName !== "BUTTON" && e.target.tagName !== "A") { S.area = area; S.focus = i; markFocus(); } });
    box.append(card);
  });
}

// a source location as a reader says it: "lines 4-6", "page 3", "cell 2"
function where(loc) {
  const out = [];
  for (const [k, v] of Object.entries(loc)) {
    if (k.endsWith("_end")) continue;
    const end = loc[k + "_end"];
    out.push(end !== undefined && end !== v ? `${k}s ${v}–${end}` : `${k.replace("_", " ")} ${v}`);
  }
  return out.join(", ");
}

// markdown as the loaders write it, drawn safely: code fences as <pre>, pipe tables as tables, paragraphs
function renderText(el, text) {
  const parts = text.split(/^(```[^\n]*\n[\s\S]*?^```)\s*$/m);
  for (const part of parts) {
    if (!part.trim()) continue;
    if (part.startsWith("```")) {
      const pre = document.createElement("pre");
      pre.textContent = part.replace(/^```[^\n]*\n/, "").replace(/\n?```$/, "");
      el.append(pre);
      continue;
    }
    for (const block of part.split(/\n\s*\n/)) {
      const lines = block.split("\n").filter((l) => l.trim());
      if (!lines.length) continue;
      if (lines.every((l) => l.trim().startsWith("|"))) { el.append(table(lines)); continue; }
      // a list, or lines of text ending in one ("Steps:" then its items)
      const k = lines.findIndex((l) => ITEM.test(l));
      const isList = k >= 0 && lines.slice(k).every((l) => ITEM.test(l) || /^\s/.test(l));
      const text = isList ? lines.slice(0, k) : lines;
      if (text.length) {
        const p = document.createElement("p");
        const t = text.join("\n");
        if (/^#{1,6} /.test(t)) { const s = document.createElement("strong"); s.textContent = t.replace(/^#+ /, ""); p.append(s); }
        else inline(p, t);
        el.append(p);
      }
      if (isList) el.append(listBlock(lines.slice(k)));
    }
  }
}

// list items as the loaders write them ("- x", "1. x", "a) x", nested by indentation), drawn as <ul>/<ol>
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)]|[a-zA-Z][.)]|#\.)\s+(\S.*)$/;

function listBlock(lines) {
  const root = document.createDocumentFragment();
  const stack = [];  // open lists, outermost first: { indent, ordered, list, li }
  for (const l of lines) {
    const m = ITEM.exec(l);
    if (!m) {  // a continuation line of the item above
      const top = stack[stack.length - 1];
      if (top && top.li) { top.li.append(" "); inline(top.li, l.trim()); }
      continue;
    }
    const indent = m[1].length, marker = m[2], ordered = !/^[-*+]$/.test(marker);
    const number = /^\d/.test(marker) ? parseInt(marker, 10) : null;
    while (stack.length && stack[stack.length - 1].indent > indent) stack.pop();
    let top = stack[stack.length - 1];
    // another kind of list, or numbering that starts again (two lists one after the other): a new list
    if (top && top.indent === indent && (top.ordered !== ordered || (number !== null && top.number !== null &&
        number <= top.number))) { stack.pop(); top = stack[stack.length - 1]; }
    if (!top || top.indent < indent) {
      const list = document.createElement(ordered ? "ol" : "ul");
      if (/^[a-z][.)]$/.test(marker)) list.type = "a";
      else if (/^[A-Z][.)]$/.test(marker)) list.type = "A";
      if (top && top.li) top.li.append(list); else root.append(list);
      top = { indent, ordered, list, li: null, number: null };
      stack.push(top);
    }
    const li = document.createElement("li");
    if (number !== null) li.value = number;
    inline(li, m[3]);
    top.list.append(li);
    top.li = li;
    top.number = number;
  }
  return root;
}

function inline(p, t) {
  t.split(/(`[^`\n]+`)/).forEach((s) => {
    if (s.startsWith("`") && s.endsWith("`") && s.length > 1) p.append(Object.assign(document.createElement("code"), { textContent: s.slice(1, -1) }));
    else if (s) p.append(document.createTextNode(s));
  });
}

function table(lines) {
  const t = document.createElement("table");
  for (const l of lines) {
    const cells = l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|");
    if (cells.every((c) => /^\s*:?-{2,}:?\s*$/.test(c))) continue;
    const tr = document.createElement("tr");
    for (const c of cells) { const td = document.createElement("td"); inline(td, c.trim()); tr.append(td); }
    t.append(tr);
  }
  return t;
}

function highlight(root, terms) {
  if (!terms || !terms.length) return;
  const esc = terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp(`(?<![\\w])(${esc.join("|")})`, "gi");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const n of nodes) {
    const s = n.nodeValue;
    re.lastIndex = 0;
    if (!re.test(s)) continue;
    re.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let last = 0, m;
    while ((m = re.exec(s))) {
      frag.append(document.createTextNode(s.slice(last, m.index)));
      frag.append(Object.assign(document.createElement("mark"), { textContent: m[0] }));
      last = m.index + m[0].length;
    }
    frag.append(document.createTextNode(s.slice(last)));
    n.replaceWith(frag);
  }
}

function list() { return S.area === "search" ? S.results : (S.q ? S.q.candidates : []); }

function markFocus() {
  document.querySelectorAll(".card.focus").forEach((c) => c.classList.remove("focus"));
  const box = S.area === "search" ? $("#results") : $("#pool");
  const card = box.children[S.focus];
  if (card) { card.classList.add("focus"); card.scrollIntoView({ block: "nearest" }); }
}

function move(d) {
  const n = list().length;
  if (!n) return;
  S.focus = Math.max(0, Math.min(n - 1, S.focus + d));
  markFocus();
}

// -- judging

async function gradeFocused(v) {
  if (!S.q) return;
  const c = list()[S.focus];
  if (!c || S.busy) return;
  S.busy = true;
  const area = S.area;
  const ok = await change(`/api/question/${encodeURIComponent(S.q.id)}/grade`,
    { rev: S.q.rev, anchor: c.anchor, grade: v },
    { qid: S.q.id, kind: "grade", anchor: c.anchor, prev: c.grade === undefined ? null : c.grade });
  S.busy = false;
  if (!ok) return;
  if (area === "search") {
    // a section found by search joins the pool: judge on from where it now stands
    S.results = S.results.map((r) => r.anchor === c.anchor ? { ...r, grade: v } : r);
    S.area = "pool";
    S.focus = Math.max(0, S.q.candidates.findIndex((x) => x.anchor === c.anchor));
    drawQuestion(S.q);
  } else if (v !== null) {
    const cs = S.q.candidates;
    const next = cs.findIndex((x, i) => i > S.focus && x.grade === null);
    S.focus = next >= 0 ? next : Math.min(S.focus + 1, cs.length - 1);
    markFocus();
  }
}

// u marks the question unanswerable, U (shift+u) puts it back to judging: never a toggle, and always a message
async function setUnanswerable(value) {
  if (!S.q || S.busy) return;
  S.busy = true;
  const qid = S.q.id;
  const q = await change(`/api/question/${encodeURIComponent(qid)}/unanswerable`, { rev: S.q.rev, value });
  S.busy = false;
  if (!q) return;
  if (q.changed) S.undo.push({ qid, kind: "unanswerable", prev: !value });
  say(q.message + (q.status === "unanswerable" ? " · U puts it back to judging" : " · u marks it unanswerable"), true);
}

async function acceptDraft() {
  if (!S.q) return;
  for (const c of S.q.candidates.filter((x) => x.proposed && x.grade === null)) {
    if (!await change(`/api/question/${encodeURIComponent(S.q.id)}/grade`, { rev: S.q.rev, anchor: c.anchor, grade: 2 },
      { qid: S.q.id, kind: "grade", anchor: c.anchor, prev: null })) return;
  }
}

async function undo() {
  const u = S.undo.pop();
  if (!u) { say("nothing to undo", true); return; }
  if (u.qid !== S.current) await open(u.qid);
  if (!S.q || S.q.id !== u.qid) return;
  const path = `/api/question/${encodeURIComponent(u.qid)}/` + (u.kind === "grade" ? "grade" : "unanswerable");
  const body = u.kind === "grade" ? { rev: S.q.rev, anchor: u.anchor, grade: u.prev } : { rev: S.q.rev, value: u.prev };
  const q = await change(path, body);
  if (q) {
    say(u.kind === "grade" ? "undone" : `undone: ${q.message}`, true);
    if (u.kind === "grade") { S.area = "pool"; S.focus = Math.max(0, S.q.candidates.findIndex((x) => x.anchor === u.anchor)); markFocus(); }
  }
}

function step(d, unjudgedOnly) {
  const qs = visible();
  if (!qs.length) return;
  const i = qs.findIndex((q) => q.id === S.current);
  for (let n = 1; n <= qs.length; n++) {
    const q = qs[(i + d * n + qs.length * n) % qs.length];
    if (!unjudgedOnly || !q.complete) return open(q.id);
  }
  say("every question shown is judged", true);
}

async function search(text) {
  if (!text.trim() || !S.q) return;
  try {
    const r = await api(`/api/search?q=${encodeURIComponent(text)}&qid=${encodeURIComponent(S.q.id)}`);
    S.results = r.results;
    S.area = "search";
    S.focus = 0;
    drawQuestion(S.q);
    const n = r.in_pool.length;
    const left = n ? `${n} match${n === 1 ? "" : "es"} already in the pool not shown` : "";
    if (!S.results.length) say("no section outside the pool matches that search" + (n ? `; ${left}` : ""), true);
    else say(left, true);
    $("#search").blur();
  } catch (e) { say(e.message); }
}

function editText() {
  if (!S.q) return;
  const inp = $("#q-edit");
  inp.value = S.q.q;
  inp.hidden = false;
  $("#q-text").hidden = true;
  inp.focus();
}

function editTags() {
  if (!S.q) return;
  const inp = $("#tags-edit");
  inp.value = S.q.tags.join(", ");
  inp.hidden = false;
  inp.focus();
}

async function finishEdit(inp, field) {
  inp.hidden = true;
  $("#q-text").hidden = false;
  if (!S.q) return;
  const body = { rev: S.q.rev };
  if (field === "q") { if (inp.value.trim() === S.q.q) return; body.q = inp.value; }
  else body.tags = inp.value.split(",").map((t) => t.trim()).filter(Boolean);
  await change(`/api/question/${encodeURIComponent(S.q.id)}/edit`, body);
}

async function addQuestions(questions) {
  try {
    const r = await api("/api/questions", { questions });
    await loadState();
    if (r.added.length && !S.current) await open(r.added[0]);
    return r;
  } catch (e) { say(e.message); $("#import-result").textContent = e.message; return null; }
}

async function exportSession() {
  const headers = {};
  const key = sessionStorage.getItem("ragtune-key");
  if (key) headers["X-API-Key"] = key;
  const r = await fetch("/api/export", { headers });
  if (!r.ok) { say(`export failed: ${r.status}`); return; }
  const a = Object.assign(document.createElement("a"), { href: URL.createObjectURL(await r.blob()), download: "judged-this-session.jsonl" });
  document.body.append(a);
  a.click();
  a.remove();
}

// -- import

function tab(name) {
  document.querySelectorAll("#import-tabs button").forEach((b) => b.classList.toggle("on", b.dataset.tab === name));
  document.querySelectorAll("[data-pane]").forEach((p) => { p.hidden = p.dataset.pane !== name; });
  if (name === "traffic") loadTraffic();
}

async function loadTraffic() {
  const box = $("#traffic");
  box.textContent = "reading the log…";
  try {
    const r = await api("/api/traffic");
    box.replaceChildren();
    if (!r.groups.length) box.textContent = "the log holds no questions";
    r.groups.forEach((g, gi) => {
      const fs = document.createElement("fieldset");
      fs.append(Object.assign(document.createElement("legend"), { textContent: `asked ${g.size}×` + (g.not_found ? ` · ${g.not_found} not found` : "") }));
      g.questions.forEach((q, qi) => {
        const l = document.createElement("label");
        const cb = Object.assign(document.createElement("input"), { type: "checkbox", disabled: q.known, checked: false });
        cb.style.width = "auto";
        cb.dataset.q = JSON.stringify(q);
        l.append(cb, ` ${q.q} `);
        l.append(Object.assign(document.createElement("span"), { className: "muted", textContent: `asked ${q.asked}×` + (q.variants.length ? ` (+${q.variants.length} near-duplicate${q.variants.length > 1 ? "s" : ""})` : "") + (q.known ? " · already in the set" : "") }));
        if (q.not_found) l.append(Object.assign(document.createElement("span"), { className: "nf", textContent: ` ${q.not_found} not found` }));
        fs.append(l);
      });
      box.append(fs);
    });
  } catch (e) { box.textContent = e.message; }
}

async function importTraffic() {
  const picked = [...document.querySelectorAll("#traffic input:checked")].map((cb) => JSON.parse(cb.dataset.q));
  const r = await addQuestions(picked.map((q) => ({
    q: q.q, tags: ["traffic"].concat(q.not_found ? ["not-found"] : []),
    draft: { origin: "telemetry", asked: q.asked, not_found: q.not_found, variants: q.variants },
  })));
  if (r) { $("#import-result").textContent = `added ${r.added.length}, ${r.skipped} already in the set`; loadTraffic(); }
}

async function importText() {
  const tags = $("#import-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  const qs = $("#import-text").value.split("\n").map((l) => l.trim()).filter(Boolean);
  const r = await addQuestions(qs.map((q) => ({ q, tags, draft: { origin: "import" } })));
  if (r) { $("#import-result").textContent = `added ${r.added.length}, ${r.skipped} already in the set`; $("#import-text").value = ""; }
}

async function importDrafts() {
  const rows = [];
  const lines = $("#import-drafts").value.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].trim()) continue;
    try { rows.push(JSON.parse(lines[i])); } catch (e) { $("#import-result").textContent = `line ${i + 1} is not JSON: ${e.message}`; return; }
  }
  const draft = (o) => ({ ...o, status: "draft", draft: { ...(o.draft || {}), origin: "draft" } });
  // a conversation line stays one: each of its turns a draft
  const r = await addQuestions(rows.map((o) => (Array.isArray(o.turns) ? { ...o, turns: o.turns.map(draft) } : draft(o))));
  if (r) { $("#import-result").textContent = `added ${r.added.length}, ${r.skipped} already in the set`; $("#import-drafts").value = ""; }
}

// -- keys

function inText(e) { return ["INPUT", "TEXTAREA"].includes(e.target.tagName) || e.target.isContentEditable; }

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (document.querySelector("dialog[open]")) return;
  if (inText(e)) {
    if (e.key === "Escape") { e.target.blur(); if (e.target.id === "q-edit" || e.target.id === "tags-edit") { e.target.hidden = true; $("#q-text").hidden = false; } }
    return;
  }
  const k = e.key;
  const act = {
    j: () => move(1), ArrowDown: () => move(1), k: () => move(-1), ArrowUp: () => move(-1),
    0: () => gradeFocused(0), 1: () => gradeFocused(1), 2: () => gradeFocused(2), "-": () => gradeFocused(null),
    g: () => { if (S.area === "pool") cycleEvidence(S.focus); },
    u: () => setUnanswerable(true), U: () => setUnanswerable(false), y: acceptDraft, n: () => step(1, true), "]": () => step(1), "[": () => step(-1),
    z: undo, "/": () => $("#search").focus(), a: () => $("#add-input").focus(), e: editText, t: editTags,
    i: () => { $("#import").showModal(); tab("text"); }, "?": () => $("#help").showModal(),
    o: () => { const c = list()[S.focus]; if (c) window.open("/source?anchor=" + encodeURIComponent(c.anchor), "_blank", "noopener"); },
    Escape: () => { if (S.area === "search") { S.area = "pool"; S.focus = 0; markFocus(); } },
  }[k];
  if (act) { e.preventDefault(); act(); }
});

// -- wiring

window.addEventListener("DOMContentLoaded", async () => {
  $("#add-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = $("#add-input").value.trim();
    if (!q) return;
    const r = await addQuestions([{ q }]);
    if (r) {
      $("#add-input").value = "";
      if (r.added.length) await open(r.added[0]); else say("that question is already in the set", true);
      $("#add-input").blur();
    }
  });
  $("#search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("#search").value); });
  $("#filter").addEventListener("input", (e) => { S.filter = e.target.value; drawList(); });
  document.querySelectorAll("#status-filter button").forEach((b) => b.addEventListener("click", () => {
    S.status = b.dataset.status;
    document.querySelectorAll("#status-filter button").forEach((x) => x.classList.toggle("on", x === b));
    drawList();
  }));
  $("#q-edit").addEventListener("keydown", (e) => { if (e.key === "Enter") finishEdit(e.target, "q"); });
  $("#tags-edit").addEventListener("keydown", (e) => { if (e.key === "Enter") finishEdit(e.target, "tags"); });
  $("#unanswerable").addEventListener("click", () => setUnanswerable(S.q && S.q.status !== "unanswerable"));
  $("#accept-draft").addEventListener("click", acceptDraft);
  $("#next-unjudged").addEventListener("click", () => step(1, true));
  $("#undo").addEventListener("click", undo);
  $("#delete").addEventListener("click", async () => {
    if (S.q && window.confirm(`Delete "${S.q.q}" from the golden set?`))
      await change(`/api/question/${encodeURIComponent(S.q.id)}/delete`, { rev: S.q.rev });
  });
  $("#export").addEventListener("click", exportSession);
  $("#help-open").addEventListener("click", () => $("#help").showModal());
  $("#import-open").addEventListener("click", () => { $("#import").showModal(); tab("text"); });
  $("#empty-import").addEventListener("click", () => { $("#import").showModal(); tab("text"); });
  document.querySelectorAll("#import-tabs button").forEach((b) => b.addEventListener("click", () => tab(b.dataset.tab)));
  $("#import-text-go").addEventListener("click", importText);
  $("#import-drafts-go").addEventListener("click", importDrafts);
  $("#import-traffic-go").addEventListener("click", importTraffic);
  $("#import-text-file").addEventListener("change", async (e) => { const f = e.target.files[0]; if (f) $("#import-text").value = await f.text(); });
  $("#import-file").addEventListener("change", async (e) => { const f = e.target.files[0]; if (f) $("#import-drafts").value = await f.text(); });
  $("#import").addEventListener("close", () => { $("#import-result").textContent = ""; });
  try {
    const st = await loadState();
    const first = st.questions.find((q) => !q.complete) || st.questions[0];
    if (first) await open(first.id);
    if (!st.retrieval.ready) {
      const poll = setInterval(async () => {
        const s = await loadState();
        if (s.retrieval.ready || s.retrieval.error) { clearInterval(poll); if (S.current) open(S.current, true); }
      }, 1500);
    }
  } catch (e) { say(e.message); }
  document.body.dataset.ready = "1";
});
