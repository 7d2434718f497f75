// Runs the workbench page's script (src/ragtune/label/static/workbench.js) in node over a small stand-in for the
// DOM and fetch, then a scenario; prints what the scenario returns as JSON. Used by test_workbench_page.py where
// no chromium is installed: the drawing of a section's text and the keys, without a browser.
//   node page_harness.js WORKBENCH_JS SCENARIO_JS
"use strict";
const fs = require("fs");
const vm = require("vm");

class Text {
  constructor(t) { this.nodeValue = String(t); }
}

class Element {
  constructor(tag) {
    this.tagName = tag.toUpperCase(); this.children = []; this.style = {}; this.dataset = {}; this.hidden = false;
    this.classList = { add() {}, remove() {}, toggle() {}, contains() { return false; } };
  }
  append(...xs) {
    for (const x of xs) {
      if (x instanceof Fragment) this.children.push(...x.children);
      else this.children.push(typeof x === "string" ? new Text(x) : x);
    }
  }
  replaceChildren(...xs) { this.children = []; this.append(...xs); }
  addEventListener() {}
  scrollIntoView() {}
  blur() {}
  focus() {}
  showModal() {}
}

class Fragment extends Element {
  constructor() { super("#fragment"); }
}

// the markup of a drawn element: tags, the attributes a list uses, text
function html(n) {
  if (n instanceof Text) return n.nodeValue;
  const inner = n.children.length ? n.children.map(html).join("") : (n.textContent || "");
  const tag = n.tagName.toLowerCase();
  let attrs = "";
  if (n.type) attrs += ` type="${n.type}"`;
  if (n.value !== undefined && tag === "li") attrs += ` value="${n.value}"`;
  return `<${tag}${attrs}>${inner}</${tag}>`;
}

const bySelector = {};
const keyHandlers = [];
const requests = [];
const responses = [];  // functions (path, body) -> answer, tried in order
const document = {
  createElement: (t) => new Element(t),
  createTextNode: (t) => new Text(t),
  createDocumentFragment: () => new Fragment(),
  querySelector: (s) => (s.includes("[open]") ? null : (bySelector[s] = bySelector[s] || new Element("div"))),
  querySelectorAll: () => [],
  addEventListener: (type, fn) => { if (type === "keydown") keyHandlers.push(fn); },
  body: new Element("body"),
};
async function fetch(path, init) {
  const body = init && init.body ? JSON.parse(init.body) : undefined;
  requests.push({ path, body });
  for (const r of responses) {
    const data = r(path, body);
    if (data !== undefined) return { status: 200, ok: true, json: async () => data };
  }
  return { status: 404, ok: false, json: async () => ({ error: `no answer for ${path}` }) };
}
function press(key) {
  for (const fn of keyHandlers) fn({ key, target: { tagName: "BODY" }, preventDefault() {} });
  return new Promise((r) => setTimeout(r, 20));  // the change and the redraw after it
}

const context = vm.createContext({
  document, window: { addEventListener() {}, prompt() { return null; }, open() {}, confirm() { return false; } },
  sessionStorage: { getItem() { return null; }, setItem() {} }, fetch, console, setTimeout, setInterval,
  clearInterval, NodeFilter: { SHOW_TEXT: 4 }, URL, TextEncoder, html, press, requests, responses, bySelector,
});
const page = fs.readFileSync(process.argv[2], "utf8");
const scenario = fs.readFileSync(process.argv[3], "utf8");
vm.runInContext(`${page}\n;globalThis.__run = async () => { ${scenario} };`, context);
context.__run().then((out) => { process.stdout.write(JSON.stringify(out)); },
  (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
