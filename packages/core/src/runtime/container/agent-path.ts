import { fileURLToPath } from "node:url";
import { packageRoot } from "../../internal/package-files.js";

/**
 * Absolute path of the Nerva container agent script shipped with @nerva/core: copy it into an
 * image (next to `node`) to run `module` handlers in `warm` or framed per-call mode.
 *
 * @example
 * // Dockerfile: COPY nerva-agent.mjs /nerva/agent.mjs
 * await fs.copyFile(containerAgentPath(), "./docker/nerva-agent.mjs");
 */
export function containerAgentPath(): string {
  // The agent is plain JavaScript: it is not built, and ships in src/ (listed in "files").
  return fileURLToPath(new URL("src/runtime/container/image/agent/agent.mjs", packageRoot));
}
