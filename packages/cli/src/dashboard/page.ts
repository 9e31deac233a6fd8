// The runs dashboard: one self-contained page (inline CSS and script, no CDN, no build step).
// Text from executions is always set with textContent, never as HTML.
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Nerva runs</title>
<style>
  :root { font: 14px/1.4 system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
  body { margin: 0; }
  header { background: #1d2330; color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 16px; margin: 0; }
  header form { display: flex; gap: 8px; align-items: center; margin-left: auto; }
  header input, header select { font: inherit; padding: 3px 6px; }
  main { display: grid; grid-template-columns: 420px 1fr; gap: 16px; padding: 16px; }
  section { background: #fff; border-radius: 6px; padding: 12px; box-shadow: 0 1px 2px #0002; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eee; font-size: 13px; }
  tr[data-id] { cursor: pointer; }
  tr.selected { background: #e8f0ff; }
  .badge { border-radius: 9px; padding: 1px 8px; font-size: 12px; color: #fff; background: #777; }
  .s-completed { background: #2e8540; } .s-paused { background: #c77700; } .s-running, .s-pending { background: #2862c9; }
  .s-failed, .s-timed_out { background: #c0392b; } .s-cancelled { background: #555; }
  svg text { font-size: 12px; } svg .node rect { fill: #fff; stroke: #99a; stroke-width: 1.5; }
  svg .node.visited rect { fill: #dff0e3; stroke: #2e8540; }
  svg .node.current rect { fill: #ffe9c2; stroke: #c77700; stroke-width: 3; }
  svg line { stroke: #99a; stroke-width: 1.2; marker-end: url(#arrow); }
  #events { max-height: 260px; overflow: auto; font: 12px ui-monospace, monospace; margin: 0; padding-left: 40px; }
  #answer-form { margin: 10px 0; padding: 10px; background: #fff7e8; border: 1px solid #f0c36d; border-radius: 6px; }
  #answer-form[hidden] { display: none; }
  .muted { color: #777; }
</style>
</head>
<body>
<header>
  <h1>Nerva runs · <span id="graph-name"></span></h1>
  <form id="trigger-form">
    <select id="trigger-entry"></select>
    <input id="trigger-input" size="34" value="{}" aria-label="start state (JSON)">
    <button id="trigger-button" type="submit">Trigger</button>
  </form>
</header>
<main>
  <section>
    <h2>Executions</h2>
    <table><thead><tr><th>entry point</th><th>status</th><th>id</th></tr></thead><tbody id="executions"></tbody></table>
    <p id="empty" class="muted">No executions yet.</p>
  </section>
  <section>
    <h2>Execution <span id="exec-id" class="muted">(select one)</span> <span id="status"></span></h2>
    <svg id="graph" width="100%" height="220"></svg>
    <form id="answer-form" hidden>
      <label for="answer" id="prompt"></label><br>
      <input id="answer" size="40"> <button id="answer-button" type="submit">Answer</button>
      <div id="answer-error" class="muted"></div>
    </form>
    <h2>Events</h2>
    <ol id="events"></ol>
    <h2>State</h2>
    <pre id="state" class="muted"></pre>
  </section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
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
    pos.set(n.id, { x: 20 + d * 150, y: 20 + row * 60 });
  }
  const maxDepth = Math.max(...depth.values()) + 1;
  $("graph").setAttribute("height", String(40 + Math.max(...cols.values()) * 60));
  pos.set("__end__", { x: 20 + maxDepth * 150, y: 20 });
  return pos;
}

function drawGraph(visited, now) {
  const svg = $("graph");
  const ns = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const defs = document.createElementNS(ns, "defs");
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#99a"/></marker>';
  svg.appendChild(defs);
  const pos = layout();
  for (const e of graph.edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    const line = document.createElementNS(ns, "line");
    line.setAttribute("x1", a.x + 110); line.setAttribute("y1", a.y + 16);
    line.setAttribute("x2", b.x); line.setAttribute("y2", b.y + 16);
    svg.appendChild(line);
  }
  for (const n of [...graph.nodes, { id: "__end__", kind: "end" }]) {
    const p = pos.get(n.id);
    const g = document.createElementNS(ns, "g");
    g.setAttribute("class", "node" + (visited.has(n.id) ? " visited" : "") + (n.id === now ? " current" : ""));
    g.setAttribute("data-node", n.id);
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", p.x); rect.setAttribute("y", p.y); rect.setAttribute("width", 110); rect.setAttribute("height", 32); rect.setAttribute("rx", 6);
    const text = document.createElementNS(ns, "text");
    text.setAttribute("x", p.x + 8); text.setAttribute("y", p.y + 20);
    text.textContent = n.id === "__end__" ? "END" : n.id + " · " + n.kind;
    g.append(rect, text);
    svg.appendChild(g);
  }
}

function showExecution(x) {
  $("exec-id").textContent = x.executionId;
  const status = $("status");
  status.textContent = x.status; status.className = "badge s-" + x.status;
  const visited = new Set(x.path.map((k) => k.split("#")[0]));
  if (x.status === "completed") visited.add("__end__");
  drawGraph(visited, x.pausedAt || current);
  $("state").textContent = JSON.stringify(x.state, null, 2);
  const form = $("answer-form");
  if (x.status === "paused" && x.pausedAt) {
    form.hidden = false;
    form.dataset.node = x.pausedAt;
    $("prompt").textContent = (x.request && x.request.prompt) || "Input for " + x.pausedAt;
  } else {
    form.hidden = true;
  }
}

async function select(id) {
  selected = id; current = null;
  for (const tr of document.querySelectorAll("tr[data-id]")) tr.classList.toggle("selected", tr.dataset.id === id);
  $("events").textContent = "";
  if (source) source.close();
  source = new EventSource("/api/executions/" + encodeURIComponent(id) + "/events");
  source.onmessage = null;
  const onEvent = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.type === "node_started") current = e.nodeId;
    if (e.type === "node_completed" || e.type.startsWith("execution_")) current = e.type === "node_completed" ? null : current;
    const li = document.createElement("li");
    li.value = e.seq;
    li.textContent = e.type + (e.nodeId ? " " + e.nodeId : "") + (e.data && e.data.chunk ? " " + JSON.stringify(e.data.chunk) : "");
    $("events").appendChild(li);
    refreshSelected();
  };
  for (const t of ["execution_started","node_started","node_completed","node_failed","tool_call_started","tool_call_completed","client_output_delta","client_input_requested","execution_paused","execution_resumed","execution_retrying","execution_completed","execution_failed","execution_cancelled"]) source.addEventListener(t, onEvent);
  await refreshSelected();
}

async function refreshSelected() {
  if (!selected) return;
  showExecution(await api("/api/executions/" + encodeURIComponent(selected)));
}

async function refreshList() {
  const list = await api("/api/executions");
  list.sort((a, b) => a.entryPoint.localeCompare(b.entryPoint) || a.status.localeCompare(b.status) || b.createdAt - a.createdAt);
  const body = $("executions");
  body.textContent = "";
  $("empty").hidden = list.length > 0;
  for (const x of list) {
    const tr = document.createElement("tr");
    tr.dataset.id = x.executionId;
    tr.dataset.status = x.status;
    if (x.executionId === selected) tr.classList.add("selected");
    const ep = document.createElement("td"); ep.textContent = x.entryPoint;
    const st = document.createElement("td"); const badge = document.createElement("span"); badge.className = "badge s-" + x.status; badge.textContent = x.status; st.appendChild(badge);
    const id = document.createElement("td"); id.textContent = x.executionId.slice(0, 18) + "…"; id.title = x.executionId;
    tr.append(ep, st, id);
    tr.onclick = () => select(x.executionId);
    body.appendChild(tr);
  }
}

$("trigger-form").onsubmit = async (ev) => {
  ev.preventDefault();
  let input;
  try { input = JSON.parse($("trigger-input").value || "{}"); } catch { alert("The start state must be JSON."); return; }
  const { executionId } = await api("/api/executions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ entryPoint: $("trigger-entry").value, input }) });
  await refreshList();
  await select(executionId);
};

$("answer-form").onsubmit = async (ev) => {
  ev.preventDefault();
  const raw = $("answer").value;
  let value; try { value = JSON.parse(raw); } catch { value = raw; }
  try {
    $("answer-error").textContent = "";
    await api("/api/executions/" + encodeURIComponent(selected) + "/input", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ nodeId: $("answer-form").dataset.node, value }) });
    $("answer").value = "";
    await refreshSelected();
  } catch (err) {
    $("answer-error").textContent = String(err.message || err);
  }
};

(async () => {
  graph = await api("/api/graph");
  $("graph-name").textContent = graph.name;
  for (const ep of graph.entryPoints) { const o = document.createElement("option"); o.value = ep.id; o.textContent = ep.id; $("trigger-entry").appendChild(o); }
  await refreshList();
  setInterval(() => { refreshList().catch(() => undefined); }, 1000);
})();
</script>
</body>
</html>
`;
