// The script of the runs dashboard page (inlined by page.ts). Text from runs is always set
// with textContent, never as HTML.
export const DASHBOARD_SCRIPT = String.raw`
"use strict";
const $ = (id) => document.getElementById(id);
const COL = 150, ROW = 60, W = 110, H = 32;
let graph = null, selected = null, source = null, current = null;

async function api(path, init) {
  const res = await fetch(path, init);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ? body.error.code + ": " + body.error.message : res.status);
  return body;
}

function layout() {
  const depth = new Map([[graph.entry, 0]]);
  const queue = [graph.entry];
  while (queue.length) {
    const id = queue.shift();
    for (const e of graph.edges) if (e.from === id && e.to !== "__end__" && !depth.has(e.to)) { depth.set(e.to, depth.get(id) + 1); queue.push(e.to); }
  }
  for (const n of graph.nodes) if (!depth.has(n.id)) depth.set(n.id, 0);
  const cols = new Map();
  const pos = new Map();
  for (const n of graph.nodes) {
    const d = depth.get(n.id); const row = cols.get(d) || 0; cols.set(d, row + 1);
    pos.set(n.id, { col: d, x: 20 + d * COL, y: 20 + row * ROW });
  }
  const end = Math.max(...depth.values()) + 1;
  pos.set("__end__", { col: end, x: 20 + end * COL, y: 20 });
  return { pos, bottom: 20 + Math.max(...cols.values()) * ROW - (ROW - H), width: 20 + (end + 1) * COL };
}

// An edge to the next column is a straight line; any other (skipping columns, going back, or to
// itself) arcs below every node, so it is never hidden behind a node it does not touch.
function edgePath(a, b, below) {
  if (b.col === a.col + 1) return "M" + (a.x + W) + "," + (a.y + H / 2) + " L" + b.x + "," + (b.y + H / 2);
  const x1 = a.x + W / 2, x2 = b.x + W / 2 + (a === b ? 20 : 0), y1 = a.y + H, y2 = b.y + H;
  return "M" + x1 + "," + y1 + " C" + x1 + "," + below + " " + x2 + "," + below + " " + x2 + "," + y2;
}

function drawGraph(visited, now) {
  const svg = $("graph");
  const ns = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const defs = document.createElementNS(ns, "defs");
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#99a"/></marker>';
  svg.appendChild(defs);
  const { pos, bottom, width } = layout();
  const arcs = graph.edges.filter((e) => pos.get(e.to).col !== pos.get(e.from).col + 1).length;
  const below = bottom + 24;
  svg.setAttribute("height", String(below + (arcs > 0 ? 8 : -16)));
  svg.setAttribute("viewBox", "0 0 " + width + " " + (below + (arcs > 0 ? 8 : -16)));
  for (const e of graph.edges) {
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", edgePath(pos.get(e.from), pos.get(e.to), below));
    path.setAttribute("class", "edge " + e.type);
    path.dataset.from = e.from; path.dataset.to = e.to;
    svg.appendChild(path);
  }
  for (const n of [...graph.nodes, { id: "__end__", kind: "end" }]) {
    const p = pos.get(n.id);
    const g = document.createElementNS(ns, "g");
    g.setAttribute("class", "node" + (visited.has(n.id) ? " visited" : "") + (n.id === now ? " current" : ""));
    g.setAttribute("data-node", n.id);
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", p.x); rect.setAttribute("y", p.y); rect.setAttribute("width", W); rect.setAttribute("height", H); rect.setAttribute("rx", 6);
    const text = document.createElementNS(ns, "text");
    text.setAttribute("x", p.x + 8); text.setAttribute("y", p.y + 20);
    text.textContent = n.id === "__end__" ? "END" : n.id + " · " + n.kind;
    g.append(rect, text);
    svg.appendChild(g);
  }
}

function setTime(el, ms) {
  const d = new Date(ms);
  el.setAttribute("datetime", d.toISOString());
  el.textContent = d.toLocaleString();
}

function showAllowed(node) {
  const schema = graph.answers[node];
  const list = $("answer-values");
  list.textContent = "";
  if (!schema) { $("allowed").textContent = ""; return; }
  if (Array.isArray(schema.enum)) {
    $("allowed").textContent = "Allowed: " + schema.enum.map((v) => typeof v === "string" ? v : JSON.stringify(v)).join(", ");
    for (const v of schema.enum) { const o = document.createElement("option"); o.value = typeof v === "string" ? v : JSON.stringify(v); list.appendChild(o); }
  } else {
    $("allowed").textContent = "Answer with JSON matching " + JSON.stringify(schema);
  }
}

function showRun(x) {
  $("exec-id").textContent = x.runId;
  const status = $("status");
  status.textContent = x.status; status.className = "badge s-" + x.status;
  $("times").hidden = false;
  setTime($("created"), x.createdAt);
  setTime($("updated"), x.updatedAt);
  const visited = new Set(x.path.map((k) => k.split("#")[0]));
  if (x.status === "succeeded") visited.add("__end__");
  drawGraph(visited, x.pausedAt || current);
  $("state").textContent = JSON.stringify(x.state, null, 2);
  const form = $("answer-form");
  if (x.status === "paused" && x.pausedAt) {
    form.hidden = false;
    form.dataset.node = x.pausedAt;
    $("prompt").textContent = (x.pause && x.pause.prompt) || "Input for " + x.pausedAt;
    showAllowed(x.pausedAt);
  } else {
    form.hidden = true;
  }
}

async function select(id) {
  selected = id; current = null;
  if (location.hash !== "#run=" + id) history.replaceState(null, "", "#run=" + id);
  for (const tr of document.querySelectorAll("tr[data-id]")) tr.classList.toggle("selected", tr.dataset.id === id);
  $("events").textContent = "";
  if (source) source.close();
  source = new EventSource("/api/runs/" + encodeURIComponent(id) + "/events");
  const onEvent = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.type === "node.started") current = e.data.node;
    if (e.type === "node.completed") current = null;
    const li = document.createElement("li");
    li.value = e.seq;
    li.textContent = e.type + (e.data && e.data.node ? " " + e.data.node : "") + (e.data && e.data.chunk ? " " + JSON.stringify(e.data.chunk) : "");
    $("events").appendChild(li);
    refreshSelected().catch(() => undefined);
  };
  for (const t of ["run.started","node.started","node.completed","node.failed","tool.started","tool.completed","output.delta","run.paused","run.resumed","run.retrying","run.succeeded","run.failed","run.cancelled"]) source.addEventListener(t, onEvent);
  try {
    await refreshSelected();
  } catch (err) {
    $("exec-id").textContent = id + " — " + String(err.message || err);
  }
}

async function refreshSelected() {
  if (!selected) return;
  showRun(await api("/api/runs/" + encodeURIComponent(selected)));
}

async function refreshList() {
  const list = await api("/api/runs");
  list.sort((a, b) => a.entryPoint.localeCompare(b.entryPoint) || a.status.localeCompare(b.status) || b.createdAt - a.createdAt);
  const body = $("runs");
  body.textContent = "";
  $("empty").textContent = "No runs yet.";
  $("empty").hidden = list.length > 0;
  for (const x of list) {
    const tr = document.createElement("tr");
    tr.dataset.id = x.runId;
    tr.dataset.status = x.status;
    if (x.runId === selected) tr.classList.add("selected");
    const ep = document.createElement("td"); ep.textContent = x.entryPoint;
    const st = document.createElement("td"); const badge = document.createElement("span"); badge.className = "badge s-" + x.status; badge.textContent = x.status; st.appendChild(badge);
    const id = document.createElement("td"); id.textContent = x.runId.slice(0, 18) + "…"; id.title = x.runId;
    tr.append(ep, st, id);
    tr.onclick = () => select(x.runId);
    body.appendChild(tr);
  }
}

function fromHash() {
  const m = /^#run=([A-Za-z0-9_.:-]+)$/.exec(location.hash);
  if (m && m[1] !== selected) select(m[1]);
}

$("trigger-form").onsubmit = async (ev) => {
  ev.preventDefault();
  let input;
  try { input = JSON.parse($("trigger-input").value || "{}"); } catch { alert("The start state must be JSON."); return; }
  const { runId } = await api("/api/runs", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ entryPoint: $("trigger-entry").value, input }) });
  await refreshList();
  await select(runId);
};

$("answer-form").onsubmit = async (ev) => {
  ev.preventDefault();
  const raw = $("answer").value;
  let value; try { value = JSON.parse(raw); } catch { value = raw; }
  try {
    $("answer-error").textContent = "";
    const x = await api("/api/runs/" + encodeURIComponent(selected) + "/input", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ nodeId: $("answer-form").dataset.node, value }) });
    $("answer").value = "";
    showRun(x);
  } catch (err) {
    $("answer-error").textContent = String(err.message || err);
  }
};

(async () => {
  graph = await api("/api/graph");
  $("graph-name").textContent = graph.name;
  $("workers").hidden = graph.workers !== false;
  for (const ep of graph.entryPoints) { const o = document.createElement("option"); o.value = ep.id; o.textContent = ep.id; $("trigger-entry").appendChild(o); }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  try {
    await refreshList();
  } catch (err) {
    $("empty").textContent = "The runs could not be loaded: " + String(err.message || err);
  }
  setInterval(() => { refreshList().catch(() => undefined); }, 1000);
})();
`;
