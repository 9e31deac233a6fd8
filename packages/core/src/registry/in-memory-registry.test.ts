import { InMemoryRegistry } from "./in-memory-registry.js";
import { describeRegistryContract } from "../testing/registry-contract.js";

describeRegistryContract("InMemoryRegistry", async (options) => ({
  registry: new InMemoryRegistry(options),
}));
