import { z } from "zod";
import {
  AgentStatus,
  decisionError,
  ErrorCode,
  isNervaError,
  parseOrThrow,
  type AgentInput,
  type KitHandler,
  type PartialAgentResult,
} from "@nerva/core";
import type { ModelMessage } from "ai";
import { toolsFor } from "./tools.js";
import type { NervaModel } from "./types.js";

/**
 * Options of {@link modelAgent}.
 *
 * @example
 * const options: ModelAgentOptions = { model, system: "You book flights.", maxSteps: 5, tools: ["search_flights"] };
 */
export interface ModelAgentOptions {
  readonly model: NervaModel;
  readonly system?: string;
  /** Model steps per request (each tool round trip is one); default 5. */
  readonly maxSteps?: number;
  /** The kit's tools the model may call: all of them (`true`, default), none, or these names. */
  readonly tools?: boolean | readonly string[];
  /** What the model is asked; default the input's message. */
  readonly prompt?: (input: AgentInput) => string | readonly ModelMessage[];
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
}

const OptionsSchema = z
  .object({
    model: z.custom<NervaModel>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as NervaModel).generate === "function" &&
        typeof (v as NervaModel).stream === "function" &&
        typeof (v as NervaModel).id === "string",
      "must be a model made by createModel(...)",
    ),
    system: z.string().optional(),
    maxSteps: z.number().int().min(1).max(100).default(5),
    tools: z.union([z.boolean(), z.array(z.string().min(1))]).default(true),
    prompt: z
      .custom<ModelAgentOptions["prompt"]>((v) => typeof v === "function", "must be a function")
      .optional(),
    temperature: z.number().finite().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
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
  const model = o.model;
  return async (input, ctx, kit) => {
    let tools = o.tools === false ? undefined : await toolsFor(kit, ctx);
    if (tools !== undefined && Array.isArray(o.tools)) {
      const wanted = new Set(o.tools);
      tools = Object.fromEntries(Object.entries(tools).filter(([name]) => wanted.has(name)));
    }
    const asked = o.prompt === undefined ? input.message : o.prompt(input);
    const call = {
      ...(o.system === undefined ? {} : { system: o.system }),
      ...(typeof asked === "string" ? { prompt: asked } : { messages: asked }),
      ...(tools === undefined || Object.keys(tools).length === 0 ? {} : { tools }),
      ...(o.temperature === undefined ? {} : { temperature: o.temperature }),
      ...(o.maxOutputTokens === undefined ? {} : { maxOutputTokens: o.maxOutputTokens }),
      maxSteps: o.maxSteps,
      beforeStep: async () => {
        const refused = await kit.authorize({ kind: "model", name: model.id });
        if (refused !== null) throw decisionError(refused);
      },
    };
    try {
      const { text } =
        ctx.stream === null ? await model.generate(ctx, call) : await model.stream(ctx, call);
      return text;
    } catch (err) {
      return failure(err);
    }
  };
}
