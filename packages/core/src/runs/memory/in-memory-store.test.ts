import { describeRunStoreContract } from "../../testing/run-store-contract.js";
import { InMemoryRunStore } from "./in-memory-store.js";

describeRunStoreContract("InMemoryRunStore", async () => ({ store: new InMemoryRunStore() }));

/**
 * A store without the optional `commitStartedStep` (as a user's own store may be): workers write a
 * step's start before running it and its commit after, in two writes.
 */
class TwoWriteStore extends InMemoryRunStore {}
Object.defineProperty(TwoWriteStore.prototype, "commitStartedStep", { value: undefined });

describeRunStoreContract("a store without commitStartedStep", async () => ({
  store: new TwoWriteStore(),
}));
