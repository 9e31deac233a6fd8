import { z } from "zod";

const seconds = z.number().positive().finite();
export const OptionsSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    name: z.string().min(1).max(128).optional(),
    toolPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,32}$/, "must be 1-32 letters, digits, '_', '.' or '-'")
      .default(""),
    timeoutSeconds: seconds.default(30),
    connectTimeoutSeconds: seconds.default(10),
    onNotification: z
      .custom<(n: McpNotification) => void>((v) => typeof v === "function", "must be a function")
      .optional(),
  })
  .strict();

/**
 * Options of {@link McpToolManager.connect}:
 * - `command`, `args`, `cwd`: how to start the server (spawned directly, no shell);
 * - `env`: variables added to the child's environment. The child does NOT inherit this
 *   process's environment: it gets only HOME, LOGNAME, PATH, SHELL, TERM and USER plus `env`,
 *   so secrets stay out unless you pass them;
 * - `name`: label in errors and spans (default: the command);
 * - `toolPrefix`: prepended to the server's tool names (e.g. `"fs."`), to keep names unique
 *   across servers;
 * - `timeoutSeconds`: per call (default 30, never past the request's deadline);
 * - `connectTimeoutSeconds`: for start-up and the first tool listing (default 10);
 * - `onNotification`: sees every server log message and tool-list change.
 *
 * @example
 * const options: McpToolManagerOptions = { command: "node", args: ["server.mjs"], toolPrefix: "fs.", timeoutSeconds: 10 };
 */
export type McpToolManagerOptions = z.input<typeof OptionsSchema>;

/**
 * A notification from the server, as given to `onNotification`:
 * `log` (a `notifications/message`), `tools_changed` (the tool list was refreshed after a
 * `notifications/tools/list_changed`; `tools` are the exposed names), or `error` (a refresh
 * failed, or the server exited).
 *
 * @example
 * const onNotification = (n: McpNotification) => { if (n.kind === "log") logger.info(n.data); };
 */
export type McpNotification =
  | {
      readonly kind: "log";
      readonly level: string;
      readonly logger: string | null;
      readonly data: unknown;
    }
  | { readonly kind: "tools_changed"; readonly tools: readonly string[] }
  | { readonly kind: "error"; readonly message: string };
