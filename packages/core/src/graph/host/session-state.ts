import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { checkUntrustedJson } from "../../internal/json-limits.js";
import type { RunQueue } from "../../runs/run-queue.js";

const usage = z
  .object({
    prompt_tokens: z.number().int().nonnegative(),
    completion_tokens: z.number().int().nonnegative(),
    total_tokens: z.number().int().nonnegative(),
    cost_usd: z.number().nonnegative(),
  })
  .strict();

/** The signed fields of a sessionState. */
export const SessionPayloadSchema = z
  .object({
    v: z.literal(1),
    graph: z.string().min(1).max(128),
    runId: z.string().min(1).max(200),
    entryPoint: z.string().min(1).max(64),
    /** The node the run paused at. */
    node: z.string().min(1).max(64),
    state: z.record(z.string(), z.unknown()),
    visits: z.record(z.string(), z.number().int().nonnegative()),
    path: z.array(z.string().max(200)).max(1_000_000),
    steps: z.number().int().nonnegative(),
    usage,
    /** Epoch ms. */
    issuedAt: z.number().int().nonnegative(),
  })
  .strict();
export type SessionPayload = z.output<typeof SessionPayloadSchema>;

/**
 * A paused run in portable form (JSON): state, paused node, visit counts, path, signed
 * with HMAC-SHA256. Resume it with `triggerAndWait(entryPoint, input, ctx, { sessionState })` on
 * any process or machine that has the same key.
 *
 * @example
 * const paused = await runtime.triggerAndWait("default", { orderId: "42" }, ctx);
 * const done = await runtime.triggerAndWait("default", { decision: "approved" }, ctx, { sessionState: paused.sessionState! });
 */
export type SessionState = SessionPayload & { readonly sig: string };

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function mac(key: Buffer, payload: SessionPayload): string {
  return createHmac("sha256", key).update(canonical(payload)).digest("base64url");
}

function refuse(why: string, path = "sessionState"): NervaError {
  return new NervaError(ErrorCode.INVALID_INPUT, `Invalid sessionState: ${why}`, {
    issues: [{ path, message: why }],
  });
}

/** Signs a payload. */
export function signSession(key: Buffer, payload: SessionPayload): SessionState {
  return { ...payload, sig: mac(key, payload) };
}

/**
 * Checks a sessionState a client sent back: its shape, its signature and its graph. Throws
 * INVALID_INPUT saying why (unsigned, tampered or signed with another key, another graph).
 */
export function verifySession(key: Buffer, value: unknown, graph: string): SessionPayload {
  checkUntrustedJson(
    value,
    "sessionState",
    "Send back the sessionState an GraphRun gave, unchanged.",
  );
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw refuse("must be the sessionState object of a paused GraphRun.");
  }
  const { sig, ...rest } = value as Record<string, unknown>;
  if (typeof sig !== "string" || sig.length === 0) {
    throw refuse(
      "it is unsigned (no sig): only a sessionState issued by a graph runtime can be resumed.",
      "sessionState.sig",
    );
  }
  const parsed = SessionPayloadSchema.safeParse(rest);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw refuse(
      `field ${["sessionState", ...(i?.path ?? []).map(String)].join(".")}: ${i?.message ?? "invalid"} (was it edited?).`,
    );
  }
  const expected = Buffer.from(mac(key, parsed.data));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    throw refuse(
      "the signature does not match: it was changed after it was issued, or issued with another session key.",
      "sessionState.sig",
    );
  }
  if (parsed.data.graph !== graph) {
    throw refuse(
      `it belongs to graph "${parsed.data.graph}", not "${graph}": resume it on the runtime of that graph.`,
      "sessionState.graph",
    );
  }
  return parsed.data;
}

const KEY_HANDLER = "nerva.session-key";

/**
 * The session key kept by the store: the first runtime to ask creates it (a run that is never
 * due, made unique by its idempotency key), every later one on the same store reads it.
 */
export async function storedSessionKey(queue: RunQueue, ctx: ExecContext): Promise<Buffer> {
  const run = await queue.enqueue({
    handler: KEY_HANDLER,
    input: { message: "session key", args: { key: randomBytes(32).toString("base64url") } },
    ctx,
    idempotencyKey: KEY_HANDLER,
    // Never due: the record only holds the key (about 3,000 years).
    delaySeconds: 1e11,
  });
  const key = run.input.args.key;
  if (typeof key !== "string" || key.length < 40) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      `The session key kept in queue "${queue.name}" is unreadable.`,
    );
  }
  return Buffer.from(key, "base64url");
}
