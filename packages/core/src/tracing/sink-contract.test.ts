// The trace sink contract (@nerva/core/testing), run against every sink of @nerva/core, a
// combination of them, and a sink written here the way a user would write their own.
import type { Span } from "../context/span.js";
import {
  contractEventOf,
  contractSpanOf,
  describeTraceSinkContract,
  type TraceSinkContractEvent,
  type TraceSinkContractSpan,
} from "../testing/trace-sink-contract.js";
import { JsonLinesTraceSink } from "./json-lines-sink.js";
import type { EventLogLine, SpanLogLine } from "./log-fields.js";
import { MemoryTraceSink } from "./memory-sink.js";
import { combineSinks, type TraceSink } from "./sink.js";
import { TraceStore } from "./trace-store.js";
import { UsageMeter } from "./usage-meter.js";

/** JSON lines back into the contract's form: what a log reader would reconstruct. */
function fromLines(lines: readonly string[]): {
  spans: TraceSinkContractSpan[];
  events: TraceSinkContractEvent[];
} {
  const parsed = lines.map((l) => JSON.parse(l) as SpanLogLine | EventLogLine);
  return {
    spans: parsed
      .filter((l): l is SpanLogLine => l.kind === "span")
      .map((l) => ({
        traceId: l.trace_id,
        spanId: l.span_id,
        parentId: l.parent_id,
        name: l.name,
        status: l.status,
        usage: {
          inputTokens: l.usage?.prompt_tokens ?? 0,
          outputTokens: l.usage?.completion_tokens ?? 0,
          costUsd: l.usage?.cost_usd ?? 0,
        },
      })),
    events: parsed
      .filter((l): l is EventLogLine => l.kind === "event")
      .map((l) => ({ traceId: l.trace_id, spanId: l.span_id, name: l.name })),
  };
}

describeTraceSinkContract(
  "MemoryTraceSink",
  () => {
    const sink = new MemoryTraceSink({ maxSpans: 200, maxEvents: 200 });
    return {
      sink,
      read: () => ({
        spans: sink.spans.map(contractSpanOf),
        events: sink.events.map(contractEventOf),
      }),
    };
  },
  { maxSpans: 200 },
);

describeTraceSinkContract("JsonLinesTraceSink", () => {
  const lines: string[] = [];
  const sink = new JsonLinesTraceSink({ write: (line) => void lines.push(line) });
  return { sink, read: () => fromLines(lines) };
});

describeTraceSinkContract(
  "UsageMeter",
  () => {
    const sink = new UsageMeter({ maxUsers: 5 });
    return { sink, read: () => ({ users: sink.users() }) };
  },
  { maxUsers: 5 },
);

describeTraceSinkContract(
  "combineSinks(MemoryTraceSink, JsonLinesTraceSink, UsageMeter)",
  () => {
    const memory = new MemoryTraceSink({ maxSpans: 300 });
    const lines: string[] = [];
    const meter = new UsageMeter({ maxUsers: 5 });
    const sink = combineSinks(
      memory,
      new JsonLinesTraceSink({ write: (line) => void lines.push(line) }),
      meter,
    );
    return {
      sink,
      read: () => ({
        spans: memory.spans.map(contractSpanOf),
        events: fromLines(lines).events,
        users: meter.users(),
      }),
    };
  },
  { maxSpans: 300, maxUsers: 5 },
);

/**
 * A user's own sink, as DESIGN §4 asks ("swappable in name only"): plain objects per trace, its
 * own bound, no base class, only the one required method plus shutdown.
 */
interface Kept {
  id: string;
  parent: string | null;
  name: string;
  status: Span["status"];
}
class RecentTraces implements TraceSink {
  readonly traces = new Map<string, Kept[]>();
  #open = true;
  constructor(readonly maxTraces: number) {}

  onSpanEnd(span: Span): void {
    if (!this.#open) return;
    let spans = this.traces.get(span.traceId);
    if (spans === undefined) {
      if (this.traces.size >= this.maxTraces) this.traces.delete(this.traces.keys().next().value!);
      this.traces.set(span.traceId, (spans = []));
    }
    spans.push({ id: span.id, parent: span.parentId, name: span.name, status: span.status });
  }

  async shutdown(): Promise<void> {
    this.#open = false;
  }
}

describeTraceSinkContract(
  "TraceStore (the viewer's)",
  () => {
    const store = new TraceStore({ maxTraces: 5 });
    return {
      sink: store,
      read: () => ({
        spans: store.traces({ limit: 5 }).flatMap((t) =>
          (store.trace(t.traceId)?.spans ?? [])
            .filter((s) => s.status !== "open")
            .map((s) => ({
              traceId: t.traceId,
              spanId: s.id,
              parentId: s.parentId,
              name: s.name,
              status: s.status as "ok" | "error", // open spans are filtered out above
              usage: {
                inputTokens: s.usage.promptTokens,
                outputTokens: s.usage.completionTokens,
                costUsd: s.usage.costUsd,
              },
            })),
        ),
        events: store.traces({ limit: 5 }).flatMap((t) =>
          (store.trace(t.traceId)?.events ?? []).map((e) => ({
            traceId: t.traceId,
            spanId: e.spanId,
            name: e.name,
          })),
        ),
      }),
    };
  },
  { maxTraces: 5 },
);

describeTraceSinkContract(
  "a user's own sink",
  () => {
    const sink = new RecentTraces(5);
    return {
      sink,
      read: () => ({
        spans: [...sink.traces].flatMap(([traceId, spans]) =>
          spans.map((s) => ({
            traceId,
            spanId: s.id,
            parentId: s.parent,
            name: s.name,
            status: s.status,
          })),
        ),
      }),
    };
  },
  { maxTraces: 5 },
);
