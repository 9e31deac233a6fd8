import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../../errors.js";
import { HandlerOptionsSchema, RuntimeOptionsSchema } from "../options.js";

/**
 * How to reach the Docker engine (a subset of dockerode's options; default: the local socket).
 *
 * @example
 * new ContainerRuntime({ docker: { host: "10.0.0.5", port: 2376, protocol: "https", ca, cert, key } });
 */
export const DockerOptionsSchema = z
  .object({
    socketPath: z.string().min(1).optional(),
    host: z.string().min(1).optional(),
    port: z.union([z.number().int().min(1).max(65535), z.string().regex(/^\d+$/)]).optional(),
    protocol: z.enum(["http", "https", "ssh"]).optional(),
    ca: z.union([z.string(), z.instanceof(Buffer)]).optional(),
    cert: z.union([z.string(), z.instanceof(Buffer)]).optional(),
    key: z.union([z.string(), z.instanceof(Buffer)]).optional(),
    /** Docker API version, e.g. "v1.41". */
    version: z
      .string()
      .regex(/^v\d+\.\d+$/, 'must look like "v1.41"')
      .optional(),
    /** Milliseconds before a Docker API request is abandoned. */
    timeout: z.number().int().positive().optional(),
  })
  .strict();
/**
 * Connection settings for the Docker engine, passed to dockerode.
 *
 * @example
 * const docker: DockerOptions = { socketPath: "/var/run/docker.sock" };
 */
export type DockerOptions = z.input<typeof DockerOptionsSchema>;

/**
 * Schema of the {@link ContainerRuntime} options: the options shared by every runtime plus the
 * Docker connection, the label prefix, the output limit and orphan removal.
 *
 * @example
 * const parsed = ContainerRuntimeOptionsSchema.parse({ timeoutSeconds: 10 }); // defaults filled in
 */
export const ContainerRuntimeOptionsSchema = RuntimeOptionsSchema.extend({
  docker: DockerOptionsSchema.default({}),
  /**
   * Prefix of the labels put on every container (`<prefix>.runtime=container`,
   * `<prefix>.owner=...`). Orphan cleanup only touches containers with this prefix.
   */
  labelPrefix: z
    .string()
    .regex(/^[a-z0-9]+([.-][a-z0-9]+)*$/, "must be lowercase letters/digits separated by . or -")
    .max(64)
    .default("nerva"),
  /** Largest stdout (or result frame) accepted from a handler; more is an ERROR, never cut. */
  maxOutputBytes: z
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3)
    .default(10 * 1024 * 1024),
  /** Remove containers left by a crashed host process at start (default true). */
  removeOrphans: z.boolean().default(true),
});
/**
 * Options of {@link ContainerRuntime}: the shared runtime options plus Docker settings.
 *
 * @example
 * const options: ContainerRuntimeOptions = { timeoutSeconds: 30, labelPrefix: "acme", maxOutputBytes: 1 << 20 };
 */
export type ContainerRuntimeOptions = z.input<typeof ContainerRuntimeOptionsSchema>;
export type ResolvedRuntimeOptions = z.output<typeof ContainerRuntimeOptionsSchema>;

const MEMORY = /^(\d+(?:\.\d+)?)([bkmg]?)$/i;
const UNIT: Record<string, number> = { "": 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
/** Docker refuses limits under 6 MiB. */
const MIN_MEMORY_BYTES = 6 * 1024 ** 2;

/**
 * Bytes of a Docker memory string ("256m", "1g", "512k", "1048576"), or `null` if malformed.
 *
 * @example
 * parseMemoryLimit("256m"); // 268435456
 */
export function parseMemoryLimit(value: string): number | null {
  const m = MEMORY.exec(value.trim());
  if (m === null) return null;
  return Math.floor(Number(m[1]) * (UNIT[(m[2] ?? "").toLowerCase()] ?? 1));
}

const memoryLimit = z
  .string()
  .refine(
    (v) => parseMemoryLimit(v) !== null,
    'must be a number with an optional unit b, k, m or g, e.g. "256m"',
  )
  .refine(
    (v) => (parseMemoryLimit(v) ?? 0) >= MIN_MEMORY_BYTES,
    'must be at least "6m" (Docker\'s minimum)',
  );

const cpuLimit = z
  .union([
    z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal number of CPUs, e.g. "1.0"'),
    z.number(),
  ])
  .transform((v) => Number(v))
  .refine((v) => Number.isFinite(v) && v >= 0.01, "must be at least 0.01 CPUs")
  .refine((v) => v <= 1024, "must be at most 1024 CPUs");

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a valid variable name")
  .refine((k) => !k.toUpperCase().startsWith("NERVA_"), "NERVA_* variables are set by the runtime");

const absolutePath = z.string().regex(/^\/[^\0]*$/, "must be an absolute path inside the image");

/** Default: a small writable /tmp on a read-only root filesystem. */
export const DEFAULT_TMPFS: Readonly<Record<string, string>> = Object.freeze({
  "/tmp": "rw,noexec,nosuid,size=64m",
});

/**
 * Schema of what {@link ContainerRuntime.register} accepts: the per-handler options of every
 * runtime (timeout, breaker, description) plus image, mode, limits and command.
 *
 * @example
 * const checked = ContainerHandlerOptionsSchema.safeParse({ image: "my-agent:1.0", cpuLimit: 0 }); // success: false
 */
export const ContainerHandlerOptionsSchema = HandlerOptionsSchema.extend({
  /** Image reference, e.g. "my-agent:1.2". It must exist on the engine (no pull is attempted). */
  image: z.string().min(1).max(512),
  /** `per-call`: a fresh container per invoke. `warm`: long-lived containers reused across invokes. */
  mode: z.enum(["per-call", "warm"]).default("per-call"),
  /** Memory limit (swap disabled), Docker syntax. Default "256m". */
  memoryLimit: memoryLimit.default("256m"),
  /** CPUs the container may use, e.g. "1.0" or 0.5. Default "1.0". */
  cpuLimit: cpuLimit.default(1),
  /** "none" (default: no network at all), "bridge", "host" or the name of a Docker network. */
  networkMode: z.string().min(1).max(256).default("none"),
  /** Mount the image read-only (default true); `tmpfs` mounts stay writable. */
  readOnlyRootfs: z.boolean().default(true),
  /** Writable in-memory mounts: path → mount options. Default `{ "/tmp": "rw,noexec,nosuid,size=64m" }`. */
  tmpfs: z.record(absolutePath, z.string().max(256)).optional(),
  /** Largest number of processes/threads in the container. Default 256. */
  pidsLimit: z.number().int().min(8).max(1_000_000).default(256),
  /** Fixed environment of the container. The runtime adds NERVA_* variables itself. */
  env: z.record(envName, z.string()).default({}),
  /** User to run as inside the container, e.g. "65534:65534". Default: the image's user. */
  user: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?$/, 'must look like "uid[:gid]" or "name[:group]"')
    .optional(),
  /**
   * Command line (exec form). per-call: the executable speaking the stdin/stdout protocol;
   * warm: the Nerva agent. Default: the image's CMD (or, with `module`, the agent running it).
   */
  command: z.array(z.string()).min(1).optional(),
  /** Path inside the image of a JavaScript module exporting the handler, run by the Nerva agent. */
  module: absolutePath.optional(),
  /** Path of the Nerva agent inside the image (used with `module`). Default "/nerva/agent.mjs". */
  agentPath: absolutePath.default("/nerva/agent.mjs"),
  /**
   * What the container speaks. `stdio`: Nerva's stdin/stdout protocol (one AgentInput JSON on
   * stdin, the result on stdout, exit code 0/2/other). `framed`: the framed worker protocol of
   * the Nerva agent (streaming, delegation, token usage). Default: `framed` for warm mode or with
   * `module`, `stdio` otherwise. Warm mode needs `framed`.
   */
  protocol: z.enum(["stdio", "framed"]).optional(),
  /** Warm mode: how many containers may serve this handler at once. Default 1. */
  poolSize: z.number().int().min(1).max(64).optional(),
}).superRefine((o, ctx) => {
  if (o.mode === "per-call" && o.poolSize !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["poolSize"],
      message: 'applies to mode "warm" only; remove it or set mode: "warm"',
    });
  }
  if (o.mode === "warm" && o.protocol === "stdio") {
    ctx.addIssue({
      code: "custom",
      path: ["protocol"],
      message: 'warm containers speak the framed protocol; use mode "per-call" for stdio handlers',
    });
  }
  if (o.module !== undefined && o.protocol === "stdio") {
    ctx.addIssue({
      code: "custom",
      path: ["protocol"],
      message: "a module runs under the Nerva agent, which speaks the framed protocol",
    });
  }
  if (o.command !== undefined && o.module !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["module"],
      message: "give either command or module, not both",
    });
  }
});
/**
 * What {@link ContainerRuntime.register} accepts for one handler.
 *
 * @example
 * const options: ContainerHandlerOptions = { image: "my-agent:1.0", memoryLimit: "256m", cpuLimit: "1.0", networkMode: "none" };
 */
export type ContainerHandlerOptions = z.input<typeof ContainerHandlerOptionsSchema>;
export type ResolvedHandlerOptions = z.output<typeof ContainerHandlerOptionsSchema>;

export function parseRuntimeOptions(options: unknown): ResolvedRuntimeOptions {
  return parseOrThrow(
    ContainerRuntimeOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    'timeoutSeconds > 0, circuitBreaker {...} or false, maxDelegationDepth >= 1, docker { socketPath | host, port, protocol }, labelPrefix like "nerva".',
  );
}

export function parseHandlerOptions(name: string, options: unknown): ResolvedHandlerOptions {
  return parseOrThrow(
    ContainerHandlerOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    `options of "${name}"`,
    'Example: { image: "my-agent:1.0", memoryLimit: "256m", cpuLimit: "1.0", networkMode: "none", mode: "per-call" }.',
  );
}
