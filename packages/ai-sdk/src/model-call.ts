import { z } from "zod/v4";
import { decisionError } from "@nerva/core/policy";
import { type AgentKit, type ExecContext } from "@nerva/core";
import type { ModelMessage } from "ai";
import { toolsFor } from "./tools.js";
import type { CallOptions, ModelResult, NervaModel } from "./types.js";

/** What a model agent and a model node share: the model, its tools and the loop's limits. */
export interface ModelLoopOptions {
  readonly model: NervaModel;
  readonly system?: string;
  /** Model steps per call (each tool round trip is one); default 5. */
  readonly maxSteps?: number;
  /** The kit's tools the model may call: all of them (`true`, default), none, or these names. */
  readonly tools?: boolean | readonly string[];
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
}

/** An option that must be a function; `what` says which (for the error). */
export const functionOption = <F extends (...args: never[]) => unknown>(what: string) =>
  z.custom<F>((v) => typeof v === "function", `must be a ${what}`);

/** The zod shape of {@link ModelLoopOptions} (each user extends it with its own keys). */
export const modelLoopShape = {
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
  temperature: z.number().finite().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
};

/** {@link ModelLoopOptions} after parsing: defaults filled in. */
export type ParsedLoop = Omit<ModelLoopOptions, "maxSteps" | "tools"> & {
  readonly maxSteps: number;
  readonly tools: boolean | readonly string[];
};

/** What the model is asked. */
export type Ask = string | readonly ModelMessage[];

/**
 * Runs the model loop for a handler or a graph node: the kit's tools (so policy, permissions and
 * registry stats apply; a graph node's kit also writes TOOL_CALL events), the policy asked before
 * each model step (action kind `model`), streamed into `ctx.stream` when there is one and no
 * structured `output` is asked for.
 */
export async function runModelLoop(
  o: ParsedLoop,
  kit: AgentKit,
  ctx: ExecContext,
  asked: Ask,
  output?: z.ZodType,
): Promise<ModelResult<unknown>> {
  let tools = o.tools === false ? undefined : await toolsFor(kit, ctx);
  if (tools !== undefined && Array.isArray(o.tools)) {
    const wanted = new Set(o.tools);
    tools = Object.fromEntries(Object.entries(tools).filter(([name]) => wanted.has(name)));
  }
  const model = o.model;
  const call: CallOptions = {
    ...(o.system === undefined ? {} : { system: o.system }),
    ...(typeof asked === "string" ? { prompt: asked } : { messages: asked }),
    ...(tools === undefined || Object.keys(tools).length === 0 ? {} : { tools }),
    ...(o.temperature === undefined ? {} : { temperature: o.temperature }),
    ...(o.maxOutputTokens === undefined ? {} : { maxOutputTokens: o.maxOutputTokens }),
    ...(output === undefined ? {} : { output }),
    maxSteps: o.maxSteps,
    beforeStep: async () => {
      const refused = await kit.authorize({ kind: "model", name: model.id });
      if (refused !== null) throw decisionError(refused);
    },
  };
  // Structured output is not streamed to the client (its deltas would be partial JSON).
  const streaming = ctx.stream !== null && output === undefined;
  const run = (streaming ? model.stream : model.generate).bind(model) as (
    call: CallOptions,
    ctx: ExecContext,
  ) => Promise<ModelResult<unknown>>;
  return run(call, ctx);
}
