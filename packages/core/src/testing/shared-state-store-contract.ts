import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { SharedState } from "../graph/execute/shared-state.js";
import type { SharedStateStore } from "../graph/execute/shared-state-store.js";
import type { SharedStateView } from "../graph/define/types.js";
import type { JsonValue } from "../types/agent.js";

/**
 * Builds a fresh, empty store for one test. `another` returns a second handle on the same state,
 * as another replica would open it (a store in one process returns itself); `cleanup` runs after
 * the stores are closed (e.g. deletes the test's keys).
 */
export type SharedStateStoreContractSetup = () => Promise<{
  store: SharedStateStore;
  another: () => Promise<SharedStateStore>;
  cleanup?: () => Promise<void>;
}>;

/** For a store whose locks outlive their holder's process (e.g. in Redis). */
export interface SharedStateStoreContractOptions {
  /**
   * Ends `store` the way its process's death would (no release, no renewal), e.g. by
   * disconnecting its client; `lockSeconds` is how long its locks outlive it.
   */
  readonly holderDeath?: {
    readonly lockSeconds: number;
    readonly die: (store: SharedStateStore) => void;
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One call on a key of shared state: a write of `value`, or an update adding `add`. */
type Op = { kind: "set"; value: number } | { kind: "update"; add: number };

/**
 * What each serial order of `ops` (every permutation) gives, starting from `initial`: the
 * values the updates return (by index in `ops`) and the final value.
 */
function serialOutcomes(initial: number, ops: readonly Op[]): string[] {
  const outcomes = new Set<string>();
  const permute = (done: number[], rest: number[]) => {
    if (rest.length === 0) {
      let value = initial;
      const returned: (number | null)[] = ops.map(() => null);
      for (const i of done) {
        const op = ops[i] as Op;
        value = op.kind === "set" ? op.value : value + op.add;
        if (op.kind === "update") returned[i] = value;
      }
      outcomes.add(JSON.stringify({ returned, final: value }));
      return;
    }
    for (const i of rest)
      permute(
        [...done, i],
        rest.filter((j) => j !== i),
      );
  };
  permute([], [...ops.keys()]);
  return [...outcomes];
}

async function refusal(p: Promise<unknown>): Promise<NervaError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NervaError);
  return err as NervaError;
}

/**
 * The behaviour every {@link SharedStateStore} must show: round trips, copies in and out, bad
 * keys and values refused with INVALID_INPUT naming the key, writes seen at once by another
 * handle, `update`s of one key from several handles (replicas) that run one at a time and
 * lose nothing even when `fn` awaits, and `synchronized` SharedState sets and updates from two
 * hosts that end as some serial order of them would; with `holderDeath`, a holder that dies
 * blocks nobody past its lock's expiry.
 *
 * @example
 * describeSharedStateStoreContract("InMemorySharedStateStore", async () => {
 *   const store = new InMemorySharedStateStore();
 *   return { store, another: async () => store };
 * });
 */
export function describeSharedStateStoreContract(
  label: string,
  setup: SharedStateStoreContractSetup,
  options: SharedStateStoreContractOptions = {},
): void {
  describe(`shared state store contract: ${label}`, () => {
    const open: SharedStateStore[] = [];
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
      for (const c of cleanups.splice(0)) await c();
    });
    const make = async () => {
      const built = await setup();
      open.push(built.store);
      if (built.cleanup !== undefined) cleanups.push(built.cleanup);
      const another = async () => {
        const s = await built.another();
        if (s !== built.store) open.push(s);
        return s;
      };
      return { store: built.store, another };
    };

    it("round-trips values per namespace, and seeds only what is absent", async () => {
      const { store, another } = await make();
      expect(await store.get("g", "count")).toBeUndefined();
      await store.seed("g", { count: 0, tags: ["a"] });
      await store.set("g", "count", 5);
      // A second replica seeding again overwrites nothing, and adds what is new.
      await (await another()).seed("g", { count: 0, tags: [], fresh: { ok: true } });
      expect(await store.snapshot("g")).toEqual({ count: 5, tags: ["a"], fresh: { ok: true } });
      expect(await store.update("g", "count", (n) => (n as number) + 1)).toBe(6);
      expect(await store.update("g", "absent", (v) => (v === undefined ? "new" : "seen"))).toBe(
        "new",
      );
      await store.set("g", "nothing", null);
      expect(await store.get("g", "nothing")).toBeNull();
      // Namespaces are apart, whatever their names and keys.
      expect(await store.get("g2", "count")).toBeUndefined();
      await store.set("g:count", "x", 1);
      await store.set("g", "count:x", 2);
      expect(await store.snapshot("g:count")).toEqual({ x: 1 });
      expect(await store.snapshot("missing")).toEqual({});
    });

    it("hands values in and out as copies", async () => {
      const { store } = await make();
      const mine = { items: [1, 2], nested: { n: 1 } };
      await store.set("g", "obj", mine);
      mine.items.push(3);
      mine.nested.n = 99;
      const out = (await store.get("g", "obj")) as { items: number[] };
      expect(out).toEqual({ items: [1, 2], nested: { n: 1 } });
      out.items.push(4);
      const written = (await store.update("g", "obj", (cur) => {
        (cur as { items: number[] }).items.push(5);
        return cur as JsonValue;
      })) as { items: number[] };
      expect(written.items).toEqual([1, 2, 5]);
      written.items.push(6);
      expect(await store.get("g", "obj")).toEqual({ items: [1, 2, 5], nested: { n: 1 } });
    });

    it("refuses bad keys and values with INVALID_INPUT naming the key, writing nothing", async () => {
      const { store } = await make();
      await store.set("g", "kept", 1);
      for (const key of ["", 7 as unknown as string]) {
        const err = await refusal(store.set("g", key, 1));
        expect(err.code).toBe(ErrorCode.INVALID_INPUT);
        expect(err.message).toMatch(/key/);
      }
      expect((await refusal(store.get("", "k"))).code).toBe(ErrorCode.INVALID_INPUT);
      const cyclic: Record<string, unknown> = {};
      cyclic["self"] = cyclic;
      const bad = [() => 1, new Date(0), Number.NaN, { deep: undefined }, cyclic, 10n];
      for (const value of bad) {
        const err = await refusal(store.set("g", "kept", value as never));
        expect(err.code).toBe(ErrorCode.INVALID_INPUT);
        expect(err.message).toContain('"kept"');
      }
      const seeded = await refusal(store.seed("g", { other: 2, kept: (() => 1) as never }));
      expect(seeded.message).toContain('"kept"');
      const updated = await refusal(store.update("g", "kept", () => new Map() as never));
      expect(updated.code).toBe(ErrorCode.INVALID_INPUT);
      expect(updated.message).toContain('"kept"');
      expect(await store.snapshot("g")).toEqual({ kept: 1 });
      // The refused update released the key.
      expect(await store.update("g", "kept", (n) => (n as number) + 1)).toBe(2);
    });

    it("shows a write to every handle at once", async () => {
      const { store, another } = await make();
      const other = await another();
      await store.set("g", "flag", "on");
      expect(await other.get("g", "flag")).toBe("on");
      await other.update("g", "flag", () => "off");
      expect(await store.get("g", "flag")).toBe("off");
    });

    it("runs updates of one key one at a time across handles: none is lost when fn awaits", async () => {
      const { store, another } = await make();
      const handles = [store, await another(), await another()];
      await store.seed("g", { count: 0 });
      let inside = 0;
      let most = 0;
      const bump = (h: SharedStateStore) =>
        h.update("g", "count", async (n) => {
          most = Math.max(most, ++inside);
          await sleep(2); // a read-modify-write that yields in the middle
          inside -= 1;
          return (n as number) + 1;
        });
      const written = await Promise.all(
        Array.from({ length: 45 }, (_, i) => bump(handles[i % 3] as SharedStateStore)),
      );
      expect(await store.get("g", "count")).toBe(45);
      expect([...written].sort((a, b) => (a as number) - (b as number))).toEqual(
        Array.from({ length: 45 }, (_, i) => i + 1),
      );
      expect(most).toBe(1);
      // Other keys are not held up by one key's lock.
      await Promise.all([bump(store), store.update("g", "other", () => 1)]);
      expect(await store.get("g", "other")).toBe(1);
    });

    it("orders synchronized sets with updates of the key across hosts: the result is some serial order", async () => {
      const { store, another } = await make();
      // Two hosts of one graph, each with its own handle on the store (two replicas).
      const hosts = [store, await another()].map(
        (s) => new SharedState({ isolation: "synchronized", initial: { n: 0 }, store: s }, "g"),
      );
      const [a, b] = hosts.map((h) => h.forExecution()) as [SharedStateView, SharedStateView];
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      // Op 0 holds the key: it has read the value and awaits before writing.
      const ops: Op[] = [
        { kind: "update", add: 1 },
        { kind: "set", value: 100 },
        { kind: "update", add: 10 },
        { kind: "set", value: 200 },
      ];
      const first = a.update<number>("n", async (n) => {
        entered();
        await gate;
        return (n as number) + 1;
      });
      await inside;
      // While it holds the key, sets and another update arrive from both hosts.
      const rest = [
        b.set("n", 100),
        b.update<number>("n", (n) => (n as number) + 10),
        a.set("n", 200),
      ];
      const settled = Promise.allSettled(rest);
      await Promise.race([settled, sleep(100)]);
      release();
      const results = await Promise.all([first, ...rest]);
      const outcome = {
        returned: ops.map((op, i) => (op.kind === "update" ? (results[i] as number) : null)),
        final: await b.get<number>("n"),
      };
      // A set written while op 0 held the key would be lost under op 0's write.
      expect(serialOutcomes(0, ops)).toContain(JSON.stringify(outcome));
      expect(await hosts[0]?.snapshot()).toEqual({ n: outcome.final });
    });

    it("writes nothing when fn throws, hands its error back and releases the key", async () => {
      const { store, another } = await make();
      await store.set("g", "n", 1);
      const boom = new Error("boom");
      await expect(
        store.update("g", "n", () => {
          throw boom;
        }),
      ).rejects.toBe(boom);
      const started = Date.now();
      expect(await (await another()).update("g", "n", (n) => (n as number) + 1)).toBe(2);
      expect(Date.now() - started).toBeLessThan(1000);
    });

    const death = options.holderDeath;
    if (death !== undefined) {
      it("does not let a holder that died block others past its lock's expiry", async () => {
        const { store, another } = await make();
        const doomed = await another();
        await store.set("g", "n", 1);
        let entered!: () => void;
        const inside = new Promise<void>((r) => (entered = r));
        let finish!: (v: JsonValue) => void;
        // The holder's process dies while its fn holds the key.
        const held = doomed.update("g", "n", async () => {
          entered();
          return new Promise<JsonValue>((r) => (finish = r));
        });
        const late = held.then(
          () => "written",
          () => "refused",
        );
        await inside;
        death.die(doomed);
        const started = Date.now();
        expect(await store.update("g", "n", (n) => (n as number) + 1)).toBe(2);
        const waitedMs = Date.now() - started;
        // It waited for the lock (renewed until the death), and not much past its expiry.
        expect(waitedMs).toBeGreaterThan(death.lockSeconds * 1000 * 0.5);
        expect(waitedMs).toBeLessThan(death.lockSeconds * 1000 + 1500);
        // What the dead holder's fn returns afterwards is never written.
        finish(100);
        expect(await late).toBe("refused");
        expect(await store.get("g", "n")).toBe(2);
      });
    }
  });
}
