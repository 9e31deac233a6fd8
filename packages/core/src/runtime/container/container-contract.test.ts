import { describe } from "vitest";
import { describeRuntimeContract } from "../../testing/index.js";
import { ContainerRuntime } from "./container-runtime.js";
import { dockerTestImage } from "./test-env.test-support.js";

const HANDLERS = ["echo", "fail", "decline", "slow", "stream", "delegator", "context", "usage"];
const image = await dockerTestImage("ContainerRuntime contract tests");

/**
 * Registers the contract fixtures: module handlers of the test image, run by the Nerva agent.
 * The runtime's default timeout is the contract's. In per-call mode every call starts a container
 * (a few hundred ms, more when the contract starts 20 at once), which the contract's 0.5 s
 * default cannot cover, so there the handlers that should finish get a per-handler timeout of
 * their own; `slow` keeps the default, so the timeout tests still run against it.
 */
function contractRuntime(mode: "per-call" | "warm", timeoutSeconds: number): ContainerRuntime {
  const runtime = new ContainerRuntime({ timeoutSeconds });
  for (const name of HANDLERS) {
    runtime.register(name, {
      image: image as string,
      module: `/modules/${name}.mjs`,
      mode,
      ...(mode === "per-call" && name !== "slow" ? { timeoutSeconds: 30 } : {}),
      // Warm echo serves the 20 concurrent calls of the contract with a few containers.
      ...(mode === "warm" ? { poolSize: name === "echo" ? 3 : 1 } : {}),
    });
  }
  return runtime;
}

describe.skipIf(image === null)("ContainerRuntime on a real Docker engine", () => {
  describeRuntimeContract(
    "ContainerRuntime (per-call, module handlers)",
    async ({ timeoutSeconds }) => ({
      runtime: contractRuntime("per-call", timeoutSeconds),
    }),
  );

  describeRuntimeContract(
    "ContainerRuntime (warm, module handlers)",
    async ({ timeoutSeconds }) => {
      const runtime = contractRuntime("warm", timeoutSeconds);
      await runtime.start();
      return { runtime };
    },
  );
});
