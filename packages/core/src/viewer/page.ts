// The trace viewer's page: one self-contained document (inline CSS and script, no CDN, no build
// step). Values from traces are only ever set as text by the script (page-script.ts), never as HTML.
import { PAGE_SCRIPT } from "./page-script.js";

const STYLE = `
  :root { font: 13px/1.4 system-ui, sans-serif; color: #1d2330; background: #f4f5f7;
    --ok: #3b7ddd; --error: #d93025; --open: #9aa0a6; --event: #f29900; }
  body { margin: 0; }
  header { background: #1d2330; color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 16px; margin: 0; }
  header .stats { color: #c5cad3; }
  header label { margin-left: auto; }
  button { font: inherit; }
  main { padding: 12px 16px; display: grid; gap: 12px; grid-template-columns: minmax(0, 1fr) 380px; }
  section { background: #fff; border-radius: 6px; padding: 10px 12px; box-shadow: 0 1px 2px #0002; min-width: 0; }
  #waterfall-section { grid-column: 1 / 3; }
  h2 { font-size: 14px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eee; white-space: nowrap; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.root { max-width: 260px; overflow: hidden; text-overflow: ellipsis; }
  td.user { max-width: 160px; overflow: hidden; text-overflow: ellipsis; }
  .scroll { max-height: 260px; overflow: auto; }
  #traces tr { cursor: pointer; }
  #traces tr:hover { background: #f0f4fb; }
  #traces tr.selected { background: #e3ecfb; }
  .badge { border-radius: 9px; padding: 0 7px; font-size: 12px; color: #fff; background: var(--ok); }
  .badge.error { background: var(--error); } .badge.open { background: var(--open); }
  .muted { color: #6b7280; }
  .anon { font-style: italic; color: #6b7280; }
  .wf { display: grid; grid-template-columns: minmax(0, 1fr) 340px; gap: 12px; }
  .axis, .span-row { display: grid; grid-template-columns: 300px minmax(0, 1fr); align-items: center; }
  .axis { height: 20px; border-bottom: 1px solid #ddd; color: #6b7280; font-size: 11px; }
  .ticks { position: relative; height: 100%; }
  .tick { position: absolute; top: 3px; transform: translateX(-50%); }
  .span-row { height: 24px; cursor: pointer; border-bottom: 1px solid #f2f2f2; }
  .span-row:hover { background: #f6f8fb; }
  .span-row.selected { background: #e3ecfb; }
  .span-label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .span-label .detail-name { color: #6b7280; margin-left: 4px; }
  .lane { position: relative; height: 100%; }
  .bar { position: absolute; top: 5px; height: 14px; min-width: 2px; border-radius: 2px; background: var(--ok); }
  .bar.error { background: var(--error); }
  .bar.open { background: repeating-linear-gradient(45deg, var(--open), var(--open) 4px, #c6cacf 4px, #c6cacf 8px); }
  .bar-label { position: absolute; top: 4px; font-size: 11px; white-space: nowrap; color: #374151; }
  .bar-label.inside { color: #fff; }
  .marker { position: absolute; top: 7px; width: 9px; height: 9px; margin-left: -4px; background: var(--event);
    transform: rotate(45deg); border: 1px solid #fff; }
  .legend { display: flex; gap: 12px; font-size: 12px; color: #374151; margin-bottom: 6px; }
  .legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; vertical-align: -1px; }
  .legend i.ok { background: var(--ok); } .legend i.error { background: var(--error); }
  .legend i.open { background: var(--open); } .legend i.event { background: var(--event); width: 9px; height: 9px; transform: rotate(45deg); }
  #detail dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 10px; margin: 0 0 8px; }
  #detail dt { color: #6b7280; } #detail dd { margin: 0; overflow-wrap: anywhere; }
  #detail h3 { font-size: 13px; margin: 10px 0 4px; }
  #detail pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font: 12px ui-monospace, monospace; }
  #detail .error-text { color: var(--error); }
`;

const BODY = `
<header>
  <h1>Nerva traces</h1>
  <span class="stats" id="stats"></span>
  <label><input type="checkbox" id="auto" checked> auto-refresh</label>
  <button id="refresh" type="button">Refresh</button>
</header>
<main>
  <section>
    <h2>Recent traces</h2>
    <div class="scroll">
      <table>
        <thead><tr><th>time</th><th>root</th><th class="num">duration</th><th>status</th><th class="num">tokens</th><th class="num">cost</th><th>user</th></tr></thead>
        <tbody id="traces"></tbody>
      </table>
    </div>
    <p id="no-traces" class="muted" hidden>No traces yet: send a request to the app.</p>
  </section>
  <section>
    <h2>Usage by user</h2>
    <div class="scroll">
      <table>
        <thead><tr><th>user</th><th class="num">requests</th><th class="num">input</th><th class="num">output</th><th class="num">cost</th></tr></thead>
        <tbody id="users"></tbody>
      </table>
    </div>
    <p id="no-meter" class="muted" hidden>No usage meter: pass a UsageMeter as createTraceViewer's meter.</p>
  </section>
  <section id="waterfall-section">
    <h2>Trace <span id="trace-title" class="muted">(select one)</span></h2>
    <div class="legend">
      <span><i class="ok"></i>ok</span><span><i class="error"></i>error</span>
      <span><i class="open"></i>open</span><span><i class="event"></i>event (a marker on its span)</span>
    </div>
    <div class="wf">
      <div id="waterfall"></div>
      <div id="detail" class="muted">Click a span to see its attributes and events.</div>
    </div>
  </section>
</main>`;

/**
 * The page for a viewer under `base`, whose inline style and script carry `nonce` (the response's
 * Content-Security-Policy allows only those). `base` is a validated path (letters, digits, `/._~-`).
 */
export function renderPage(base: string, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Nerva traces</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>${BODY}
<script nonce="${nonce}">
"use strict";
const BASE = ${JSON.stringify(base)};
${PAGE_SCRIPT}
</script>
</body>
</html>
`;
}
