import { fileURLToPath } from "node:url";

/**
 * Absolute path of the Nerva container agent script shipped with @nerva/core: copy it into an
 * image (next to `node`) to run `module` handlers in `warm` or framed per-call mode.
 *
 * @example
 * // Dockerfile: COPY nerva-agent.mjs /nerva/agent.mjs
 * await fs.copyFile(containerAgentPath(), "./docker/nerva-agent.mjs");
 */
export function containerAgentPath(): string {
  // Same relative location from src/runtime/container/ and dist/runtime/container/: the agent
  // is plain JavaScript and ships in src/ (listed in "files").
  return fileURLToPath(
    new URL("../../../src/runtime/container/image/agent/agent.mjs", import.meta.url),
  );
}
