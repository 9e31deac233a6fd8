// SubprocessRuntime: handlers in child processes (warm Node worker pool + executables per call).
export { SubprocessRuntime, type SubprocessStats } from "./subprocess-runtime.js";
export { Confinement, type ConfinementMode } from "./launcher.js";
export {
  DEFAULT_ENV_ALLOW,
  SubprocessRuntimeOptionsSchema,
  type SubprocessRuntimeOptions,
} from "./options.js";
export { HandlerKind, scanHandlerDir, type HandlerFile, type HandlerScan } from "./handler-dir.js";
export type { PoolStats } from "./pool.js";
export { serveWorker, type ServeWorkerOptions } from "./worker-host.js";
export { parseStdout } from "./executable.js";
