import type { ExecContext } from "../context/exec-context.js";
import {
  agentResult,
  PartialAgentResultSchema,
  type AgentInput,
  type AgentResult,
  type PartialAgentResult,
} from "../types/agent.js";
import { AGENT_STATUSES, AgentStatus } from "../types/status.js";
import { isPlainJson } from "../internal/plain-json.js";
import { RESULT_DATA_LIMITS, errorResult, resultDataViolation } from "./results.js";
import type { AgentHandler, AgentRuntime, HandlerReturn } from "./types.js";

// Calling a handler function and turning whatever it produced into an AgentResult: shared by the
// in-process runtime and the subprocess worker, which run the same kind of handler.

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function"
  );
}

/**
 * Calls `fn` and turns what it produced into an AgentResult: a returned value through
 * {@link normalise}, an async generator by streaming its chunks to `ctx.stream` as they come.
 */
export function runFunction(
  name: string,
  fn: AgentHandler,
  input: AgentInput,
  ctx: ExecContext,
  runtime: AgentRuntime,
): Promise<AgentResult> {
  let returned: unknown;
  try {
    returned = fn(input, ctx, runtime);
  } catch (err) {
    return Promise.reject(err);
  }
  if (isAsyncIterable(returned)) return consumeStream(name, returned, ctx);
  // Not an async function: one `then` instead of a suspended frame per call.
  return Promise.resolve(returned).then((value) => normalise(name, value));
}

/** Converts what a handler returned into an AgentResult. */
export function normalise(name: string, value: HandlerReturn | unknown): AgentResult {
  if (typeof value === "string") return agentResult(name, { output: value });
  if (value === undefined || value === null) return agentResult(name, {});
  if (typeof value === "object") {
    const plain = plainResult(name, value);
    if (plain !== null) return plain;
    // Only `data` can nest; bound it before the schema recurses into it (and before a worker
    // serialises it into a frame). One level for the result object itself.
    const violation = resultDataViolation((value as { data?: unknown }).data);
    if (violation !== null) {
      return errorResult(
        name,
        `Handler "${name}" returned an invalid result (result.data: ${violation}); return flatter data.`,
      );
    }
    const parsed = PartialAgentResultSchema.safeParse(value);
    if (parsed.success) return agentResult(name, parsed.data);
    const detail = parsed.error.issues
      .map((i) => `${["result", ...i.path.map(String)].join(".")}: ${i.message}`)
      .join("; ");
    return errorResult(name, `Handler "${name}" returned an invalid result (${detail}).`);
  }
  return errorResult(
    name,
    `Handler "${name}" returned a ${typeof value}; return a string or a partial AgentResult, or yield strings.`,
  );
}

const RESULT_KEYS: ReadonlySet<string> = new Set(["status", "output", "data", "error"]);
const STATUSES: ReadonlySet<unknown> = new Set(AGENT_STATUSES);

/**
 * `value` as an AgentResult when it plainly fits PartialAgentResultSchema (known keys, a known
 * status, string output and error, `data` plain JSON within the result limits), else `null` for
 * the schema to decide and word the error. Accepts a subset of what the schema accepts, so the
 * outcome is the same; a large `data` (a graph's snapshot) is walked once instead of through
 * the schema's recursive union at every value.
 */
function plainResult(name: string, value: object): AgentResult | null {
  if (Array.isArray(value)) return null;
  for (const key of Object.keys(value)) if (!RESULT_KEYS.has(key)) return null;
  const { status, output, data, error } = value as Record<string, unknown>;
  if (status !== undefined && !STATUSES.has(status)) return null;
  if (output !== undefined && typeof output !== "string") return null;
  if (error !== undefined && error !== null && typeof error !== "string") return null;
  if (data !== undefined) {
    if (typeof data !== "object" || data === null || Array.isArray(data)) return null;
    if (!isPlainJson(data, RESULT_DATA_LIMITS)) return null;
  }
  return agentResult(name, { status, output, data, error } as PartialAgentResult);
}

async function consumeStream(
  name: string,
  iterable: AsyncIterable<unknown>,
  ctx: ExecContext,
): Promise<AgentResult> {
  const iterator = iterable[Symbol.asyncIterator]();
  let output = "";
  let finished = false;
  try {
    for (;;) {
      const step = await iterator.next();
      if (step.done === true) {
        finished = true;
        if (step.value === undefined) return agentResult(name, { output });
        const tail = normalise(name, step.value);
        return agentResult(name, { ...tail, output: output + tail.output });
      }
      if (ctx.endReason !== null)
        return agentResult(name, {
          status: AgentStatus.ERROR,
          output,
          error: ctx.endReason.message,
        });
      if (typeof step.value !== "string") {
        return errorResult(
          name,
          `Streaming handler "${name}" yielded a ${typeof step.value}; yield strings.`,
        );
      }
      output += step.value;
      if (ctx.stream !== null) await ctx.stream.push(step.value);
    }
  } finally {
    if (!finished) await iterator.return?.();
  }
}
