// `pnpm trace-ui` (scripts/trace-ui.mjs, after the build): the Express example with its trace
// viewer on, fed with sample requests, printing the viewer's address; stopped by SIGTERM.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

describe("pnpm trace-ui", () => {
  it(
    "runs the Express example with the viewer on and shows the sample requests",
    { timeout: 60_000 },
    async () => {
      const main = join(root, "apps/express-app/dist/main.js");
      if (!existsSync(main)) throw new Error(`${main} is missing: run \`pnpm build\` first.`);
      const child = spawn(process.execPath, ["scripts/trace-ui.mjs"], {
        cwd: root,
        env: { ...process.env, PORT: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      try {
        let out = "";
        const viewer = await new Promise<string>((resolve, reject) => {
          child.stdout.on("data", (d: Buffer) => {
            out += d.toString();
            const found = /Trace viewer: (http:\/\/127\.0\.0\.1:\d+\/_nerva\/traces)/.exec(out);
            if (found?.[1] !== undefined) resolve(found[1]);
          });
          child.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}`)));
        });
        expect(out).toContain('200 POST /chat "Plan a trip to Rome"');
        expect(out).toContain('502 POST /chat "Find me a flight to Atlantis"');
        expect((await fetch(viewer)).status).toBe(200);
        const { traces } = (await (await fetch(`${viewer}/api/traces`)).json()) as {
          traces: { status: string; userId: string }[];
        };
        expect(traces.map((t) => [t.status, t.userId])).toEqual([
          ["ok", "bob"],
          ["error", "bob"],
          ["ok", "alice"],
          ["ok", "alice"],
        ]);
      } finally {
        if (child.exitCode === null) {
          const exited = once(child, "exit");
          child.kill("SIGTERM");
          const [code] = (await exited) as [number | null];
          expect(code).toBe(0);
        }
      }
    },
  );
});
