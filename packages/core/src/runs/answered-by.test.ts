// A pause says who may answer it: resume then needs the answerer's context, checked before the
// run changes, on every store; a graph's input node says it the same way.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { END, GraphHost, defineGraph, fnNode, inputNode } from "../graph/index.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import { storeBackends } from "./store-backends.test-support.js";

const manager = () => ExecContext.create({ userId: "mia", permissions: { roles: ["approver"] } });
const requester = () => ExecContext.create({ userId: "sam" });

describe.each(storeBackends("answered-by"))("answeredBy on %s", (_name, open) => {
  it("refuses an answer without a context or from someone else, and takes one from an approver", async () => {
    const queue = new RunQueue({ store: open(), name: "approvals" });
    const runner = new Runner({
      queue,
      handlers: {
        refund: async (input, ctx) => {
          const ok = await ctx.run!.waitForInput<string>("approve", {
            prompt: `Refund ${input.message}?`,
            answeredBy: { roles: ["approver"], users: ["lee"] },
          });
          return `${ok} ${input.message}`;
        },
      },
    });
    await runner.start();
    try {
      const { id } = await queue.enqueue({
        handler: "refund",
        input: { message: "42" },
        ctx: requester(),
      });
      const paused = await queue.wait(id, { until: ["paused"] });
      expect(paused.pause?.answeredBy).toEqual({ roles: ["approver"], users: ["lee"] });
      await expect(queue.resume(id, "yes")).rejects.toMatchObject({
        code: "PERMISSION_DENIED",
        message: expect.stringMatching(/user lee, role approver: pass the answerer's context/),
      });
      await expect(queue.resume(id, "yes", { ctx: requester() })).rejects.toMatchObject({
        code: "PERMISSION_DENIED",
        message: expect.stringMatching(/user sam is not one of them/),
      });
      expect((await queue.get(id))?.status).toBe("paused");
      await queue.resume(id, "approved", { ctx: manager() });
      expect((await queue.wait(id)).result?.output).toBe("approved 42");
      const events = [];
      for await (const e of queue.events(id, { follow: false })) events.push(e);
      expect(events.find((e) => e.type === "run.paused")?.data.answeredBy).toEqual({
        roles: ["approver"],
        users: ["lee"],
      });
    } finally {
      await runner.stop();
      await queue.store.close();
    }
  });

  it("refuses a user or anonymous session named in exceptUsers / exceptSessions, even with the role", async () => {
    const queue = new RunQueue({ store: open(), name: "except" });
    const runner = new Runner({
      queue,
      handlers: {
        ask: async (input, ctx) =>
          ctx.run!.waitForInput<string>("ok", {
            answeredBy: { roles: ["approver"], exceptUsers: ["mia"], exceptSessions: ["s-anon"] },
          }),
      },
    });
    await runner.start();
    try {
      const { id } = await queue.enqueue({ handler: "ask", input: { message: "" } });
      const paused = await queue.wait(id, { until: ["paused"] });
      expect(paused.pause?.answeredBy?.exceptUsers).toEqual(["mia"]);
      await expect(queue.resume(id, "yes", { ctx: manager() })).rejects.toMatchObject({
        code: "PERMISSION_DENIED",
        message: expect.stringMatching(/user mia, who asked for it/),
      });
      const anon = ExecContext.create({
        sessionId: "s-anon",
        permissions: { roles: ["approver"] },
      });
      await expect(queue.resume(id, "yes", { ctx: anon })).rejects.toMatchObject({
        code: "PERMISSION_DENIED",
      });
      expect((await queue.get(id))?.status).toBe("paused");
      const other = ExecContext.create({ userId: "lee", permissions: { roles: ["approver"] } });
      await queue.resume(id, "yes", { ctx: other });
      expect((await queue.wait(id)).result?.output).toBe("yes");
    } finally {
      await runner.stop();
      await queue.store.close();
    }
  });

  it("refuses an answeredBy that names nobody, with the field", async () => {
    const queue = new RunQueue({ store: open(), name: "bad" });
    const runner = new Runner({
      queue,
      handlers: {
        bad: async (_input, ctx) =>
          ctx.run!.waitForInput("x", { answeredBy: { roles: [] } }).then(() => "never"),
      },
    });
    await runner.start();
    try {
      const { id } = await queue.enqueue({ handler: "bad", input: { message: "" } });
      const done = await queue.wait(id);
      expect(done.status).toBe("failed");
      expect(done.error?.message).toMatch(/Invalid options\.answeredBy: names nobody/);
    } finally {
      await runner.stop();
      await queue.store.close();
    }
  });
});

describe("answeredBy on a graph's input node", () => {
  it("lets only the named user answer through host.resume", async () => {
    const S = z.object({ ok: z.string().optional() });
    type S = z.output<typeof S>;
    const host = new GraphHost({
      graph: defineGraph({
        name: "signoff",
        state: S,
        nodes: {
          start: fnNode<S>(() => ({})),
          ask: inputNode<S>({ prompt: "Sign off?", writes: "ok", answeredBy: { users: ["mia"] } }),
        },
        edges: [
          ["start", "ask"],
          ["ask", END],
        ],
        entry: "start",
      }),
    });
    await host.start();
    try {
      const paused = await host.triggerAndWait("default", {});
      expect(paused.pause?.answeredBy).toEqual({ users: ["mia"] });
      await expect(host.resume(paused.runId, "yes", { ctx: requester() })).rejects.toMatchObject({
        code: "PERMISSION_DENIED",
      });
      await host.resume(paused.runId, "yes", { ctx: manager() });
      expect((await host.wait(paused.runId)).state).toEqual({ ok: "yes" });
    } finally {
      await host.stop();
    }
  });
});
