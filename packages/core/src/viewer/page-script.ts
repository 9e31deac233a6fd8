// The trace viewer page's script (plain browser JavaScript, inlined by page.ts). Every value that
// comes from a trace (names, attributes, errors, user ids) is set with textContent or as an
// attribute value, never parsed as HTML.
export const PAGE_SCRIPT = String.raw`
const $ = (id) => document.getElementById(id);
let selectedTrace = null;
let selectedSpan = null;
let current = null;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function api(path) {
  const res = await fetch(BASE + path, { headers: { accept: "application/json" } });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ? body.error.message : "HTTP " + res.status);
  return body;
}

function ms(value) {
  if (value === null || value === undefined) return "open";
  if (value < 1) return value.toFixed(2) + " ms";
  if (value < 1000) return (value < 10 ? value.toFixed(2) : value.toFixed(1)) + " ms";
  return (value / 1000).toFixed(2) + " s";
}
function cost(usd) {
  if (!usd) return "$0";
  if (usd < 0.0001) return "$" + usd.toPrecision(2);
  return "$" + (usd >= 1 ? usd.toFixed(2) : usd.toFixed(4));
}
function tokens(n) {
  return n.toLocaleString("en-US");
}
function clock(epochMs) {
  const d = new Date(epochMs);
  const pad = (n, w) => String(n).padStart(w, "0");
  return pad(d.getHours(), 2) + ":" + pad(d.getMinutes(), 2) + ":" + pad(d.getSeconds(), 2) + "." + pad(d.getMilliseconds(), 3);
}
function userCell(td, userId) {
  td.className = "user";
  if (userId === null || userId === undefined) { td.textContent = "(anonymous)"; td.classList.add("anon"); }
  else { td.textContent = userId; td.title = userId; }
}
// What a span is about, next to its name: the handler, tool, server or model it names.
function subject(span) {
  const a = span.attributes;
  for (const key of ["handler", "tool", "gen_ai.request.model", "server", "model"]) {
    if (typeof a[key] === "string" && a[key] !== "" && span.name.indexOf(a[key]) === -1) return a[key];
  }
  return "";
}

async function refreshList() {
  const data = await api("/api/traces?limit=200");
  const body = $("traces");
  body.textContent = "";
  $("no-traces").hidden = data.traces.length > 0;
  const dropped = data.droppedTraces + data.droppedSpans + data.droppedEvents;
  $("stats").textContent = data.traces.length + " traces" +
    (dropped > 0 ? " · dropped: " + data.droppedTraces + " traces, " + data.droppedSpans + " spans, " + data.droppedEvents + " events" : "");
  for (const t of data.traces) {
    const tr = el("tr");
    tr.dataset.traceId = t.traceId;
    tr.dataset.status = t.status;
    if (t.traceId === selectedTrace) tr.classList.add("selected");
    tr.append(el("td", "", clock(t.startMs)));
    const root = el("td", "root", t.rootName);
    root.title = t.rootName;
    tr.append(root);
    tr.append(el("td", "num", ms(t.durationMs)));
    const st = el("td");
    st.append(el("span", "badge " + t.status, t.status));
    if (t.errorCount > 0 && t.status !== "error") st.append(el("span", "muted", " " + t.errorCount + " error" + (t.errorCount > 1 ? "s" : "")));
    tr.append(st);
    tr.append(el("td", "num", tokens(t.usage.totalTokens)));
    tr.append(el("td", "num", cost(t.usage.costUsd)));
    const user = el("td");
    userCell(user, t.userId);
    tr.append(user);
    tr.addEventListener("click", () => { location.hash = "trace=" + t.traceId; });
    body.append(tr);
  }
  if (data.meter) await refreshUsers();
  else $("no-meter").hidden = false;
}

async function refreshUsers() {
  const data = await api("/api/users");
  const body = $("users");
  body.textContent = "";
  for (const u of data.users || []) {
    const tr = el("tr");
    const user = el("td");
    userCell(user, u.userId);
    tr.append(user, el("td", "num", tokens(u.requests)), el("td", "num", tokens(u.inputTokens)), el("td", "num", tokens(u.outputTokens)), el("td", "num", cost(u.costUsd)));
    body.append(tr);
  }
}

function niceStep(total) {
  const raw = total / 6;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function drawTrace(trace) {
  current = trace;
  $("trace-title").textContent = trace.rootName + " · " + trace.traceId + " · " + ms(trace.durationMs) +
    " · " + tokens(trace.usage.totalTokens) + " tokens · " + cost(trace.usage.costUsd);
  const wf = $("waterfall");
  wf.textContent = "";
  const t0 = trace.startMs;
  let t1 = t0;
  for (const s of trace.spans) t1 = Math.max(t1, s.endMs === null ? trace.readAtMs : s.endMs);
  const total = Math.max(t1 - t0, 0.001);
  const pct = (t) => ((t - t0) / total) * 100;

  const axis = el("div", "axis");
  axis.append(el("div", "muted", "span"));
  const ticks = el("div", "ticks");
  const step = niceStep(total);
  const digits = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  for (let t = 0; t <= total + 1e-9; t += step) {
    const tick = el("span", "tick", t >= 1000 && step >= 100 ? (t / 1000).toFixed(step >= 1000 ? 0 : 1) + " s" : t.toFixed(digits) + " ms");
    tick.style.left = Math.min((t / total) * 100, 97) + "%";
    ticks.append(tick);
  }
  axis.append(ticks);
  wf.append(axis);

  const eventsBySpan = new Map();
  const rootId = trace.spans.length > 0 ? trace.spans[0].id : null;
  const known = new Set(trace.spans.map((s) => s.id));
  for (const e of trace.events) {
    const key = e.spanId !== null && known.has(e.spanId) ? e.spanId : rootId;
    if (!eventsBySpan.has(key)) eventsBySpan.set(key, []);
    eventsBySpan.get(key).push(e);
  }

  for (const span of trace.spans) {
    const row = el("div", "span-row");
    row.dataset.spanId = span.id;
    row.dataset.depth = String(span.depth);
    row.dataset.status = span.status;
    row.tabIndex = 0;
    const label = el("div", "span-label");
    label.style.paddingLeft = (4 + span.depth * 14) + "px";
    label.append(el("span", "span-name", span.name));
    const sub = subject(span);
    if (sub) label.append(el("span", "detail-name", sub));
    label.title = span.name + (sub ? " " + sub : "");
    const lane = el("div", "lane");
    const end = span.endMs === null ? trace.readAtMs : span.endMs;
    const left = pct(span.startMs);
    const right = pct(end);
    const bar = el("div", "bar " + span.status);
    bar.style.left = left + "%";
    bar.style.width = Math.max(right - left, 0) + "%";
    lane.append(bar);
    const parts = [span.status === "open" ? "open" : ms(span.durationMs)];
    if (span.totalUsage.totalTokens > 0) parts.push(tokens(span.totalUsage.totalTokens) + " tok");
    if (span.totalUsage.costUsd > 0) parts.push(cost(span.totalUsage.costUsd));
    if (span.status === "error") parts.push("error");
    // The label goes after the bar, else before it, else (a bar across the lane) inside it.
    const text = el("span", "bar-label", parts.join(" · "));
    if (right <= 70) text.style.left = "calc(" + right + "% + 4px)";
    else if (left >= 30) text.style.right = "calc(" + (100 - left) + "% + 4px)";
    else { text.classList.add("inside"); text.style.left = "calc(" + left + "% + 4px)"; }
    lane.append(text);
    for (const e of eventsBySpan.get(span.id) || []) {
      const marker = el("div", "marker");
      marker.style.left = pct(e.timestampMs) + "%";
      marker.title = e.name;
      marker.dataset.event = e.name;
      lane.append(marker);
    }
    row.append(label, lane);
    row.addEventListener("click", () => showSpan(span.id));
    row.addEventListener("keydown", (ev) => { if (ev.key === "Enter") showSpan(span.id); });
    wf.append(row);
  }
  if (selectedSpan !== null && known.has(selectedSpan)) showSpan(selectedSpan);
  else { selectedSpan = null; const d = $("detail"); d.className = "muted"; d.textContent = "Click a span to see its attributes and events."; }
}

function pairs(list) {
  const dl = el("dl");
  for (const [k, v] of list) dl.append(el("dt", "", k), el("dd", "", v));
  return dl;
}

function usageText(u) {
  let text = tokens(u.promptTokens) + " in + " + tokens(u.completionTokens) + " out = " + tokens(u.totalTokens) + " tokens, " + cost(u.costUsd);
  if (u.cachedInputTokens > 0) text += ", " + tokens(u.cachedInputTokens) + " cached";
  if (u.reasoningTokens > 0) text += ", " + tokens(u.reasoningTokens) + " reasoning";
  return text;
}

function showSpan(id) {
  const span = current.spans.find((s) => s.id === id);
  if (!span) return;
  selectedSpan = id;
  for (const row of document.querySelectorAll(".span-row")) row.classList.toggle("selected", row.dataset.spanId === id);
  const d = $("detail");
  d.className = "";
  d.textContent = "";
  d.append(el("h3", "", span.name));
  d.append(pairs([
    ["status", span.status],
    ["duration", ms(span.durationMs)],
    ["starts at", "+" + ms(span.startMs - current.startMs)],
    ["kind", span.kind],
    ["span id", span.id],
    ["parent", span.parentId === null ? "(none)" : span.parentId],
    ["request", span.requestId],
    ["own usage", usageText(span.usage)],
    ["with children", usageText(span.totalUsage)],
  ]));
  if (span.error !== null) d.append(el("pre", "error-text", span.error));
  d.append(el("h3", "", "Attributes"));
  const keys = Object.keys(span.attributes);
  if (keys.length === 0) d.append(el("div", "muted", "none"));
  else d.append(pairs(keys.map((k) => [k, String(span.attributes[k])])));
  d.append(el("h3", "", "Events"));
  const rootId = current.spans[0].id;
  const known = new Set(current.spans.map((s) => s.id));
  const events = current.events.filter((e) => e.spanId === id || (id === rootId && (e.spanId === null || !known.has(e.spanId))));
  if (events.length === 0) d.append(el("div", "muted", "none"));
  const list = el("ol", "events");
  for (const e of events) {
    const li = el("li");
    li.append(el("strong", "", e.name), el("span", "muted", " +" + ms(e.timestampMs - current.startMs)));
    const attrs = Object.keys(e.attributes);
    if (attrs.length > 0) li.append(el("pre", "", attrs.map((k) => k + " = " + String(e.attributes[k])).join("\n")));
    list.append(li);
  }
  if (events.length > 0) d.append(list);
}

async function showTraceFromHash() {
  const m = /^#trace=([0-9a-f]{32})$/.exec(location.hash);
  if (!m) return;
  if (m[1] !== selectedTrace) selectedSpan = null;
  selectedTrace = m[1];
  for (const tr of document.querySelectorAll("#traces tr")) tr.classList.toggle("selected", tr.dataset.traceId === selectedTrace);
  try {
    drawTrace(await api("/api/traces/" + selectedTrace));
  } catch (err) {
    $("trace-title").textContent = String(err.message || err);
    $("waterfall").textContent = "";
  }
}

function refresh() {
  refreshList().catch((err) => { $("stats").textContent = String(err.message || err); });
}

window.addEventListener("hashchange", () => { showTraceFromHash(); });
$("refresh").addEventListener("click", () => { refresh(); showTraceFromHash(); });
setInterval(() => { if ($("auto").checked) refresh(); }, 2000);
refresh();
showTraceFromHash();
`;
