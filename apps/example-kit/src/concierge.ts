import type { InProcessRuntime, Orchestrator } from "@nerva/core";
import { createOrchestrator } from "./agents.js";
import { createModel, modelAgent, type NervaModel } from "@nerva/ai-sdk";
import { scriptedModel } from "@nerva/ai-sdk/testing";

/** The model the example apps use, and how the start-up line names it. */
export interface ExampleModel {
  readonly model: NervaModel;
  readonly label: string;
}

const SYSTEM =
  "You are the concierge of a small travel agency. Answer briefly and warmly. Use search_flights for any question about flights, then summarise what it found.";

/**
 * Picks the example apps' model from the environment: with `OPENAI_API_KEY`, OpenAI's
 * `NERVA_MODEL` (default `gpt-4o-mini`); with `ANTHROPIC_API_KEY`, Anthropic's `NERVA_MODEL`
 * (default `claude-haiku-4-5`); otherwise the deterministic scripted model of
 * `@nerva/ai-sdk/testing`, so the apps, their README commands and CI need no key.
 *
 * @example
 * const { model, label } = await exampleModel();
 * console.log(`  model: ${label}`);
 */
export async function exampleModel(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ExampleModel> {
  const pick = env["NERVA_MODEL"];
  if (env["OPENAI_API_KEY"]) {
    const { createOpenAI } = await import("@ai-sdk/openai");
    const id = pick ?? "gpt-4o-mini";
    const provider = createOpenAI({ apiKey: env["OPENAI_API_KEY"] });
    return { model: createModel(provider.chat(id)), label: `openai/${id}` };
  }
  if (env["ANTHROPIC_API_KEY"]) {
    const { createAnthropic } = await import("@ai-sdk/anthropic");
    const id = pick ?? "claude-haiku-4-5";
    const provider = createAnthropic({ apiKey: env["ANTHROPIC_API_KEY"] });
    return { model: createModel(provider.messages(id)), label: `anthropic/${id}` };
  }
  return {
    model: createModel(scriptedModel({ chunkDelaySeconds: 0.03 })),
    label: "scripted (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real model)",
  };
}

/**
 * Registers `concierge_agent`: a `modelAgent` that may call the `search_flights` tool, for the
 * messages the rules do not match.
 *
 * @example
 * registerConcierge(orchestrator, runtime, model);
 */
export function registerConcierge(
  orchestrator: Orchestrator,
  runtime: InProcessRuntime,
  model: NervaModel,
): void {
  runtime.register(
    "concierge_agent",
    orchestrator.handler(
      modelAgent({ model, system: SYSTEM, maxSteps: 5, tools: ["search_flights"] }),
    ),
  );
}

/**
 * The example apps' orchestrator: the demo's agents plus `concierge_agent` on the model
 * {@link exampleModel} picks from the environment. `model` is the label for the start-up line.
 *
 * @example
 * const { orchestrator, close, model } = await createExampleOrchestrator();
 * printBanner("My example", url, model);
 */
export async function createExampleOrchestrator(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<{ orchestrator: Orchestrator; close(): Promise<void>; model: string }> {
  const { model, label } = await exampleModel(env);
  return { ...createOrchestrator({ concierge: model }), model: label };
}
