import type Dockerode from "dockerode";
import type { ExecContext } from "../../context/exec-context.js";
import { contextEnv as executableEnv } from "../subprocess/env.js";
import { labelKeys, OWNER_ID } from "./docker.js";
import { DEFAULT_TMPFS, parseMemoryLimit, type ResolvedHandlerOptions } from "./options.js";

/** A registered container handler, with everything derived from its options. */
export interface HandlerSpec {
  readonly name: string;
  readonly options: ResolvedHandlerOptions;
  readonly protocol: "stdio" | "framed";
  /** Exec-form command, or `undefined` for the image's CMD. */
  readonly command: readonly string[] | undefined;
  readonly memoryBytes: number;
}

/** Resolves the protocol and command line of a handler from its options. */
export function handlerSpec(name: string, options: ResolvedHandlerOptions): HandlerSpec {
  const framed =
    options.protocol === "framed" || options.mode === "warm" || options.module !== undefined;
  const command =
    options.command ??
    (options.module === undefined ? undefined : ["node", options.agentPath, options.module]);
  return {
    name,
    options,
    protocol: framed ? "framed" : "stdio",
    command,
    memoryBytes: parseMemoryLimit(options.memoryLimit) as number,
  };
}

/**
 * The request context as environment variables, for stdio handlers (framed handlers receive the
 * whole wire context with each invoke instead): the variables of the executable protocol
 * (docs/protocol.md), built as the SubprocessRuntime builds them, minus NERVA_CHANNEL_FD: a
 * container has no fd 3 channel.
 */
export function contextEnv(handler: string, ctx: ExecContext): string[] {
  const env = executableEnv(handler, ctx);
  delete env["NERVA_CHANNEL_FD"];
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

/** Docker's create-container body for one container of `spec`. */
export function createOptions(
  spec: HandlerSpec,
  labelPrefix: string,
  instanceId: string,
  extraEnv: readonly string[],
): Dockerode.ContainerCreateOptions {
  const o = spec.options;
  const keys = labelKeys(labelPrefix);
  return {
    Image: o.image,
    ...(spec.command === undefined ? {} : { Cmd: [...spec.command] }),
    Env: [...Object.entries(o.env).map(([k, v]) => `${k}=${v}`), ...extraEnv],
    ...(o.user === undefined ? {} : { User: o.user }),
    Labels: {
      [keys.runtime]: "container",
      [keys.owner]: OWNER_ID,
      [keys.instance]: instanceId,
      [keys.handler]: spec.name,
      [keys.mode]: o.mode,
    },
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: true,
    // When the host's attach connection closes (host exits or crashes), the container's stdin
    // reaches EOF: the agent and well-behaved handlers then exit by themselves.
    StdinOnce: true,
    Tty: false,
    HostConfig: {
      Memory: spec.memoryBytes,
      // Swap equal to memory means no swap: a hog is stopped at the limit instead of thrashing.
      MemorySwap: spec.memoryBytes,
      NanoCpus: Math.round(o.cpuLimit * 1e9),
      NetworkMode: o.networkMode,
      ReadonlyRootfs: o.readOnlyRootfs,
      Tmpfs: { ...(o.tmpfs ?? (o.readOnlyRootfs ? DEFAULT_TMPFS : {})) },
      PidsLimit: o.pidsLimit,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      AutoRemove: false,
    },
  };
}
