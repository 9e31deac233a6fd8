import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
import type { CallToolResult, Task } from "@modelcontextprotocol/sdk/types.js";
import type { RunRecord } from "../runs/types.js";
import { graphAnswer, taskStatusOf, type GraphToolConfig } from "./graph-tools.js";

/** How often a client is told to poll a task (ms). */
export const TASK_POLL_MS = 250;

/** A run as an MCP task: the run id is the task id, its status the task's. */
export function taskOf(run: RunRecord): Task {
  return {
    taskId: run.id,
    status: taskStatusOf(run.status),
    ttl: null,
    createdAt: new Date(run.createdAt).toISOString(),
    lastUpdatedAt: new Date(run.finishedAt ?? run.startedAt ?? run.createdAt).toISOString(),
    pollInterval: TASK_POLL_MS,
    ...(run.status === "paused" && typeof run.pause?.prompt === "string"
      ? { statusMessage: run.pause.prompt }
      : {}),
  };
}

/**
 * The SDK's task store over the graph tools' runs. Nothing is kept here: a task is its run, read
 * from the run store, so a task started through one replica is reported by any other on the same
 * store (to the user who started it: `userOf` names the user of an MCP session, and a run of
 * another user reads as unknown).
 */
export function runTaskStore(
  tools: readonly GraphToolConfig[],
  userOf: (sessionId: string | undefined) => string | null,
): TaskStore {
  const find = async (
    taskId: string,
    sessionId: string | undefined,
  ): Promise<{ run: RunRecord; tool: GraphToolConfig } | null> => {
    const user = userOf(sessionId);
    if (user === null) return null;
    for (const tool of tools) {
      const run = await tool.host.queue.get(taskId).catch(() => null);
      if (run !== null && run.handlers[0] === tool.host.graph.name && run.userId === user) {
        return { run, tool };
      }
    }
    return null;
  };
  return {
    createTask: () => {
      // A graph tool's call starts its run itself and answers with the run as the task.
      throw new Error("Tasks are created by calling a graph tool.");
    },
    getTask: async (taskId, sessionId) => {
      const found = await find(taskId, sessionId);
      return found === null ? null : taskOf(found.run);
    },
    getTaskResult: async (taskId, sessionId): Promise<CallToolResult> => {
      const found = await find(taskId, sessionId);
      const run = found === null ? null : await found.tool.host.get(taskId);
      if (found === null || run === null) throw new Error(`Task not found: ${taskId}`);
      return graphAnswer(found.tool.name, run);
    },
    // The run holds its result: nothing to store.
    storeTaskResult: async () => {},
    updateTaskStatus: async (taskId, status, _message, sessionId) => {
      if (status !== "cancelled") return;
      const found = await find(taskId, sessionId);
      if (found !== null)
        await found.tool.host.cancel(taskId, { reason: "cancelled by the MCP client" });
    },
    listTasks: async (_cursor, sessionId) => {
      const user = userOf(sessionId);
      if (user === null) return { tasks: [] };
      const tasks: Task[] = [];
      for (const tool of tools) {
        const { runs } = await tool.queue.list({
          userId: user,
          handler: tool.host.graph.name,
          limit: 100,
        });
        tasks.push(...runs.map(taskOf));
      }
      return { tasks };
    },
  };
}
