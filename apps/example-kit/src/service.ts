import { Runner, type Orchestrator } from "@nerva/core";
import type { Backend } from "@nerva/core/backend";
import type { DeclarativePolicyEngine, PolicyDocumentInit } from "@nerva/core/policy";
import type { NervaModel } from "@nerva/ai-sdk";
import { createOrchestrator } from "./agents.js";
import { exampleModel } from "./concierge.js";
import { exampleConfigOf, type ExampleConfig } from "./config.js";
import type { ExampleLog } from "./count-agent.js";
import { RUN_HANDLER, createExampleProtocols, type ExampleProtocols } from "./protocols.js";
import { createExampleRoutes, type ExampleRoutes } from "./routes.js";
import { TRAVELLER_ROLE } from "./requests.js";
import { exampleBackend } from "./state.js";

/**
 * An example app's service, whatever its framework: the orchestrator with its policy, the
 * backend (see `exampleBackend`), the worker executing durable runs and the bodies of the
 * routes. Start the worker with `start()`; `close()` stops everything.
 *
 * @example
 * const service: ExampleService = await createExampleService();
 */
export interface ExampleService {
  readonly config: ExampleConfig;
  /** Where its state lives: `backend.kind` is `redis` or `memory`. */
  readonly backend: Backend;
  readonly orchestrator: Orchestrator;
  readonly policy: DeclarativePolicyEngine;
  readonly runner: Runner;
  readonly routes: ExampleRoutes;
  /** `/api/chat`, `/ag-ui` and `/mcp`: the protocols of frontends and other agents. */
  readonly protocols: ExampleProtocols;
  /** How the start-up line names the model. */
  readonly model: string;
  /** Starts this replica's worker on the runs queue. */
  start(): Promise<void>;
  /** Stops the worker (its runs are released for another worker), then closes the backend. */
  close(): Promise<void>;
}

/**
 * The policy of the example service: `RATE_LIMIT_PER_MINUTE` `/chat` requests per user per
 * minute, `BUDGET_TOKENS_PER_DAY` tokens per user per day (each request in flight holds
 * `BUDGET_RESERVE_TOKENS`), `refund_agent` only once a user with the role `approver` approved,
 * and the `book_flight` tool only once its requester approved it (every dev token carries the
 * role `traveller`: in a chat's durable run the call waits for its user's answer).
 *
 * @example
 * const policy = backend.policy(examplePolicy(config));
 */
export function examplePolicy(config: ExampleConfig): PolicyDocumentInit {
  return {
    version: 1,
    rateLimits: [{ name: "per-user", per: "user", limit: config.ratePerMinute, windowSeconds: 60 }],
    budgets: [
      {
        name: "daily-tokens",
        per: "user",
        windowSeconds: 86_400,
        maxTokens: config.budgetTokensPerDay,
        reserveTokens: config.budgetReserveTokens,
      },
    ],
    approvals: [
      { name: "refunds", kind: "agent", names: ["refund_agent"], approverRoles: ["approver"] },
      {
        name: "bookings",
        kind: "tool",
        names: ["book_flight"],
        approverRoles: [TRAVELLER_ROLE],
        allowSelfApproval: true,
      },
    ],
  };
}

/**
 * Builds the example service from `env` (see `exampleConfigOf`): with `REDIS_URL` every piece
 * of state is in Redis and any number of replicas may run; without, the embedded defaults. The
 * model is `options.model`, or the one `exampleModel(env)` picks.
 *
 * @example
 * const service = await createExampleService(process.env);
 * await service.start();
 * const app = createApp({ service, auth });
 */
export async function createExampleService(
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: { model?: NervaModel; log?: ExampleLog } = {},
): Promise<ExampleService> {
  const config = exampleConfigOf(env);
  const picked =
    options.model === undefined
      ? await exampleModel(env)
      : { model: options.model, label: "given" };
  const log: ExampleLog = options.log ?? ((line) => console.log(JSON.stringify(line)));
  const backend = await exampleBackend(config);
  const policy = backend.policy(examplePolicy(config));
  const runs = backend.queue("runs");
  const { orchestrator, close } = createOrchestrator({
    concierge: picked.model,
    memory: backend.memory(),
    registry: backend.registry,
    policy,
    log,
  });
  const runner = new Runner({
    queue: runs,
    handlers: {
      // A durable run handles its message like /chat: the same orchestrator, policy and memory.
      // The Runner gives `ctx` a stream into the run's event log, so what the agent streams
      // (a model's tokens, story_agent's words) is there as it comes, for /runs/:id/events,
      // /api/chat and /ag-ui; an answer that does not stream is the run's output.
      [RUN_HANDLER]: async (input, ctx) => {
        const response = await orchestrator.handle(input.message, ctx);
        return { status: response.status, output: response.text, error: response.error };
      },
    },
    concurrency: config.runsConcurrency,
    leaseSeconds: config.leaseSeconds,
    heartbeatSeconds: config.leaseSeconds / 3,
  });
  const protocols = createExampleProtocols({ orchestrator, runs });
  let started = false;
  return {
    config,
    backend,
    orchestrator,
    policy,
    runner,
    routes: createExampleRoutes({ orchestrator, policy, runs }),
    protocols,
    model: picked.label,
    start: async () => {
      started = true;
      await runner.start();
    },
    close: async () => {
      await protocols.close();
      if (started) await runner.stop({ graceSeconds: 5 });
      await close();
      await backend.close();
    },
  };
}
