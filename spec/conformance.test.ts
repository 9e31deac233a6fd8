// The wire spec, checked three ways: every JSON Schema in spec/ compiles with ajv (draft 2020-12)
// and classifies every conformance case as its file says; the zod schema of @nerva/core agrees with
// ajv on every case; and real objects (contexts, permissions, spans, runtime results) serialise to
// JSON that the spec accepts and parse back to the same values.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AgentStatus,
  ExecContext,
  InProcessRuntime,
  Permissions,
  createAgentInput,
  tokenUsageFromWire,
  tokenUsageToWire,
  wireSchemas,
} from "@nerva/core";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, describe, expect, it } from "vitest";
import { loadZod, renderAll } from "../scripts/generate-spec.mjs";

// ajv-formats is CommonJS; depending on the loader its plugin is the default export or under it.
const addFormats = ((addFormatsModule as { default?: unknown }).default ??
  addFormatsModule) as typeof addFormatsModule;

const SPEC_DIR = dirname(fileURLToPath(import.meta.url));
const CASES_DIR = join(SPEC_DIR, "conformance");
const NAMES = Object.keys(wireSchemas).sort() as (keyof typeof wireSchemas)[];

interface Cases {
  valid: unknown[];
  invalid: { why: string; instance: unknown }[];
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, "utf8"));
const jsonFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".json"))
    .map((e) => e.name.slice(0, -".json".length))
    .sort();

/** A strict ajv with formats enforced, as a careful implementation in another language would be. */
function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

const schemaFiles = jsonFiles(SPEC_DIR);
const caseFiles = jsonFiles(CASES_DIR);
const schemaOf = (name: string) => readJson(join(SPEC_DIR, `${name}.json`)) as { $id: string };
const casesOf = (name: string) => readJson(join(CASES_DIR, `${name}.json`)) as Cases;

/** One validator per spec file, each compiled by its own ajv: every file stands alone. */
const validators = new Map<string, ValidateFunction>();
function validator(name: string): ValidateFunction {
  let v = validators.get(name);
  if (v === undefined) {
    v = newAjv().compile(schemaOf(name));
    validators.set(name, v);
  }
  return v;
}

/** Asserts `value` is valid JSON for wire type `name` under both the spec file and zod. */
function expectWireValid(name: keyof typeof wireSchemas, value: unknown): void {
  const json: unknown = JSON.parse(JSON.stringify(value));
  const validate = validator(name);
  expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
  expect(wireSchemas[name].safeParse(json).success).toBe(true);
}

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

  it("compiles every schema together in one ajv (distinct $ids, no dangling $refs)", () => {
    const ajv = newAjv();
    for (const name of NAMES) ajv.addSchema(schemaOf(name));
    for (const name of NAMES) {
      const validate = ajv.getSchema(schemaOf(name).$id);
      expect(validate, name).toBeTypeOf("function");
      expect(validate?.(casesOf(name).valid[0])).toBe(true);
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

describe("real objects round-trip through the wire format", () => {
  const contexts: ExecContext[] = [];
  const track = (ctx: ExecContext): ExecContext => {
    contexts.push(ctx);
    return ctx;
  };
  afterAll(() => {
    for (const ctx of contexts) ctx.dispose();
  });

  it("ExecContext.create(...).toWire() validates and fromWire rebuilds the same context", () => {
    const ctx = track(
      ExecContext.create({
        userId: "user_123",
        sessionId: "session_abc",
        permissions: { roles: ["admin"], allowedTools: ["search_flights"], allowedAgents: [] },
        memoryScope: "user",
        timeoutSeconds: 30,
      }),
    );
    ctx.recordTokens({ promptTokens: 120, completionTokens: 30, costUsd: 0.0004 });
    const wire = ctx.toWire();
    expectWireValid("ExecContext", wire);

    const back = track(ExecContext.fromWire(JSON.parse(JSON.stringify(wire))));
    expect(back.requestId).toBe(ctx.requestId);
    expect(back.traceId).toBe(ctx.traceId);
    expect(back.userId).toBe("user_123");
    expect(back.sessionId).toBe("session_abc");
    expect(back.memoryScope).toBe("user");
    expect(back.depth).toBe(0);
    expect(back.createdAt).toBe(ctx.createdAt);
    expect(back.timeoutAt).toBe(ctx.timeoutAt);
    expect(back.permissions.toWire()).toEqual(ctx.permissions.toWire());
    expect(back.permissions.canUseTool("search_flights")).toBe(true);
    expect(back.permissions.canUseTool("delete_account")).toBe(false);
    expect(back.permissions.canUseAgent("any_agent")).toBe(false);
    expect(back.permissions.hasRole("admin")).toBe(true);
    expect(back.tokenUsage).toEqual(ctx.tokenUsage);
    expect(back.toWire()).toEqual(wire);
  });

  it("a child context and a context joining a W3C trace validate and round-trip", () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const root = track(ExecContext.create({ userId: "u1", traceparent, timeoutSeconds: 60 }));
    expect(root.toWire().span_id).toBe("00f067aa0ba902b7");
    expectWireValid("ExecContext", root.toWire());

    const child = track(root.child("calendar_agent", { timeoutSeconds: 5 }));
    child.recordTokens({ promptTokens: 10, completionTokens: 5, costUsd: 0.001 });
    const wire = child.toWire();
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

  it("ExecContext.fromWire refuses what the spec refuses", () => {
    const wire = track(ExecContext.create()).toWire();
    for (const bad of [
      { ...wire, trace_id: "0".repeat(32) },
      { ...wire, permissions: {} },
      { ...wire, created_at: Date.now() / 1000 },
    ]) {
      expect(validator("ExecContext")(bad)).toBe(false);
      expect(() => ExecContext.fromWire(bad)).toThrow(/context/);
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

  it("spans from ctx.startSpan validate while open, after ending ok and after ending in error", () => {
    const ctx = track(ExecContext.create());
    const parent = ctx.startSpan("runtime.invoke my_agent", { handler: "my_agent" });
    expectWireValid("Span", parent.toWire());
    expect(parent.toWire()).toMatchObject({ end_time: null, duration_ms: null, status: "unset" });

    const inner = track(ctx.fork({ span: parent }));
    const child = inner.startSpan("tools.call", { tool: "search", attempt: 1, cached: false });
    child.end("error", "upstream returned 502");
    parent.end();
    expectWireValid("Span", child.toWire());
    expectWireValid("Span", parent.toWire());
    expect(child.toWire()).toMatchObject({
      parent_id: parent.id,
      trace_id: ctx.traceId,
      status: "error",
      error: "upstream returned 502",
    });
    expect(JSON.parse(JSON.stringify(parent))).toEqual(parent.toWire());
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
        expect(wireSchemas.AgentResult.parse(JSON.parse(JSON.stringify(result)))).toEqual(result);
      }
      expect(results[2]?.error).toContain("boom");
    } finally {
      await runtime.close();
    }
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
  });
});
