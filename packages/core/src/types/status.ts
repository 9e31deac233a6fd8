/**
 * The outcome of one agent invocation. A failing agent is a value, not a throw.
 *
 * @example
 * if (result.status === AgentStatus.NEEDS_DATA) askUserFor(result.data);
 */
export const AgentStatus = {
  SUCCESS: "success",
  ERROR: "error",
  TIMEOUT: "timeout",
  WRONG_HANDLER: "wrong_handler",
  NEEDS_DATA: "needs_data",
  NEEDS_CREDENTIALS: "needs_credentials",
} as const;
export type AgentStatus = (typeof AgentStatus)[keyof typeof AgentStatus];
export const AGENT_STATUSES = Object.values(AgentStatus) as [AgentStatus, ...AgentStatus[]];

/**
 * Which identity memory is keyed by: `user` → userId, `session` → sessionId,
 * `agent` → agent name + userId, `global` → shared by everyone.
 *
 * @example
 * const ctx = ExecContext.create({ userId: "u1", memoryScope: Scope.USER });
 */
export const Scope = {
  USER: "user",
  SESSION: "session",
  AGENT: "agent",
  GLOBAL: "global",
} as const;
export type Scope = (typeof Scope)[keyof typeof Scope];
export const SCOPES = Object.values(Scope) as [Scope, ...Scope[]];
