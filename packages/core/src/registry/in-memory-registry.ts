import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import {
  applyInvocation,
  byKindThenName,
  emptyStats,
  entryView,
  inSpan,
  matches,
  notFound,
  parseEntry,
  parseFilter,
  parseHealth,
  parseKey,
  parseOptions,
  parseRecord,
  statsView,
  visible,
  type ParsedEntryInit,
  type RegistryOptions,
  type StatsState,
} from "./shared.js";
import type {
  DiscoverFilter,
  HealthStatus,
  InvocationRecord,
  InvocationStats,
  Registry,
  RegistryEntry,
  RegistryEntryInit,
  RegistryKind,
} from "./types.js";

interface Slot {
  init: ParsedEntryInit;
  readonly stats: StatsState;
  readonly registeredAt: number;
  updatedAt: number;
  view: RegistryEntry;
}

const keyOf = (kind: string, name: string): string => `${kind}\u0000${name}`;

/**
 * A registry held in this process's heap. Stats are running aggregates updated in place, so
 * `stats()` is a map lookup whatever the number of invocations.
 *
 * @example
 * const registry = new InMemoryRegistry({ unhealthyAfterFailures: 3 });
 * await registry.register({ kind: "agent", name: "flight_agent", description: "Books flights" }, ctx);
 */
export class InMemoryRegistry implements Registry {
  readonly #slots = new Map<string, Slot>();
  readonly #threshold: number;
  #closed = false;

  constructor(options: RegistryOptions = {}) {
    this.#threshold = parseOptions(options).unhealthyAfterFailures;
  }

  async register(entry: RegistryEntryInit, ctx: ExecContext): Promise<RegistryEntry> {
    const init = parseEntry(entry);
    return inSpan(ctx, "register", { kind: init.kind, name: init.name }, () => {
      const key = keyOf(init.kind, init.name);
      const now = Date.now();
      const slot = this.#live().get(key);
      if (slot === undefined) {
        const stats = emptyStats();
        const view = entryView(init, stats, now, now);
        this.#live().set(key, { init, stats, registeredAt: now, updatedAt: now, view });
        return view;
      }
      slot.init = init;
      slot.updatedAt = now;
      return (slot.view = entryView(init, slot.stats, slot.registeredAt, now));
    });
  }

  async unregister(kind: RegistryKind, name: string, ctx: ExecContext): Promise<boolean> {
    parseKey(kind, name);
    return inSpan(ctx, "unregister", { kind, name }, () => this.#live().delete(keyOf(kind, name)));
  }

  async get(kind: RegistryKind, name: string, ctx: ExecContext): Promise<RegistryEntry | null> {
    parseKey(kind, name);
    return inSpan(ctx, "get", { kind, name }, () => {
      const slot = this.#live().get(keyOf(kind, name));
      return slot !== undefined && visible(slot.view, ctx) ? slot.view : null;
    });
  }

  async discover(ctx: ExecContext, filter: DiscoverFilter = {}): Promise<RegistryEntry[]> {
    const f = parseFilter(filter);
    return inSpan(ctx, "discover", { kind: f.kind ?? "any" }, () => {
      const found: RegistryEntry[] = [];
      for (const slot of this.#live().values()) {
        if (matches(slot.view, f) && visible(slot.view, ctx)) found.push(slot.view);
      }
      return found.sort(byKindThenName);
    });
  }

  async setHealth(
    kind: RegistryKind,
    name: string,
    health: HealthStatus,
    ctx: ExecContext,
    detail?: string,
  ): Promise<RegistryEntry> {
    parseKey(kind, name);
    const h = parseHealth(health);
    return inSpan(ctx, "set_health", { kind, name, health: h }, () => {
      const slot = this.#live().get(keyOf(kind, name));
      if (slot === undefined) throw notFound(kind, name);
      slot.stats.health = h;
      slot.stats.healthDetail = detail ?? null;
      slot.stats.healthAuto = false;
      slot.updatedAt = Date.now();
      return (slot.view = entryView(slot.init, slot.stats, slot.registeredAt, slot.updatedAt));
    });
  }

  async recordInvocation(
    kind: RegistryKind,
    name: string,
    record: InvocationRecord,
    ctx: ExecContext,
  ): Promise<InvocationStats> {
    parseKey(kind, name);
    const r = parseRecord(record);
    return inSpan(ctx, "record", { kind, name, ok: r.ok }, () => {
      const slot = this.#live().get(keyOf(kind, name));
      if (slot === undefined) throw notFound(kind, name);
      const before = slot.stats.health;
      applyInvocation(slot.stats, r, this.#threshold, Date.now());
      if (slot.stats.health !== before) {
        slot.updatedAt = Date.now();
        slot.view = entryView(slot.init, slot.stats, slot.registeredAt, slot.updatedAt);
      }
      return statsView(slot.stats);
    });
  }

  async stats(kind: RegistryKind, name: string, ctx: ExecContext): Promise<InvocationStats | null> {
    parseKey(kind, name);
    return inSpan(ctx, "stats", { kind, name }, () => {
      const slot = this.#live().get(keyOf(kind, name));
      return slot !== undefined && visible(slot.view, ctx) ? statsView(slot.stats) : null;
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#slots.clear();
  }

  #live(): Map<string, Slot> {
    if (this.#closed) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        "InMemoryRegistry is closed; create a new one to keep using it.",
      );
    }
    return this.#slots;
  }
}
