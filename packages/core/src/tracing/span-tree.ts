import type { Span } from "../context/span.js";

function label(span: Span): string {
  const handler = span.attributes["handler"];
  const name =
    typeof handler === "string" && handler !== "" ? `${span.name} ${handler}` : span.name;
  const duration = span.durationMs === null ? "open" : `${span.durationMs.toFixed(2)}ms`;
  const status = span.status === "error" ? ` ✗ ${span.error ?? "error"}` : "";
  return `${name} (${duration})${status}`;
}

/**
 * Renders spans as an indented tree, children under their parents in start order. Spans whose
 * parent is not in the list (e.g. the caller's span from a `traceparent`) are roots.
 *
 * @example
 * console.log(formatSpanTree(ctx.spans));
 * // runtime.invoke my_agent (0.12ms)
 * // └─ delegate calendar_agent (0.05ms)
 */
export function formatSpanTree(spans: readonly Span[]): string {
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map<string | null, Span[]>();
  for (const span of spans) {
    const parent = span.parentId !== null && ids.has(span.parentId) ? span.parentId : null;
    let list = children.get(parent);
    if (list === undefined) children.set(parent, (list = []));
    list.push(span);
  }
  const lines: string[] = [];
  const walk = (parent: string | null, prefix: string): void => {
    const list = children.get(parent) ?? [];
    list.forEach((span, i) => {
      const last = i === list.length - 1;
      const branch = parent === null ? "" : last ? "└─ " : "├─ ";
      lines.push(prefix + branch + label(span));
      walk(span.id, parent === null ? "" : prefix + (last ? "   " : "│  "));
    });
  };
  walk(null, "");
  return lines.join("\n");
}
