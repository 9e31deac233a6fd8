import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import type { Memory } from "../../memory/types.js";
import { createKit } from "../../orchestrator/kit.js";
import type { AgentKit } from "../../orchestrator/types.js";
import type { PolicyEngine } from "../../policy/types.js";
import { ActiveRun, recordEvent, type RunContext } from "../../runs/run-context.js";
import { RunEventType } from "../../runs/types.js";
import type { AgentRuntime } from "../../runtime/types.js";
import type { ToolManager } from "../../tools/types.js";
import type { JsonValue } from "../../types/agent.js";
import type { TokenUsageWire } from "../../types/usage.js";
import { nodeRunKey } from "./run-events.js";
import { kNodePolicy } from "../define/node-policy.js";
import type { InputRequest, NodeContext, SharedStateView } from "../define/types.js";

/** What nodes reach besides the state: the primitives a graph runtime was built with. */
export interface GraphDeps {
  readonly runtime: AgentRuntime;
  readonly tools?: ToolManager | null;
  readonly memory?: Memory | null;
  readonly policy?: PolicyEngine | null;
}

/** Where a run stands: what a pause records and a sessionState carries. */
export interface GraphSnapshot {
  /** The state the current node was given (the state after the last committed node). */
  readonly state: Record<string, unknown>;
  /** The node running (or paused), `null` once finished. */
  readonly node: string | null;
  readonly visit: number | null;
  /** Committed visits per node. */
  readonly visits: Record<string, number>;
  /** Step keys of the committed node visits, in order (`["intake#1", "lookup#1"]`). */
  readonly path: readonly string[];
  /** Node runs so far (what `maxSteps` counts). */
  readonly steps: number;
  /** Token usage of the run so far. */
  readonly usage: TokenUsageWire;
}

/** Everything one node visit needs to build its context. */
export interface VisitScope {
  readonly graph: string;
  readonly nodeId: string;
  readonly visit: number;
  readonly run: RunContext;
  readonly exec: ExecContext;
  readonly deps: GraphDeps;
  readonly stateKeys: ReadonlySet<string>;
  readonly shared: SharedStateView;
  /** The snapshot a pause at this visit records. */
  readonly snapshot: () => GraphSnapshot;
  /** An answer given ahead (a sessionState resume): used for the first question. */
  readonly preset: { value: JsonValue } | null;
}

function snapshotJson(s: GraphSnapshot): Record<string, JsonValue> {
  return {
    state: s.state as Record<string, JsonValue>,
    node: s.node,
    visit: s.visit,
    visits: s.visits,
    path: [...s.path],
    steps: s.steps,
    usage: { ...s.usage },
  };
}

/**
 * The context of one node visit. Questions (`input`) are keyed by the visit (`$node/review#2`,
 * then `$node/review#2#2`…), so a re-run node finds its earlier answers; its steps are
 * `$node/review#2/<key>`. Built for every visit, so the kit
 * is made on first use only.
 */
class VisitContext implements NodeContext {
  readonly graph: string;
  readonly nodeId: string;
  readonly visit: number;
  readonly runId: string;
  readonly exec: ExecContext;
  readonly runtime: AgentRuntime;
  readonly stateKeys: ReadonlySet<string>;
  readonly shared: SharedStateView;
  readonly #scope: VisitScope;
  readonly #key: string;
  readonly #active: ActiveRun | null;
  #kit: AgentKit | null = null;
  #answers: JsonValue[] | null = null;
  #asked = 0;

  constructor(scope: VisitScope) {
    this.#scope = scope;
    this.graph = scope.graph;
    this.nodeId = scope.nodeId;
    this.visit = scope.visit;
    this.runId = scope.run.runId;
    this.exec = scope.exec;
    this.runtime = scope.deps.runtime;
    this.stateKeys = scope.stateKeys;
    this.shared = scope.shared;
    this.#key = nodeRunKey(scope.nodeId, scope.visit);
    this.#active = scope.run instanceof ActiveRun ? scope.run : null;
  }

  /** Answers given to this visit's questions so far (taken on first use: most nodes ask none). */
  get answers(): readonly JsonValue[] {
    if (this.#answers === null) {
      const answers: JsonValue[] =
        this.#active === null ? [] : this.#active.takeAnswers<JsonValue>(this.#key);
      const preset = this.#scope.preset;
      if (preset !== null && answers.length === 0) answers.push(preset.value);
      this.#answers = answers;
    }
    return this.#answers;
  }

  get signal(): AbortSignal {
    return this.exec.signal;
  }

  /** The graph host's policy, read by agentNode (define/node-policy.ts) before it invokes. */
  get [kNodePolicy](): PolicyEngine | null {
    return this.#scope.deps.policy ?? null;
  }

  get kit(): AgentKit {
    const { deps, run, nodeId } = this.#scope;
    this.#kit ??= withToolEvents(
      createKit(
        {
          runtime: deps.runtime,
          tools: deps.tools ?? null,
          memory: deps.memory ?? null,
          policy: deps.policy ?? null,
          stats: null,
        },
        this.exec,
      ),
      run,
      nodeId,
    );
    return this.#kit;
  }

  async emit(chunk: string): Promise<void> {
    if (typeof chunk !== "string") {
      throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid chunk: ctx.emit takes a string.", {
        issues: [{ path: "chunk", message: "must be a string" }],
      });
    }
    await this.exec.stream?.push(chunk);
  }

  async input<T = JsonValue>(request: InputRequest): Promise<T> {
    let error: string | null = null;
    const answers = this.answers;
    while (this.#asked < answers.length) {
      const answer = answers[this.#asked++];
      if (request.schema === undefined) return answer as T;
      const parsed = request.schema.safeParse(answer);
      if (parsed.success) return parsed.data as T;
      error = `The answer did not fit: ${parsed.error.issues.map((i) => `${i.path.join(".") || "value"}: ${i.message}`).join("; ")}`;
    }
    this.#asked += 1;
    return this.#ask<T>(request, error);
  }

  step<T>(stepKey: string, fn: () => T | Promise<T>): Promise<T> {
    const active = this.#active;
    if (active === null) return this.#scope.run.step(stepKey, fn);
    return active.nestedStep(this.#key, stepKey, fn);
  }

  async #ask<T>(request: InputRequest, error: string | null): Promise<T> {
    const { run } = this.#scope;
    const data: Record<string, JsonValue> = {
      ...(request.data ?? {}),
      ...(error === null ? {} : { error }),
    };
    const prompt = String(request.prompt);
    const kind = request.kind ?? "approval";
    const pause = {
      prompt,
      kind,
      data: { ...data, graph: snapshotJson(this.#scope.snapshot()) },
      ...(request.answeredBy === undefined ? {} : { answeredBy: request.answeredBy }),
    };
    const active = this.#active;
    if (active !== null)
      return active.ask<T>(active.unique("i", this.#key), { key: this.#key, ...pause });
    return run.waitForInput<T>(this.#key, pause);
  }
}

/** Builds the context of one node visit. */
export function createNodeContext(scope: VisitScope): NodeContext {
  return new VisitContext(scope);
}

/** The kit with each tool call written to the run as `tool.started` / `tool.completed`. */
function withToolEvents(kit: AgentKit, run: RunContext, nodeId: string): AgentKit {
  return Object.freeze({
    ...kit,
    tools: Object.freeze({
      discover: kit.tools.discover,
      call: async (name: string, args: unknown = {}) => {
        await recordEvent(run, RunEventType.TOOL_STARTED, { node: nodeId, tool: String(name) });
        const result = await kit.tools.call(name, args);
        await recordEvent(run, RunEventType.TOOL_COMPLETED, {
          node: nodeId,
          tool: String(name),
          status: result.status,
          durationMs: result.durationMs,
          error: result.error,
        });
        return result;
      },
    }),
  });
}
