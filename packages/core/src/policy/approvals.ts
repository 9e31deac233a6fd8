import type { Approval, ApprovalStatus, ApprovalStore } from "./types.js";

/**
 * Approvals kept in this process's heap (lost on restart; implement {@link ApprovalStore} over
 * your database to keep them). Every operation is synchronous inside, so `claim` is atomic.
 *
 * @example
 * const engine = new DeclarativePolicyEngine(doc, { approvals: new InMemoryApprovalStore() });
 */
export class InMemoryApprovalStore implements ApprovalStore {
  readonly #byId = new Map<string, Approval>();

  async create(approval: Approval): Promise<void> {
    // Used and expired approvals are dropped as new ones arrive, so the map stays bounded.
    if (this.#byId.size >= 1024) {
      for (const [id, a] of this.#byId) {
        if (a.consumed || a.expiresAt <= approval.createdAt) this.#byId.delete(id);
      }
    }
    this.#byId.set(approval.id, Object.freeze({ ...approval }));
  }

  async get(id: string): Promise<Approval | null> {
    return this.#byId.get(id) ?? null;
  }

  async findOpen(fingerprint: string, now: number): Promise<Approval | null> {
    let found: Approval | null = null;
    for (const a of this.#byId.values()) {
      if (a.fingerprint !== fingerprint || a.consumed || a.expiresAt <= now) continue;
      if (found === null || a.createdAt >= found.createdAt) found = a;
    }
    return found;
  }

  async decide(
    id: string,
    status: "approved" | "denied",
    by: string | null,
    note: string | null,
    now: number,
  ): Promise<Approval | null> {
    const a = this.#byId.get(id);
    if (a === undefined || a.status !== "pending" || a.expiresAt <= now) return null;
    const decided = Object.freeze({ ...a, status, decidedBy: by, note, decidedAt: now });
    this.#byId.set(id, decided);
    return decided;
  }

  async claim(id: string): Promise<boolean> {
    const a = this.#byId.get(id);
    if (a === undefined || a.consumed || a.status === "pending") return false;
    this.#byId.set(id, Object.freeze({ ...a, consumed: true }));
    return true;
  }

  async list(filter: { status?: ApprovalStatus; userId?: string } = {}): Promise<Approval[]> {
    return [...this.#byId.values()].filter(
      (a) =>
        (filter.status === undefined || a.status === filter.status) &&
        (filter.userId === undefined || a.userId === filter.userId),
    );
  }
}
