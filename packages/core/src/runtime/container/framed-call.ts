import type { ExecContext } from "../../context/exec-context.js";
import type { AgentInput, AgentResult } from "../../types/agent.js";
import { errorResult, thrownResult } from "../results.js";
import type { AgentRuntime } from "../types.js";
import type { Container } from "./docker.js";
import { FramedConnection } from "./framed.js";
import type { HandlerSpec } from "./spec.js";
import type { ContainerHost } from "./stdio.js";

/** Longest wait for a fresh container's agent to say `ready`. */
export const AGENT_START_MS = 30_000;

/** Creates (but does not start) a container for a framed-protocol handler. */
export function createFramedContainer(host: ContainerHost, spec: HandlerSpec): Promise<Container> {
  return host.create(spec, []);
}

/**
 * per-call mode for a framed handler (a `module` run by the Nerva agent): a fresh container for
 * this one invocation, so streaming, delegation and token usage work as in warm mode while no
 * state survives between calls. The container is killed when `scoped` ends and always removed.
 */
export async function runFramedCall(
  host: ContainerHost,
  spec: HandlerSpec,
  input: AgentInput,
  scoped: ExecContext,
  runtime: AgentRuntime,
): Promise<AgentResult> {
  let container: Container | undefined;
  let conn: FramedConnection | undefined;
  const stop = (): void => {
    if (conn !== undefined) void conn.kill("was stopped: the call ended");
    else if (container !== undefined) void host.discard(container);
  };
  scoped.signal.addEventListener("abort", stop, { once: true });
  try {
    container = await createFramedContainer(host, spec);
    if (scoped.signal.aborted) return errorResult(spec.name, "ended before the container started");
    conn = await FramedConnection.open(
      host,
      spec,
      container,
      Math.min(AGENT_START_MS, scoped.remainingMs()),
    );
    if (scoped.signal.aborted) return errorResult(spec.name, "ended before the agent was ready");
    return await conn.run(input, scoped, runtime);
  } catch (err) {
    return thrownResult(spec.name, err);
  } finally {
    scoped.signal.removeEventListener("abort", stop);
    if (container !== undefined) void host.discard(container);
  }
}
