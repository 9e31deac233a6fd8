// @nerva/core/container: the ContainerRuntime. A separate entry point so that dockerode (an
// optional peer dependency, loaded on first use) is never needed by users of @nerva/core alone.
export { ContainerRuntime, type ContainerRuntimeStartInfo } from "./container-runtime.js";
export {
  ContainerHandlerOptionsSchema,
  ContainerRuntimeOptionsSchema,
  DockerOptionsSchema,
  parseMemoryLimit,
  type ContainerHandlerOptions,
  type ContainerRuntimeOptions,
  type DockerOptions,
} from "./options.js";
export { containerAgentPath } from "./agent-path.js";
