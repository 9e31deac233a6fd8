import { z } from "zod/v4";
import {
  AgentStatus,
  ErrorCode,
  isNervaError,
  parseOrThrow,
  type AgentInput,
  type KitHandler,
} from "@nerva/core";
import { type PartialAgentResult } from "@nerva/core/context";
import type { ModelMessage } from "ai";
import {
  functionOption,
  modelLoopShape,
  runModelLoop,
  type ModelLoopOptions,
} from "./model-call.js";

/**
 * Options of {@link modelAgent}.
 *
 * @example
 * const options: ModelAgentOptions = { model, system: "You book flights.", maxSteps: 5, tools: ["search_flights"] };
 */
export interface ModelAgentOptions extends ModelLoopOptions {
  /** What the model is asked; default the input's message. */
  readonly prompt?: (input: AgentInput) => string | readonly ModelMessage[];
}

const OptionsSchema = z
  .object({
    ...modelLoopShape,
    prompt: functionOption<NonNullable<ModelAgentOptions["prompt"]>>(
      "function (input) => string | messages",
    ).optional(),
  })
  .strict();

/** How the loop ended, when it did not succeed, as an agent result (failures are values). */
function failure(err: unknown): PartialAgentResult {
  if (!isNervaError(err)) throw err;
  // The runtime reports a deadline or a cancel itself (TIMEOUT / cancelled), at the moment it happens.
  if (err.code === ErrorCode.TIMEOUT || err.code === ErrorCode.CANCELLED) throw err;
  const retry = err.details["retryAfterSeconds"];
  return {
    status: AgentStatus.ERROR,
    error: `${err.code}: ${err.message}`,
    data: { code: err.code, ...(typeof retry === "number" ? { retryAfterSeconds: retry } : {}) },
  };
}

/**
 * A handler (for `orchestrator.handler(...)`) that answers with a model: it offers the model the
 * kit's tools (through `kit.tools`, so policy, permissions and registry stats apply), asks the
 * policy before each model step (action kind `model`, so an exhausted budget stops the loop
 * before the next call), streams the answer into `ctx.stream` when the request streams, and
 * returns the final text. A refusal or a failed model call is an ERROR result whose
 * `data.code` names the code (e.g. BUDGET_EXCEEDED, RATE_LIMITED).
 *
 * @example
 * runtime.register("concierge", orchestrator.handler(modelAgent({ model, system: "You are a concierge.", maxSteps: 5 })));
 */
export function modelAgent(options: ModelAgentOptions): KitHandler {
  const o = parseOrThrow(
    OptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "Pass { model: createModel(...), system?, maxSteps?: 1-100, tools?: boolean | string[], prompt?: (input) => string | messages, temperature?, maxOutputTokens? }.",
  );
  return async (input, ctx, kit) => {
    const asked = o.prompt === undefined ? input.message : o.prompt(input);
    try {
      return (await runModelLoop(o, kit, ctx, asked)).text;
    } catch (err) {
      return failure(err);
    }
  };
}
