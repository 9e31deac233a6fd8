import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";

const nameList = z.array(z.string().min(1).max(256));

/**
 * Wire schema of Permissions. A `null` allowlist means unrestricted; an empty one means none.
 * `roles` is required on the wire (as in Nerva's published spec); a missing allowlist is `null`.
 */
export const PermissionsSchema = z
  .object({
    roles: nameList.describe("Role names granted, e.g. admin."),
    allowed_tools: nameList
      .nullable()
      .default(null)
      .describe("Tools that may be used: null (or absent) for every tool, [] for none."),
    allowed_agents: nameList
      .nullable()
      .default(null)
      .describe("Agents that may be delegated to: null (or absent) for every agent, [] for none."),
  })
  // Strict, unlike the other wire types: ignoring an unknown field here could widen access
  // (a camelCase "allowedTools": [] read as "no allowlist" would grant every tool).
  .strict()
  .meta({ id: "Permissions", description: "What a user or agent may access." });
export type PermissionsWire = z.output<typeof PermissionsSchema>;

/** Fields accepted by {@link Permissions.create}. */
export interface PermissionsInit {
  readonly roles?: readonly string[];
  /** `null` or omitted: every tool. `[]`: no tool. */
  readonly allowedTools?: readonly string[] | null;
  /** `null` or omitted: every agent. `[]`: no agent. */
  readonly allowedAgents?: readonly string[] | null;
}

const InitSchema = z
  .object({
    roles: nameList.optional(),
    allowedTools: nameList.nullable().optional(),
    allowedAgents: nameList.nullable().optional(),
  })
  .strict();

/**
 * What a user or agent may access: roles, and allowlists of tools and agents. Immutable; derive a
 * new value with {@link Permissions.with}.
 *
 * @example
 * const perms = Permissions.create({ roles: ["admin"], allowedTools: ["search_flights"] });
 * perms.canUseTool("search_flights"); // true
 * perms.canUseAgent("anything");      // true: no agent allowlist
 */
export class Permissions {
  /** Everything allowed, no roles. */
  static readonly UNRESTRICTED = new Permissions([], null, null);
  /** Nothing allowed, no roles. */
  static readonly NONE = new Permissions([], [], []);

  readonly roles: readonly string[];
  readonly allowedTools: readonly string[] | null;
  readonly allowedAgents: readonly string[] | null;
  readonly #tools: ReadonlySet<string> | null;
  readonly #agents: ReadonlySet<string> | null;

  private constructor(
    roles: readonly string[],
    tools: readonly string[] | null,
    agents: readonly string[] | null,
  ) {
    this.roles = Object.freeze([...roles]);
    this.allowedTools = tools === null ? null : Object.freeze([...tools]);
    this.allowedAgents = agents === null ? null : Object.freeze([...agents]);
    this.#tools = tools === null ? null : new Set(tools);
    this.#agents = agents === null ? null : new Set(agents);
    Object.freeze(this);
  }

  /**
   * Validates `init` (throws `NervaError` INVALID_OPTIONS naming the bad field: permissions are
   * configuration; only their wire form, {@link fromWire}, is input).
   */
  static create(init: PermissionsInit = {}): Permissions {
    const p = parseOrThrow(
      InitSchema,
      init,
      ErrorCode.INVALID_OPTIONS,
      "permissions",
      "Pass { roles?: string[], allowedTools?: string[] | null, allowedAgents?: string[] | null }.",
    );
    return new Permissions(p.roles ?? [], p.allowedTools ?? null, p.allowedAgents ?? null);
  }

  /** Parses the wire form (`allowed_tools`, `allowed_agents`). */
  static fromWire(wire: unknown): Permissions {
    const p = parseOrThrow(
      PermissionsSchema,
      wire,
      ErrorCode.INVALID_INPUT,
      "permissions",
      "Send { roles: string[], allowed_tools: string[] | null, allowed_agents: string[] | null }.",
    );
    return new Permissions(p.roles, p.allowed_tools, p.allowed_agents);
  }

  canUseTool(name: string): boolean {
    return this.#tools === null || this.#tools.has(name);
  }

  canUseAgent(name: string): boolean {
    return this.#agents === null || this.#agents.has(name);
  }

  hasRole(role: string): boolean {
    return this.roles.includes(role);
  }

  /** A new Permissions with the given fields replaced. */
  with(changes: PermissionsInit): Permissions {
    return Permissions.create({
      roles: changes.roles ?? this.roles,
      allowedTools: changes.allowedTools === undefined ? this.allowedTools : changes.allowedTools,
      allowedAgents:
        changes.allowedAgents === undefined ? this.allowedAgents : changes.allowedAgents,
    });
  }

  toWire(): PermissionsWire {
    return {
      roles: [...this.roles],
      allowed_tools: this.allowedTools === null ? null : [...this.allowedTools],
      allowed_agents: this.allowedAgents === null ? null : [...this.allowedAgents],
    };
  }

  toJSON(): PermissionsWire {
    return this.toWire();
  }
}
