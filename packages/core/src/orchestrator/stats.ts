import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError } from "../errors.js";
import type { InvocationRecord, Registry, RegistryKind } from "../registry/types.js";
import type { AgentRuntime } from "../runtime/types.js";

/**
 * Adds invocations to a registry, registering an entry the first time it is seen. A registry
 * failure never fails the request: it is recorded as a `registry.error` event.
 */
export class StatsRecorder {
  readonly #registry: Registry;
  readonly #runtime: AgentRuntime;
  readonly #known = new Set<string>();

  constructor(registry: Registry, runtime: AgentRuntime) {
    this.#registry = registry;
    this.#runtime = runtime;
  }

  async record(
    kind: RegistryKind,
    name: string,
    record: InvocationRecord,
    ctx: ExecContext,
  ): Promise<void> {
    const key = `${kind}:${name}`;
    try {
      if (!this.#known.has(key)) {
        try {
          await this.#registry.recordInvocation(kind, name, record, ctx);
          this.#known.add(key);
          return;
        } catch (err) {
          if (!isNervaError(err, ErrorCode.NOT_FOUND)) throw err;
        }
        const describe = (this.#runtime as { describe?: (n: string) => string | undefined })
          .describe;
        const description = kind === "agent" ? describe?.call(this.#runtime, name) : undefined;
        await this.#registry.register(
          { kind, name, ...(description === undefined ? {} : { description }) },
          ctx,
        );
        this.#known.add(key);
      }
      await this.#registry.recordInvocation(kind, name, record, ctx);
    } catch (err) {
      ctx.event("registry.error", {
        kind,
        name,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
