import { InMemoryMemoryStore } from "./in-memory-store.js";
import { describeMemoryContract } from "./memory-contract.js";

describeMemoryContract("InMemoryMemoryStore", async () => ({ store: new InMemoryMemoryStore() }));
