// The wire spec, checked three ways: every JSON Schema in spec/ compiles with ajv (draft 2020-12)
// and classifies every conformance case as its file says; the zod schema of @nerva/core agrees with
// ajv on every case; and real objects (contexts, permissions, spans, events, runtime results)
// serialise to JSON that the spec accepts and parse back to the same values, while payloads as
// the published Python implementation writes them (with unknown fields) parse into working objects.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  AgentStatus,
  ErrorCode,
  ExecContext,
  InProcessRuntime,
  NervaError,
  Permissions,
  createAgentInput,
} from "@nerva/core";
import { parseAgentResult } from "@nerva/core/context";
import { eventToWire, tokenUsageFromWire, tokenUsageToWire, wireSchemas } from "@nerva/core/wire";
import { afterAll, describe, expect, it } from "vitest";
import { assertSelfContained, loadZod, renderAll } from "../scripts/generate-spec.mjs";
import {
  SPEC_DIR,
  expectWireValid,
  newAjv,
  readJson,
  schemaOf,
  validator,
  type WireName,
} from "./wire-check.js";

const CASES_DIR = join(SPEC_DIR, "conformance");
const NAMES = Object.keys(wireSchemas).sort() as WireName[];

interface Cases {
  valid: unknown[];
  invalid: { why: string; instance: unknown }[];
}

const jsonFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".json"))
    .map((e) => e.name.slice(0, -".json".length))
    .sort();

const schemaFiles = jsonFiles(SPEC_DIR);
const caseFiles = jsonFiles(CASES_DIR);
const casesOf = (name: string) => readJson(join(CASES_DIR, `${name}.json`)) as Cases;

describe("spec/ covers every wire type", () => {
  it("has one schema file per wire type and no other", () => {
    expect(schemaFiles).toEqual(NAMES);
  });

  it("has one conformance file per wire type and no other", () => {
    expect(caseFiles).toEqual(NAMES);
  });

  it("matches what scripts/generate-spec.mjs renders from the current zod schemas", async () => {
    const z = await loadZod();
    const rendered = renderAll(z, wireSchemas);
    for (const name of NAMES) {
      const onDisk = readFileSync(join(SPEC_DIR, `${name}.json`), "utf8");
      expect(onDisk, `spec/${name}.json is stale: run \`pnpm spec\``).toBe(
        rendered.get(`${name}.json`),
      );
    }
  });

  it("each file is self-contained: no $id below its root, every $ref local and resolving", () => {
    for (const name of NAMES) expect(() => assertSelfContained(schemaOf(name)), name).not.toThrow();
  });

  it("the generator refuses a schema with an embedded $id or a $ref leaving the file", () => {
    const base = { $id: "urn:nerva:spec:Outer", type: "object" };
    expect(() =>
      assertSelfContained({
        ...base,
        properties: { span: { $ref: "#/$defs/Span" } },
        $defs: { Span: { $id: "urn:nerva:spec:Span", type: "object" } },
      }),
    ).toThrow(/#\/\$defs\/Span: has \$id/);
    expect(() =>
      assertSelfContained({ ...base, properties: { span: { $ref: "urn:nerva:spec:Span" } } }),
    ).toThrow(/does not resolve inside the file/);
    expect(() =>
      assertSelfContained({ ...base, properties: { span: { $ref: "#/$defs/Missing" } } }),
    ).toThrow(/#\/\$defs\/Missing/);
    // A property that happens to be called "$id" is data, not an identity.
    expect(() =>
      assertSelfContained({ ...base, properties: { $id: { type: "string" } } }),
    ).not.toThrow();
  });

  it("a type embedded in another file is the same schema as its own file", () => {
    let embedded = 0;
    for (const name of NAMES) {
      for (const [defName, def] of Object.entries(schemaOf(name).$defs ?? {})) {
        if (!NAMES.includes(defName as WireName)) continue;
        const { $schema: _s, $id: _i, $defs: _d, ...own } = schemaOf(defName);
        expect(def, `${name}.$defs.${defName} vs ${defName}.json`).toEqual(own);
        embedded++;
      }
    }
    // ExecContext embeds Permissions, Span, Event and TokenUsage.
    expect(embedded).toBeGreaterThanOrEqual(4);
  });

  it("compiles every schema together in one ajv, which classifies every case as alone", () => {
    const ajv = newAjv();
    for (const name of NAMES) ajv.addSchema(schemaOf(name));
    for (const name of NAMES) {
      const validate = ajv.getSchema(schemaOf(name).$id);
      expect(validate, name).toBeTypeOf("function");
      const { valid, invalid } = casesOf(name);
      for (const instance of valid) {
        expect(validate?.(instance), `${name}: ${JSON.stringify(validate?.errors)}`).toBe(true);
      }
      for (const c of invalid) expect(validate?.(c.instance), `${name}: ${c.why}`).toBe(false);
    }
  });
});

for (const name of NAMES.filter((n) => caseFiles.includes(n) && schemaFiles.includes(n))) {
  describe(`conformance: ${name}`, () => {
    const cases = casesOf(name);
    const zodSchema = wireSchemas[name];

    it("has several valid and several invalid cases, each invalid one saying why", () => {
      expect(cases.valid.length).toBeGreaterThanOrEqual(3);
      expect(cases.invalid.length).toBeGreaterThanOrEqual(3);
      for (const c of cases.invalid) {
        expect(c.why.trim().length).toBeGreaterThan(0);
        expect(Object.keys(c).sort()).toEqual(["instance", "why"]);
      }
    });

    it("compiles on its own with ajv (draft 2020-12, strict)", () => {
      expect(schemaOf(name).$id).toBe(`urn:nerva:spec:${name}`);
      expect(validator(name)).toBeTypeOf("function");
    });

    it.for(cases.valid.map((instance, i) => [i, instance] as const))(
      "accepts valid #%i",
      ([, instance]) => {
        const validate = validator(name);
        expect(validate(instance), JSON.stringify(validate.errors)).toBe(true);
        const parsed = zodSchema.safeParse(instance);
        expect(parsed.success, parsed.error?.message).toBe(true);
      },
    );

    it.for(cases.invalid.map((c) => [c.why, c.instance] as const))(
      "rejects: %s",
      ([, instance]) => {
        expect(validator(name)(instance)).toBe(false);
        expect(zodSchema.safeParse(instance).success).toBe(false);
      },
    );
  });
}

/** A uuid4().hex, as nerva-py generates request and trace ids. */
const PY_REQUEST_ID = "a1b2c3d4e5f6478a9b0c1d2e3f405162";
const PY_TRACE_ID = "3f2b8c1d9e7a4f60b5c4d3e2f1a09b8c";

/**
 * A context exactly as the published Python implementation serialises it (float `time.time()`
 * timestamps, sorted roles, string attributes, no extras), plus unknown fields a newer or other
 * implementation might add. Its deadline is 30 s after `createdSeconds`.
 */
function pythonContext(createdSeconds: number): Record<string, unknown> {
  return {
    request_id: PY_REQUEST_ID,
    trace_id: PY_TRACE_ID,
    user_id: "u-123",
    session_id: "s-456",
    permissions: {
      roles: ["admin", "user"],
      allowed_tools: ["search"],
      allowed_agents: ["helper"],
    },
    memory_scope: "global",
    spans: [],
    events: [
      { timestamp: createdSeconds + 0.0021, name: "test.event", attributes: { detail: "value" } },
    ],
    token_usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cost_usd: 0.001 },
    created_at: createdSeconds,
    timeout_at: createdSeconds + 30,
    cancelled: false,
    metadata: { env: "test" },
    stream: null,
    locale: "de-DE",
    baggage: { "x-team": "payments" },
  };
}

describe("real objects round-trip through the wire format", () => {
  const contexts: ExecContext[] = [];
  const track = (ctx: ExecContext): ExecContext => {
    contexts.push(ctx);
    return ctx;
  };
  afterAll(() => {
    for (const ctx of contexts) ctx.dispose();
  });

  it("toWire({ includeTrace: true }) validates, with spans, events and metadata, and fromWire rebuilds the context", () => {
    const ctx = track(
      ExecContext.create({
        userId: "user_123",
        sessionId: "session_abc",
        permissions: { roles: ["admin"], allowedTools: ["search_flights"], allowedAgents: [] },
        memoryScope: "user",
        timeoutSeconds: 30,
        metadata: { tenant: "acme", plan: "pro" },
      }),
    );
    const span = ctx.startSpan("runtime.invoke my_agent", { handler: "my_agent", attempt: 1 });
    ctx.event("policy.checked", { allowed: true, cost: 0.5 });
    span.end();
    ctx.recordTokens({ promptTokens: 120, completionTokens: 30, costUsd: 0.0004 });

    const wire = ctx.toWire({ includeTrace: true });
    expectWireValid("ExecContext", wire);
    expect(wire.created_at).toBe(ctx.createdAt / 1000);
    expect(wire.timeout_at).toBe(ctx.createdAt / 1000 + 30);
    expect(wire.cancelled).toBe(false);
    expect(wire.metadata).toEqual({ tenant: "acme", plan: "pro" });
    expect(wire.spans).toHaveLength(1);
    expect(wire.spans[0]).toMatchObject({
      span_id: span.id,
      parent_id: null,
      name: "runtime.invoke my_agent",
      attributes: { handler: "my_agent", attempt: "1" },
      status: "ok",
    });
    expect(wire.events).toHaveLength(1);
    expect(wire.events[0]).toMatchObject({
      name: "policy.checked",
      attributes: { allowed: "true", cost: "0.5" },
      trace_id: ctx.traceId,
      request_id: ctx.requestId,
    });
    for (const s of wire.spans) expectWireValid("Span", s);
    for (const e of wire.events) expectWireValid("Event", e);

    const back = track(ExecContext.fromWire(JSON.parse(JSON.stringify(wire))));
    expect(back.requestId).toBe(ctx.requestId);
    expect(back.traceId).toBe(ctx.traceId);
    expect(back.userId).toBe("user_123");
    expect(back.sessionId).toBe("session_abc");
    expect(back.memoryScope).toBe("user");
    expect(back.metadata).toEqual({ tenant: "acme", plan: "pro" });
    expect(back.depth).toBe(0);
    expect(back.createdAt).toBe(ctx.createdAt);
    expect(back.timeoutAt).toBe(ctx.timeoutAt);
    expect(back.isCancelled()).toBe(false);
    expect(back.permissions.toWire()).toEqual(ctx.permissions.toWire());
    expect(back.permissions.canUseTool("search_flights")).toBe(true);
    expect(back.permissions.canUseTool("delete_account")).toBe(false);
    expect(back.permissions.canUseAgent("any_agent")).toBe(false);
    expect(back.permissions.hasRole("admin")).toBe(true);
    expect(back.tokenUsage).toEqual(ctx.tokenUsage);
    // The identity and lifecycle round-trip exactly; the recorded trace is not replayed.
    expect(back.toWire()).toEqual(ctx.toWire());
  });

  it("toWire() without includeTrace sends spans and events as empty arrays", () => {
    const ctx = track(ExecContext.create());
    ctx.startSpan("work").end();
    ctx.event("something.happened");
    const wire = ctx.toWire();
    expectWireValid("ExecContext", wire);
    expect(wire.spans).toEqual([]);
    expect(wire.events).toEqual([]);
    expect(wire.metadata).toEqual({});
    expect(ctx.toWire({ includeTrace: true }).spans).toHaveLength(1);
  });

  it("a child context and a context joining a W3C trace validate and round-trip", () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const root = track(ExecContext.create({ userId: "u1", traceparent, timeoutSeconds: 60 }));
    expect(root.toWire().span_id).toBe("00f067aa0ba902b7");
    expectWireValid("ExecContext", root.toWire());

    const child = track(root.child("calendar_agent", { timeoutSeconds: 5 }));
    child.recordTokens({ promptTokens: 10, completionTokens: 5, costUsd: 0.001 });
    const wire = child.toWire({ includeTrace: true });
    expectWireValid("ExecContext", wire);
    expect(wire).toMatchObject({ depth: 1, agent_name: "calendar_agent", trace_id: root.traceId });

    const back = track(ExecContext.fromWire(JSON.parse(JSON.stringify(wire))));
    expect(back.requestId).toBe(child.requestId);
    expect(back.agentName).toBe("calendar_agent");
    expect(back.depth).toBe(1);
    expect(back.timeoutAt).toBe(child.timeoutAt);
    expect(back.currentSpanId).toBe(child.currentSpanId);
    expect(tokenUsageToWire(back.tokenUsage)).toEqual(wire.token_usage);
    expect(tokenUsageFromWire(wire.token_usage)).toEqual(child.tokenUsage);
    expectWireValid("TokenUsage", wire.token_usage);
  });

  it("a cancelled context crosses the wire cancelled, and a live one live", () => {
    const live = track(ExecContext.create({ timeoutSeconds: 30 }));
    const cancelled = track(ExecContext.create({ timeoutSeconds: 30 }));
    cancelled.cancel("user hung up");

    const liveWire = live.toWire();
    const cancelledWire = cancelled.toWire();
    expectWireValid("ExecContext", cancelledWire);
    expect(liveWire.cancelled).toBe(false);
    expect(cancelledWire.cancelled).toBe(true);

    const liveBack = track(ExecContext.fromWire(JSON.parse(JSON.stringify(liveWire))));
    expect(liveBack.isCancelled()).toBe(false);
    expect(liveBack.signal.aborted).toBe(false);

    const back = track(ExecContext.fromWire(JSON.parse(JSON.stringify(cancelledWire))));
    expect(back.isCancelled()).toBe(true);
    expect(back.signal.aborted).toBe(true);
    expect(back.endReason?.code).toBe(ErrorCode.CANCELLED);
    expect(back.toWire().cancelled).toBe(true);
    // Work started under the received context is cancelled too.
    expect(track(back.child("next_agent")).isCancelled()).toBe(true);
  });

  it("ExecContext.fromWire reads a context as the published Python implementation sends it", () => {
    // time.time(): seconds with a microsecond fraction.
    const created = Math.floor(Date.now() / 1000) + 0.123456;
    const payload = pythonContext(created);
    expect(validator("ExecContext")(payload), JSON.stringify(validator("ExecContext").errors)).toBe(
      true,
    );

    const ctx = track(ExecContext.fromWire(JSON.parse(JSON.stringify(payload))));
    expect(ctx.requestId).toBe(PY_REQUEST_ID);
    expect(ctx.traceId).toBe(PY_TRACE_ID);
    expect(ctx.userId).toBe("u-123");
    expect(ctx.sessionId).toBe("s-456");
    expect(ctx.memoryScope).toBe("global");
    expect(ctx.metadata).toEqual({ env: "test" });
    expect(ctx.permissions.hasRole("admin")).toBe(true);
    expect(ctx.permissions.canUseTool("search")).toBe(true);
    expect(ctx.permissions.canUseTool("shell")).toBe(false);
    expect(ctx.permissions.canUseAgent("helper")).toBe(true);
    expect(ctx.permissions.canUseAgent("other")).toBe(false);
    expect(ctx.tokenUsage).toEqual({
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      costUsd: 0.001,
    });
    // Milliseconds inside TypeScript: the microseconds are rounded away.
    expect(ctx.createdAt).toBe(Math.round(created * 1000));
    expect(ctx.timeoutAt).toBe(Math.round((created + 30) * 1000));
    expect(ctx.remainingMs()).toBeGreaterThan(25_000);
    expect(ctx.isCancelled()).toBe(false);
    // Python sends none of our extras: the defaults of a root context apply.
    expect(ctx.depth).toBe(0);
    expect(ctx.agentName).toBeNull();
    expect(ctx.currentSpanId).toBeNull();

    // What we send back validates and carries no trace of the unknown fields.
    const wire = ctx.toWire();
    expectWireValid("ExecContext", wire);
    for (const unknown of ["stream", "locale", "baggage"]) expect(wire).not.toHaveProperty(unknown);
    expect(wire.created_at).toBeCloseTo(created, 3);
    expect(wire.timeout_at).toBeCloseTo(created + 30, 3);

    // timeout_at is optional in the published spec: absent means no deadline.
    const { timeout_at: _omitted, ...noDeadline } = payload;
    const open = track(ExecContext.fromWire(noDeadline));
    expect(open.timeoutAt).toBeNull();
    expect(open.remainingMs()).toBe(Infinity);

    // Python cancelled the request before sending it.
    const gone = track(ExecContext.fromWire({ ...payload, cancelled: true }));
    expect(gone.isCancelled()).toBe(true);
  });

  it("ExecContext.fromWire refuses what the spec refuses, with INVALID_INPUT naming the field", () => {
    const wire = track(ExecContext.create()).toWire();
    const { spans: _spans, ...withoutSpans } = wire;
    const cases: [unknown, RegExp][] = [
      [{ ...wire, trace_id: "0".repeat(32) }, /context\.trace_id/],
      [{ ...wire, permissions: {} }, /context\.permissions\.roles/],
      // Permissions stays strict: a camelCase allowlist must not be read as "no allowlist".
      [{ ...wire, permissions: { roles: [], allowedTools: [] } }, /context\.permissions/],
      [{ ...wire, created_at: new Date().toISOString() }, /context\.created_at/],
      [{ ...wire, cancelled: "no" }, /context\.cancelled/],
      [{ ...wire, metadata: { retries: 3 } }, /context\.metadata\.retries/],
      [
        { ...wire, token_usage: { ...wire.token_usage, prompt_tokens: 2_147_483_648 } },
        /context\.token_usage\.prompt_tokens/,
      ],
      [withoutSpans, /context\.spans/],
    ];
    for (const [bad, field] of cases) {
      expect(validator("ExecContext")(bad), JSON.stringify(bad)).toBe(false);
      let thrown: unknown;
      try {
        track(ExecContext.fromWire(bad));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(NervaError);
      expect((thrown as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
      expect((thrown as NervaError).message).toMatch(field);
    }
  });

  it("Permissions.fromWire(p.toWire()) keeps roles and allowlists", () => {
    for (const p of [
      Permissions.UNRESTRICTED,
      Permissions.NONE,
      Permissions.create({ roles: ["admin", "billing"], allowedTools: ["search"] }),
      Permissions.create({ allowedAgents: ["flight_agent"] }),
    ]) {
      const wire = p.toWire();
      expectWireValid("Permissions", wire);
      const back = Permissions.fromWire(JSON.parse(JSON.stringify(wire)));
      expect(back.toWire()).toEqual(wire);
      expect(back.roles).toEqual(p.roles);
      expect(back.allowedTools).toEqual(p.allowedTools);
      expect(back.allowedAgents).toEqual(p.allowedAgents);
      for (const probe of ["search", "flight_agent", "other"]) {
        expect(back.canUseTool(probe)).toBe(p.canUseTool(probe));
        expect(back.canUseAgent(probe)).toBe(p.canUseAgent(probe));
      }
    }
  });

  it("spans validate while open and after ending; number and boolean attributes become strings", () => {
    const ctx = track(ExecContext.create());
    const before = Date.now() / 1000;
    const parent = ctx.startSpan("runtime.invoke my_agent", { handler: "my_agent" });
    expectWireValid("Span", parent.toWire());
    expect(parent.toWire()).toMatchObject({ ended_at: null, status: "unset", error: null });

    const inner = track(ctx.fork({ span: parent }));
    const child = inner.startSpan("tools.call", { tool: "search", attempt: 1, cached: false });
    child.setAttribute("latency_ms", 12.5);
    child.end("error", "upstream returned 502");
    parent.end();
    const after = Date.now() / 1000;

    for (const s of [child, parent]) expectWireValid("Span", s.toWire());
    const wire = child.toWire();
    expect(wire).toMatchObject({
      parent_id: parent.id,
      trace_id: ctx.traceId,
      request_id: ctx.requestId,
      status: "error",
      error: "upstream returned 502",
      attributes: { tool: "search", attempt: "1", cached: "false", latency_ms: "12.5" },
    });
    // Unix seconds with a fraction, in order.
    expect(wire.started_at).toBeGreaterThanOrEqual(before - 0.001);
    expect(wire.ended_at).toBeGreaterThanOrEqual(wire.started_at);
    expect(wire.ended_at).toBeLessThanOrEqual(after + 0.001);
    // The TypeScript object keeps the typed values; only the wire form is stringified.
    expect(child.attributes).toEqual({
      tool: "search",
      attempt: 1,
      cached: false,
      latency_ms: 12.5,
    });
    expect(JSON.parse(JSON.stringify(parent))).toEqual(parent.toWire());

    // A reader that knows only the published fields sees a valid span too.
    const { span_id, name, parent_id, started_at, ended_at, attributes } = wire;
    expectWireValid("Span", { span_id, name, parent_id, started_at, ended_at, attributes });
  });

  it("events from ctx.event validate, with attributes as strings", () => {
    const ctx = track(ExecContext.create());
    const span = ctx.startSpan("policy");
    const inner = track(ctx.fork({ span }));
    const event = inner.event("policy.denied", { reason: "budget", limit_usd: 5, hard: true });
    const wire = eventToWire(event);
    expectWireValid("Event", wire);
    expect(wire).toMatchObject({
      name: "policy.denied",
      attributes: { reason: "budget", limit_usd: "5", hard: "true" },
      span_id: span.id,
      trace_id: ctx.traceId,
      request_id: ctx.requestId,
    });
    expect(wire.timestamp).toBeCloseTo(event.timestampMs / 1000, 6);
  });

  it("AgentResults from InProcessRuntime.invoke validate, whatever the outcome", async () => {
    const runtime = new InProcessRuntime({ timeoutSeconds: 5 });
    runtime
      .register("echo", async (input) => `Processed: ${input.message}`)
      .register("asks", async () => ({
        status: AgentStatus.NEEDS_DATA,
        output: "Which date?",
        data: { missing: ["date"], attempt: 1, hints: { strict: true, previous: null } },
      }))
      .register("fails", async () => {
        throw new Error("boom");
      })
      .register("streams", async function* (input) {
        for (const word of input.message.split(" ")) yield `${word} `;
      });
    const ctx = track(ExecContext.create({ userId: "u1" }));
    try {
      const results = [
        await runtime.invoke("echo", { message: "hello" }, ctx),
        await runtime.invoke("asks", { message: "book it" }, ctx),
        await runtime.invoke("fails", { message: "x" }, ctx),
        await runtime.invoke("streams", { message: "one two three" }, ctx),
        await runtime.invoke("missing_agent", { message: "x" }, ctx),
      ];
      expect(results.map((r) => r.status)).toEqual([
        "success",
        "needs_data",
        "error",
        "success",
        "error",
      ]);
      for (const result of results) {
        expectWireValid("AgentResult", result);
        expect(Object.keys(result).sort()).toEqual([
          "data",
          "error",
          "handler",
          "output",
          "status",
        ]);
        expect(parseAgentResult(JSON.parse(JSON.stringify(result)))).toEqual(result);
      }
      expect(results[2]?.error).toContain("boom");
    } finally {
      await runtime.close();
    }
  });

  it("parseAgentResult reads results as other implementations send them, filling defaults", () => {
    // Only status: the published spec makes every other field optional.
    expect(parseAgentResult({ status: "success" }, "remote_agent")).toEqual({
      status: "success",
      output: "",
      data: {},
      error: null,
      handler: "remote_agent",
    });
    // nerva-py's own serialiser drops empty output and data; unknown fields are ignored.
    const fromPython = parseAgentResult(
      {
        status: "error",
        error: "circuit open for handler 'search'",
        handler: "search",
        retry_after: 12,
      },
      "ignored_because_sent",
    );
    expect(fromPython).toEqual({
      status: "error",
      output: "",
      data: {},
      error: "circuit open for handler 'search'",
      handler: "search",
    });
    // Python's data values are strings; ours may be any JSON value, strings stay strings.
    expect(parseAgentResult({ status: "needs_data", data: { missing: "date" } }).data).toEqual({
      missing: "date",
    });
    expect(() => parseAgentResult({ status: "failed" })).toThrow(/result\.status/);
    expect(() => parseAgentResult({ output: "hi" })).toThrow(NervaError);
  });

  it("AgentInputs built with createAgentInput validate, with the defaults filled in", () => {
    const input = createAgentInput({ message: "hello", args: { lang: "en" } });
    expectWireValid("AgentInput", input);
    expect(input).toEqual({ message: "hello", args: { lang: "en" }, tools: [], history: [] });
    expect(wireSchemas.AgentInput.parse({ message: "hello" })).toEqual({
      message: "hello",
      args: {},
      tools: [],
      history: [],
    });
    // AgentInput stays strict: a misspelt field is an error, not silently dropped.
    expect(() => createAgentInput({ message: "x", argz: {} } as never)).toThrow(/argz/);
  });
});
