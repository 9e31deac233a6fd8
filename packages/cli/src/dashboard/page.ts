// The runs dashboard: one self-contained page (inline CSS and script, no CDN, no build step).
// Text from runs is always set with textContent, never as HTML (see page-script.ts).
import { DASHBOARD_SCRIPT } from "./page-script.js";

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
  main { display: grid; grid-template-columns: 420px minmax(0, 1fr); gap: 16px; padding: 16px; }
  main > section { min-width: 0; overflow-wrap: anywhere; }
  section { background: #fff; border-radius: 6px; padding: 12px; box-shadow: 0 1px 2px #0002; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eee; font-size: 13px; }
  tr[data-id] { cursor: pointer; }
  tr.selected { background: #e8f0ff; }
  .badge { border-radius: 9px; padding: 1px 8px; font-size: 12px; color: #fff; background: #777; }
  .s-succeeded { background: #2e8540; } .s-paused { background: #c77700; } .s-running, .s-pending { background: #2862c9; }
  .s-failed, .s-timed_out { background: #c0392b; } .s-cancelled { background: #555; }
  svg text { font-size: 12px; } svg .node rect { fill: #fff; stroke: #99a; stroke-width: 1.5; }
  svg .node.visited rect { fill: #dff0e3; stroke: #2e8540; }
  svg .node.current rect { fill: #ffe9c2; stroke: #c77700; stroke-width: 3; }
  svg .edge { fill: none; stroke: #99a; stroke-width: 1.2; marker-end: url(#arrow); }
  svg .edge.conditional { stroke-dasharray: 4 3; }
  #graph { max-width: 100%; }
  #state { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 320px; overflow-y: auto; }
  #events li { overflow-wrap: anywhere; }
  #workers { margin: 0; padding: 6px 16px; background: #fff3cd; border-bottom: 1px solid #f0c36d; }
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
<p id="workers" hidden>This dashboard does not execute runs: runs triggered or answered here wait for a worker of the app (<code>nerva dashboard --workers</code> runs them in the dashboard's process).</p>
<main>
  <section>
    <h2>Runs</h2>
    <table><thead><tr><th>entry point</th><th>status</th><th>id</th></tr></thead><tbody id="runs"></tbody></table>
    <p id="empty" class="muted">Loading runs…</p>
  </section>
  <section>
    <h2>Run <span id="exec-id" class="muted">(select one)</span> <span id="status"></span></h2>
    <div id="times" class="muted" hidden>created <time id="created"></time> · updated <time id="updated"></time></div>
    <svg id="graph" width="100%" height="220"></svg>
    <form id="answer-form" hidden>
      <label for="answer" id="prompt"></label><br>
      <input id="answer" size="40" list="answer-values"> <button id="answer-button" type="submit">Answer</button>
      <datalist id="answer-values"></datalist>
      <div id="allowed" class="muted"></div>
      <div id="answer-error" class="muted"></div>
    </form>
    <h2>Events</h2>
    <ol id="events"></ol>
    <h2>State</h2>
    <pre id="state" class="muted"></pre>
  </section>
</main>
<script>
${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
