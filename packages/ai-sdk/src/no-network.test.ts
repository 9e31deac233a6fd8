import "./no-network.test-support.js";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { isLoopback, takeViolations } from "./no-network.test-support.js";

describe("the test guard against network access", () => {
  it("knows loopback from the rest", () => {
    for (const host of [
      "127.0.0.1",
      "127.8.9.10",
      "::1",
      "localhost",
      "::ffff:127.0.0.1",
      undefined,
    ]) {
      expect(isLoopback(host), String(host)).toBe(true);
    }
    for (const host of [
      "10.0.0.1",
      "192.0.2.1",
      "api.openai.com",
      "::ffff:10.0.0.1",
      "2001:db8::1",
    ]) {
      expect(isLoopback(host), host).toBe(false);
    }
  });

  it("fails a connection to a non-loopback address before it leaves, and records it", async () => {
    const error = await new Promise<Error>((resolve) => {
      const socket = net.connect({ host: "192.0.2.1", port: 443 });
      socket.once("error", resolve);
    });
    expect(error.message).toMatch(/not allowed in tests/);
    const fetched = await fetch("http://192.0.2.1:81/").catch((e: unknown) => e);
    expect(fetched).toBeInstanceOf(Error);
    expect(takeViolations()).toEqual(["192.0.2.1:443", "192.0.2.1:81"]);
  });

  it("lets loopback connections through", async () => {
    const server = net.createServer((s) => s.end("hi"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as net.AddressInfo;
    const data = await new Promise<string>((resolve, reject) => {
      const socket = net.connect({ host: "127.0.0.1", port });
      socket.once("data", (d) => resolve(String(d)));
      socket.once("error", reject);
    });
    expect(data).toBe("hi");
    await new Promise((r) => server.close(r));
  });
});
