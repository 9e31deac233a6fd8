import "reflect-metadata";
import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeExampleApp, describeExampleMain } from "@nerva/example-kit/testing";
import { NestFactory } from "@nestjs/core";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { createAppModule } from "./app.module.js";

const appDir = join(dirname(fileURLToPath(import.meta.url)), "..");

for (const platform of ["express", "fastify"] as const) {
  describeExampleApp(`NestJS example app on ${platform}`, {
    start: async (deps) => {
      const app = await NestFactory.create(
        createAppModule(deps),
        platform === "fastify" ? new FastifyAdapter() : new ExpressAdapter(),
        { logger: false },
      );
      await app.listen(0, "127.0.0.1");
      const port = (app.getHttpServer().address() as AddressInfo).port;
      return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
    },
  });
}

describeExampleMain("NestJS example main", {
  appDir,
  // tsx compiles the app's files but not the decorators of workspace sources, so this runs
  // against the built @nerva packages, as a deployed app would.
  nodeArgs: ["--import", "tsx", "src/main.ts"],
  name: "nerva-nestjs-example",
  runs: [
    { PLATFORM: "express" },
    { PLATFORM: "fastify" },
    { PLATFORM: "express", NERVA_TRACE_UI: "1" },
    { PLATFORM: "fastify", NERVA_TRACE_UI: "1" },
  ],
  beforeRun: () => {
    for (const built of [
      "packages/core/dist/esm/index.js",
      "packages/nestjs/dist/esm/index.js",
      "apps/example-kit/dist/index.js",
    ]) {
      const dist = join(appDir, "../..", built);
      if (!existsSync(dist)) throw new Error(`${dist} is missing: run \`pnpm build\` first.`);
    }
  },
});
