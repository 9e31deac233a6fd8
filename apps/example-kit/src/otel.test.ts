// With OTEL_EXPORTER_OTLP_ENDPOINT set, each example app exports its traces over OTLP/HTTP and
// flushes the last ones when it stops: run as real processes against a receiver on 127.0.0.1.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const apps = join(dirname(fileURLToPath(import.meta.url)), "../..");
const bodies: string[] = [];
const receiver = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c.toString()));
  req.on("end", () => {
    if (req.url === "/v1/traces") bodies.push(body);
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
let endpoint = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

const cases = [
  [
    "express-app",
    ["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"],
    "nerva-express-example",
  ],
  [
    "fastify-app",
    ["--conditions=@nerva/source", "--import", "tsx", "src/main.ts"],
    "nerva-fastify-example",
  ],
  // Nest's decorators need the built packages (see the NestJS app's own main test).
  ["nestjs-app", ["--import", "tsx", "src/main.ts"], "nerva-nestjs-example"],
] as const;

describe.each(cases)("%s with OTEL_EXPORTER_OTLP_ENDPOINT", (dir, nodeArgs, service) => {
  it("exports the request's trace and flushes it on SIGTERM", { timeout: 60_000 }, async () => {
    bodies.length = 0;
    const child = spawn(process.execPath, [...nodeArgs], {
      cwd: join(apps, dir),
      env: {
        ...process.env,
        PORT: "0",
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const match = /listening on (http:\/\/\S+)/.exec(out);
          if (match?.[1] !== undefined) resolve(match[1]);
        });
        child.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}${stderr}`)));
      });
      const json = { "content-type": "application/json" };
      const token = (await (
        await fetch(`${url}/token`, { method: "POST", headers: json, body: '{"user":"alice"}' })
      ).json()) as { token: string };
      const chat = await fetch(`${url}/chat`, {
        method: "POST",
        headers: { ...json, authorization: `Bearer ${token.token}` },
        body: JSON.stringify({ message: "Find me a flight to Lisbon" }),
      });
      expect(chat.status).toBe(200);
    } finally {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const [code] = (await exited) as [number | null];
      expect(code, stderr).toBe(0);
    }
    const all = bodies.join("\n");
    expect(all).toContain('"invoke_workflow nerva"');
    expect(all).toContain(`"stringValue":"${service}"`);
    expect(stderr).not.toContain("[nerva/otel]");
  });
});
