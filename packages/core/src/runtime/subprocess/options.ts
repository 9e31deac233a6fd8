import { availableParallelism } from "node:os";
import { z } from "zod";
import { HandlerNameSchema, HandlerOptionsSchema, RuntimeOptionsSchema } from "../options.js";
import { Confinement } from "./launcher.js";

/** An environment variable name, or a prefix ending in `*` (e.g. `LC_*`). */
const envPattern = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]*\*?$/,
    'must be a variable name, or a prefix ending in "*" such as "LC_*"',
  );
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a valid variable name");

/**
 * Variables a child inherits by default: enough to find interpreters (`#!/usr/bin/env python3`)
 * and decode text the way the host does. Not `HOME`: tools read credentials from files under it
 * (`~/.aws`, `~/.npmrc`, `~/.netrc`), so a handler gets it only when you allow it.
 */
export const DEFAULT_ENV_ALLOW = Object.freeze(["PATH", "LANG", "LC_*", "TZ"]);

export const PoolOptionsSchema = z
  .object({
    /** Workers kept warm (started ahead of need and replaced when they die). Default 1. */
    min: z.number().int().min(0).max(256).default(1),
    /** Workers running handlers at once; further invocations queue. Default: the CPU count. */
    max: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(() => Math.max(1, availableParallelism())),
    /** A worker idle this long is recycled (replaced by a fresh one if the pool is at `min`). */
    idleSeconds: z.number().positive().finite().default(60),
  })
  .strict()
  .refine((p) => p.min <= p.max, { message: "min must not exceed max", path: ["min"] });

export const SubprocessRuntimeOptionsSchema = RuntimeOptionsSchema.extend({
  /** Directory holding the handlers: `<name>.js`/`.mjs`/`.cjs` modules and executables. */
  handlerDir: z.string().min(1),
  pool: PoolOptionsSchema.prefault({}),
  /** A worker is recycled after this many invocations. Default 1000. */
  maxInvocationsPerWorker: z.number().int().min(1).default(1000),
  /**
   * Per invocation, the most bytes a handler may write to stdout, to stderr, and in protocol
   * frames (each counted separately). More is an ERROR and the process is killed, never cut.
   */
  maxOutputBytes: z
    .number()
    .int()
    .min(1024)
    .max(1024 ** 3)
    .default(8 * 1024 * 1024),
  /** Bytes of stderr kept and attached to the result. Default 4096. */
  stderrTailBytes: z
    .number()
    .int()
    .min(0)
    .max(1024 * 1024)
    .default(4096),
  env: z
    .object({
      /** Host variables passed through (names, or prefixes ending in `*`). */
      allow: z.array(envPattern).default([...DEFAULT_ENV_ALLOW]),
      /** Variables set in every child (win over allowed ones; NERVA_* context variables win over these). */
      set: z.record(envName, z.string()).default({}),
    })
    .strict()
    .prefault({}),
  /**
   * Memory limit per process in MiB: the V8 heap limit (`--max-old-space-size`) of Node workers,
   * the address-space limit (`ulimit -v`) of executables. Default: none.
   */
  memoryLimitMb: z
    .number()
    .int()
    .min(16)
    .max(1024 * 1024)
    .optional(),
  /**
   * On timeout or cancel, how long a process may take to stop on its own (after a `cancel` frame
   * or SIGTERM) before SIGKILL. Default 0: killed at once. A pooled worker that stops in time is
   * kept.
   */
  cancelGraceSeconds: z.number().min(0).max(0.1).default(0),
  /** Per-handler overrides: `{ my_agent: { timeoutSeconds: 5, circuitBreaker: false } }`. */
  handlers: z.record(HandlerNameSchema, HandlerOptionsSchema).default({}),
  /**
   * How handler processes are confined (docs/subprocess-runtime.md#confinement): `"auto"` (the
   * default) uses the strongest mechanism this machine offers and warns once if that leaves a
   * gap; `"user-namespace"`, `"pid-namespace"` or `"capabilities"` require that mechanism (an
   * INVALID_OPTIONS error where it is not available); `"none"` starts plain processes.
   */
  confinement: z
    .enum([
      Confinement.AUTO,
      Confinement.USER_NAMESPACE,
      Confinement.PID_NAMESPACE,
      Confinement.CAPABILITIES,
      Confinement.NONE,
    ])
    .default(Confinement.AUTO),
  /** Node binary for module workers. Default: the one running the host (`process.execPath`). */
  nodePath: z.string().min(1).optional(),
});

/** Options of `SubprocessRuntime`: the shared runtime options plus process settings. */
export type SubprocessRuntimeOptions = z.input<typeof SubprocessRuntimeOptionsSchema>;
export type ResolvedSubprocessOptions = z.output<typeof SubprocessRuntimeOptionsSchema>;
