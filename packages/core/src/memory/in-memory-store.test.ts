import { InMemoryMemoryStore } from "./in-memory-store.js";
import { describeMemoryContract } from "../testing/memory-contract.js";

describeMemoryContract("InMemoryMemoryStore", async () => ({ store: new InMemoryMemoryStore() }));
