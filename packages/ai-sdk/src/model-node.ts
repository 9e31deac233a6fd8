import { z } from "zod/v4";
import { ErrorCode, parseOrThrow, type GraphState, type NodeContext } from "@nerva/core";
import { NodeKind, type GraphNode, type NodeOptions, type StateUpdate } from "@nerva/core/graph";
import type { ModelMessage } from "ai";
import {
  functionOption,
  modelLoopShape,
  runModelLoop,
  type ModelLoopOptions,
} from "./model-call.js";

/**
 * What a model node's call produced, as committed (JSON): the answer's text, the structured
 * object when a `schema` was given, and why the model stopped.
 *
 * @example
 * const answer: ModelNodeAnswer = { text: "Refund approved.", object: null, finishReason: "stop" };
 */
export interface ModelNodeAnswer {
  readonly text: string;
  readonly object: unknown;
  readonly finishReason: string;
}

/**
 * Options of {@link modelNode}.
 *
 * @example
 * const options: ModelNodeOptions<{ question?: string; answer?: string }> = {
 *   model, prompt: (s) => s.question ?? "", reads: ["question"], writes: "answer",
 * };
 */
export interface ModelNodeOptions<S extends GraphState>
  extends ModelLoopOptions, Omit<NodeOptions<S>, "writes"> {
  /** What the model is asked, from the state the node reads. */
  readonly prompt: (state: S) => string | readonly ModelMessage[];
  /** The state key the answer is written to (default: the node id, when it is a key). */
  readonly writes?: keyof S & string;
  /** Asks for structured output: the parsed object (not the text) is written to `writes`. */
  readonly schema?: z.ZodType;
  /** Replaces the default mapping of the answer to a state update (any keys of the state). */
  readonly output?: (answer: ModelNodeAnswer, state: S) => StateUpdate<S>;
}

const OptionsSchema = z
  .object({
    ...modelLoopShape,
    prompt: functionOption("function (state) => string | messages"),
    reads: z.array(z.string().min(1)).optional(),
    writes: z.string().min(1).optional(),
    schema: z.custom<z.ZodType>((v) => v instanceof z.ZodType, "must be a zod schema").optional(),
    output: functionOption("function (answer, state) => update").optional(),
    optional: z.boolean().optional(),
    maxVisits: z.number().int().positive().optional(),
    timeoutSeconds: z.number().positive().finite().optional(),
  })
  .strict();

/**
 * A graph node that asks a model. Its prompt is a function of the state; the model gets the
 * graph runtime's tools through the node's kit (so permissions and the policy apply, and each
 * call is a TOOL_CALL_STARTED / TOOL_CALL_COMPLETED event); the policy is asked before each model
 * step (action kind `model`, so a spent budget stops the loop); the answer streams to the client
 * as `output.delta` events; its `chat` span sits under the node's
 * `graph.node` span. The answer is committed as a step of the visit before the state is updated,
 * so a worker that dies after it never calls the model again for that visit. A failed model call
 * fails the node with its code (RATE_LIMITED, BUDGET_EXCEEDED…).
 *
 * @example
 * const answer = modelNode<{ question?: string; answer?: string }>({
 *   model, system: "Answer in one sentence.", prompt: (s) => s.question ?? "", reads: ["question"], writes: "answer",
 * });
 */
export function modelNode<S extends GraphState>(options: ModelNodeOptions<S>): GraphNode<S> {
  const o = parseOrThrow(
    OptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "Pass { model: createModel(...), prompt: (state) => string | messages, writes?: state key, reads?, schema?, output?, system?, maxSteps?: 1-100, tools?: boolean | string[], temperature?, maxOutputTokens?, optional?, maxVisits?, timeoutSeconds? }.",
  );
  const prompt = options.prompt;
  const output = options.output;
  const run = async (state: S, ctx: NodeContext): Promise<StateUpdate<S>> => {
    const answer = await ctx.step("model", async (): Promise<ModelNodeAnswer> => {
      const result = await runModelLoop(o, ctx.kit, ctx.exec, prompt(state), o.schema);
      return {
        text: result.text,
        object: (result.object ?? null) as unknown,
        finishReason: result.finishReason,
      };
    });
    if (output !== undefined) return output(answer, state);
    const key = o.writes ?? ctx.nodeId;
    if (!ctx.stateKeys.has(key)) return {} as StateUpdate<S>;
    return { [key]: o.schema === undefined ? answer.text : answer.object } as StateUpdate<S>;
  };
  return Object.freeze({
    kind: NodeKind.MODEL,
    ...(o.reads === undefined ? {} : { reads: o.reads }),
    // Declared, so the graph refuses any other key; with `output`, that mapping decides the keys.
    ...(o.writes === undefined || output !== undefined ? {} : { writes: [o.writes] }),
    ...(o.optional === undefined ? {} : { optional: o.optional }),
    ...(o.maxVisits === undefined ? {} : { maxVisits: o.maxVisits }),
    ...(o.timeoutSeconds === undefined ? {} : { timeoutSeconds: o.timeoutSeconds }),
    run,
  }) as GraphNode<S>;
}
