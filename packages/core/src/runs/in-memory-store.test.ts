import { describeRunStoreContract } from "../testing/run-store-contract.js";
import { InMemoryRunStore } from "./in-memory-store.js";

describeRunStoreContract("InMemoryRunStore", async () => ({ store: new InMemoryRunStore() }));
