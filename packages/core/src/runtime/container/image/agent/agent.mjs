#!/usr/bin/env node
// The Nerva container agent: runs JavaScript handler modules inside a container and speaks the
// framed worker protocol (docs/protocol.md) on stdin/stdout. It has no dependencies, so it can be
// copied into any image that has `node`:
//
//   COPY agent.mjs /nerva/agent.mjs
//   CMD ["node", "/nerva/agent.mjs", "/app/handler.mjs"]
//
// A handler module exports a function (default export, or `handler`):
//   export default async function (input, ctx, runtime) { return `Processed: ${input.message}`; }
// It may return a string or a partial AgentResult ({ status, output, data, error }), or be an
// async generator whose string chunks are streamed. `ctx` carries the request identity,
// permissions, deadline, an abort `signal`, `recordTokens()`, `stream.push()`, spans
// (`startSpan()`, `span(name, fn)`: each is sent to the host as a `span` frame when it ends, and
// joins the caller's trace under the invocation's span) and events (`event(name, attributes)`:
// sent as an `event` frame, recorded by the host on the current span); `runtime.delegate(handler, input)` asks
// the host to run another agent.
//
// stdout carries frames only: console.* and process.stdout writes of handlers go to stderr.
// The agent exits when stdin ends (the host has gone) or on a `shutdown` frame.
import { randomBytes } from "node:crypto";
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";

const PROTOCOL_VERSION = 1;
/** Spans sent per invocation (the host keeps no more); the rest are counted in the result. */
const MAX_SPANS = 1000;
/** Events sent per invocation (the host keeps no more); the rest are counted in the result. */
const MAX_EVENTS = 1000;
const ZERO_SPAN_ID = "0000000000000000";
const MAX_FRAME_BYTES = 64 * 1024 * 1024;
const STATUSES = new Set([
  "success",
  "error",
  "timeout",
  "wrong_handler",
  "needs_data",
  "needs_credentials",
]);

const writeFrameLine = process.stdout.write.bind(process.stdout);
// Anything a handler prints must not corrupt a frame: route it to stderr (the host drains it).
process.stdout.write = process.stderr.write.bind(process.stderr);

function send(frame) {
  writeFrameLine(JSON.stringify(frame) + "\n");
}

const defaultModule = process.argv[2] ?? process.env.NERVA_MODULE ?? null;
const modules = new Map();
/** id → { controller, calls: Map<call_id, resolve>, nextCall } */
const running = new Map();
let shuttingDown = false;

function messageOf(err) {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === "string" ? err : `non-error value thrown: ${String(err)}`;
}

async function loadHandler(path, name) {
  if (typeof path !== "string" || !isAbsolute(path)) {
    throw new Error(
      `No handler module for "${name}": start the agent with the module path (node agent.mjs /app/handler.mjs) or send "module" with the invoke.`,
    );
  }
  let loaded = modules.get(path);
  if (loaded === undefined) {
    loaded = import(pathToFileURL(path).href);
    modules.set(path, loaded);
    loaded.catch(() => modules.delete(path));
  }
  const mod = await loaded;
  const fn = typeof mod.default === "function" ? mod.default : mod.handler;
  if (typeof fn !== "function") {
    throw new Error(
      `Module ${path} exports no handler: use "export default async function (input, ctx, runtime) { ... }" or "export async function handler(input, ctx, runtime) { ... }".`,
    );
  }
  return fn;
}

function permissionsOf(wire) {
  const tools = wire.allowed_tools === null ? null : new Set(wire.allowed_tools);
  const agents = wire.allowed_agents === null ? null : new Set(wire.allowed_agents);
  return Object.freeze({
    roles: wire.roles,
    allowedTools: wire.allowed_tools,
    allowedAgents: wire.allowed_agents,
    canUseTool: (n) => tools === null || tools.has(n),
    canUseAgent: (n) => agents === null || agents.has(n),
    hasRole: (r) => wire.roles.includes(r),
  });
}

const nowMs = () => performance.timeOrigin + performance.now();

function newSpanId() {
  let id = ZERO_SPAN_ID;
  while (id === ZERO_SPAN_ID) id = randomBytes(8).toString("hex");
  return id;
}

/** JSON cannot carry NaN or ±Infinity, and span attributes are flat: anything else is text. */
function attributeValue(value) {
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  return String(value);
}

/** A span of invocation `frame.id`, nested under `parentId`; sent as a `span` frame by end(). */
function makeSpan(frame, state, name, attributes, kind, parentId) {
  const attrs = {};
  for (const [k, v] of Object.entries(attributes ?? {})) attrs[k] = attributeValue(v);
  let ended = false;
  const span = {
    id: newSpanId(),
    parentId,
    name: String(name),
    kind: kind ?? "internal",
    startMs: nowMs(),
    /** Own usage, recorded while the span is current. */
    usage: null,
    get ended() {
      return ended;
    },
    setAttribute(key, value) {
      if (!ended) attrs[key] = attributeValue(value);
      return span;
    },
    end(status = "ok", error) {
      if (ended) return;
      ended = true;
      // A span that ends after the result has no invocation to join.
      if (running.get(frame.id) !== state) return;
      if (state.spansSent >= MAX_SPANS) {
        state.spansDropped++;
        return;
      }
      state.spansSent++;
      const endMs = nowMs();
      send({
        type: "span",
        id: frame.id,
        span: {
          span_id: span.id,
          parent_id: parentId,
          name: span.name,
          kind: span.kind,
          started_at: span.startMs / 1000,
          ended_at: endMs / 1000,
          status: status === "error" ? "error" : "ok",
          error: error === undefined || error === null ? null : String(error),
          attributes: attrs,
          ...(span.usage === null ? {} : { usage: span.usage }),
        },
      });
    },
  };
  return span;
}

/** The handler's context; `current` is the span new spans nest under (null: the invocation's). */
function makeContext(frame, state, current = null) {
  const w = frame.context;
  // Unix seconds on the wire (ExecContext wire form), epoch milliseconds here.
  const timeoutAt = w.timeout_at == null ? null : w.timeout_at * 1000;
  const send_ = (f) => {
    if (running.get(frame.id) === state) send({ ...f, id: frame.id });
  };
  const parentId = current === null ? (w.span_id ?? null) : current.id;
  const startSpan = (name, attributes, options) =>
    makeSpan(frame, state, name, attributes, options?.kind, parentId);
  const ctx = Object.freeze({
    requestId: w.request_id,
    traceId: w.trace_id,
    userId: w.user_id,
    sessionId: w.session_id,
    agentName: w.agent_name,
    depth: w.depth,
    memoryScope: w.memory_scope,
    permissions: permissionsOf(w.permissions),
    createdAt: w.created_at * 1000,
    timeoutAt,
    signal: state.controller.signal,
    isCancelled: () => state.controller.signal.aborted,
    isTimedOut: () => timeoutAt !== null && Date.now() >= timeoutAt,
    remainingMs: () => (timeoutAt === null ? Infinity : Math.max(0, timeoutAt - Date.now())),
    stream: frame.stream ? { push: (text) => send_({ type: "chunk", text: String(text) }) } : null,
    get endReason() {
      return state.controller.signal.aborted ? state.controller.signal.reason : null;
    },
    throwIfEnded() {
      if (state.controller.signal.aborted) throw state.controller.signal.reason;
    },
    /** The id new spans nest under: the current span's, or the invocation's. */
    currentSpanId: parentId,
    /** Sends an `event` frame: the host records it on this context's current span. */
    event(name, attributes) {
      if (running.get(frame.id) !== state) return;
      if (state.eventsSent >= MAX_EVENTS) {
        state.eventsDropped++;
        return;
      }
      state.eventsSent++;
      const attrs = {};
      for (const [k, v] of Object.entries(attributes ?? {})) attrs[k] = attributeValue(v);
      send({
        type: "event",
        id: frame.id,
        event: { name: String(name), at: nowMs() / 1000, span_id: parentId, attributes: attrs },
      });
    },
    startSpan,
    async span(name, fn, attributes) {
      const span = startSpan(name, attributes);
      try {
        const value = await fn(makeContext(frame, state, span), span);
        span.end("ok");
        return value;
      } catch (err) {
        span.end("error", messageOf(err));
        throw err;
      }
    },
    recordTokens(delta = {}) {
      const p = delta.promptTokens ?? 0;
      const c = delta.completionTokens ?? 0;
      const usage = {
        prompt_tokens: p,
        completion_tokens: c,
        total_tokens: delta.totalTokens ?? p + c,
        cost_usd: delta.costUsd ?? 0,
        cached_input_tokens: delta.cachedInputTokens ?? 0,
        reasoning_tokens: delta.reasoningTokens ?? 0,
      };
      // Sent at once (the host charges it, even if the handler is killed later); the current
      // span's own usage only says where it was spent.
      send_({ type: "usage", ...usage });
      if (current !== null && !current.ended) {
        const own = current.usage;
        if (own === null) current.usage = usage;
        else for (const key of Object.keys(usage)) own[key] += usage[key];
      }
    },
    toWire: () => w,
  });
  return ctx;
}

function makeRuntime(frame, state) {
  return Object.freeze({
    delegate(handler, input) {
      const callId = String(++state.nextCall);
      return new Promise((resolve) => {
        state.calls.set(callId, resolve);
        send({
          type: "delegate",
          id: frame.id,
          call_id: callId,
          handler,
          input: typeof input === "string" ? { message: input } : input,
        });
      });
    },
  });
}

// The host refuses a frame nested deeper than 65 levels: one for the frame, one for the result,
// 63 for its data. Checked here without recursion, so the handler gets a clear error instead.
const MAX_DATA_DEPTH = 63;
const MAX_DATA_VALUES = 1_000_000;

function dataViolation(data) {
  if (typeof data !== "object" || data === null) return null;
  const stack = [[data, 1]];
  let values = 1;
  while (stack.length > 0) {
    const [value, depth] = stack.pop();
    if (depth > MAX_DATA_DEPTH) return `nested deeper than ${MAX_DATA_DEPTH} levels`;
    const items = Array.isArray(value) ? value : Object.values(value);
    values += items.length;
    if (values > MAX_DATA_VALUES) return `more than ${MAX_DATA_VALUES} values`;
    for (const item of items) {
      if (typeof item === "object" && item !== null) stack.push([item, depth + 1]);
    }
  }
  return null;
}

function normalise(value) {
  if (typeof value === "string") return { status: "success", output: value };
  if (value === undefined || value === null) return { status: "success", output: "" };
  if (typeof value === "object" && !Array.isArray(value)) {
    const result = {};
    if (value.status !== undefined) {
      if (!STATUSES.has(value.status))
        return {
          status: "error",
          error: `Handler returned an unknown status "${String(value.status)}".`,
        };
      result.status = value.status;
    }
    if (value.output !== undefined) result.output = String(value.output);
    if (value.data !== undefined) {
      const violation = dataViolation(value.data);
      if (violation !== null) {
        return {
          status: "error",
          error: `Handler returned an invalid result (result.data: ${violation}); return flatter data.`,
        };
      }
      result.data = value.data;
    }
    if (value.error !== undefined) result.error = value.error === null ? null : String(value.error);
    return result;
  }
  return {
    status: "error",
    error: `Handler returned a ${typeof value}; return a string or a partial AgentResult, or yield strings.`,
  };
}

async function invoke(frame) {
  const state = {
    controller: new AbortController(),
    calls: new Map(),
    nextCall: 0,
    spansSent: 0,
    spansDropped: 0,
    eventsSent: 0,
    eventsDropped: 0,
  };
  running.set(frame.id, state);
  let result;
  try {
    const fn = await loadHandler(frame.module ?? defaultModule, frame.handler);
    const ctx = makeContext(frame, state);
    const returned = fn(frame.input, ctx, makeRuntime(frame, state));
    if (
      returned !== null &&
      typeof returned === "object" &&
      typeof returned[Symbol.asyncIterator] === "function"
    ) {
      let output = "";
      const iterator = returned[Symbol.asyncIterator]();
      for (;;) {
        const step = await iterator.next();
        if (step.done) {
          const tail = step.value === undefined ? {} : normalise(step.value);
          result = { ...tail, output: output + (tail.output ?? "") };
          break;
        }
        if (typeof step.value !== "string") {
          await iterator.return?.();
          result = {
            status: "error",
            error: `Streaming handler yielded a ${typeof step.value}; yield strings.`,
          };
          break;
        }
        output += step.value;
        ctx.stream?.push(step.value);
      }
    } else {
      result = normalise(await returned);
    }
  } catch (err) {
    result = { status: "error", error: messageOf(err) };
  }
  if (running.get(frame.id) === state) {
    running.delete(frame.id);
    const dropped = {
      ...(state.spansDropped === 0 ? {} : { spans_dropped: state.spansDropped }),
      ...(state.eventsDropped === 0 ? {} : { events_dropped: state.eventsDropped }),
    };
    try {
      send({ type: "result", id: frame.id, result, ...dropped });
    } catch (err) {
      // Not serialisable (a BigInt, say): the host still gets a result, never silence.
      send({
        type: "result",
        id: frame.id,
        result: {
          status: "error",
          error: `Handler returned a result that cannot be sent: ${messageOf(err)}`,
        },
        ...dropped,
      });
    }
  }
  if (shuttingDown && running.size === 0) process.exit(0);
}

function onFrame(frame) {
  switch (frame?.type) {
    case "invoke":
      if (typeof frame.id !== "string" || running.has(frame.id)) {
        send({
          type: "error",
          message: `invoke frame with a missing or duplicate id (${String(frame.id)}).`,
        });
        return;
      }
      frame.input = { args: {}, tools: [], history: [], ...frame.input };
      void invoke(frame);
      return;
    case "cancel": {
      const state = running.get(frame.id);
      if (state !== undefined) state.controller.abort(new Error(frame.reason ?? "cancelled"));
      return;
    }
    case "delegate_result": {
      const state = running.get(frame.id);
      // The invocation already sent its result: this answer crossed it on the wire.
      if (state === undefined) return;
      const resolve = state.calls.get(frame.call_id);
      if (resolve === undefined) {
        send({
          type: "error",
          message: `delegate_result for unknown call ${String(frame.id)}/${String(frame.call_id)}.`,
        });
        return;
      }
      state.calls.delete(frame.call_id);
      resolve(frame.result);
      return;
    }
    case "shutdown":
      shuttingDown = true;
      if (running.size === 0) process.exit(0);
      return;
    default:
      send({ type: "error", message: `Unknown frame type "${String(frame?.type)}".` });
  }
}

let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  let buf = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
  let nl;
  while ((nl = buf.indexOf(10)) !== -1) {
    const line = buf.subarray(0, nl).toString("utf8").trim();
    buf = buf.subarray(nl + 1);
    if (line.length === 0) continue;
    let frame;
    try {
      frame = JSON.parse(line);
    } catch (err) {
      send({ type: "error", message: `Malformed frame (not JSON: ${messageOf(err)}).` });
      continue;
    }
    onFrame(frame);
  }
  if (buf.length > MAX_FRAME_BYTES) {
    send({ type: "error", message: `Frame larger than ${MAX_FRAME_BYTES} bytes; dropped.` });
    buf = Buffer.alloc(0);
  }
  pending = Buffer.from(buf);
});
// The host closed our stdin: it is gone (or done with us). Nothing can be answered any more.
process.stdin.on("end", () => process.exit(0));

send({
  type: "ready",
  protocol: PROTOCOL_VERSION,
  pid: process.pid,
  runtime: `node ${process.version} (nerva container agent)`,
});
