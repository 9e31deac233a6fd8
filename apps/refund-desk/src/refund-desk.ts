// The refund desk of the agent-graphs issue, as an agent module: `nerva run` takes it as it is;
// src/host.ts builds its GraphHost and src/app.ts serves it over HTTP.
import { z } from "zod";
import { END, agentNode, defineGraph, fnNode, inputNode, type AgentHandler } from "@nerva/core";
import { type PartialAgentResult } from "@nerva/core/context";

const State = z.object({
  orderId: z.string().optional(),
  total: z.number().optional(),
  decision: z.enum(["approved", "declined"]).optional(),
  refund: z.string().optional(),
});
type State = z.output<typeof State>;

/** Stands in for the order database. */
const TOTALS: Record<string, number> = { "42": 129.9, "7": 15 };

export const graph = defineGraph({
  name: "refund_desk",
  state: State,
  nodes: {
    intake: agentNode<State>("intake_agent", {
      input: (s) => ({ message: "refund request", args: { orderId: s.orderId ?? "" } }),
    }),
    lookup: fnNode<State>(async (s, ctx) => {
      await ctx.emit(`Looking up order ${s.orderId}...\n`);
      return { total: TOTALS[s.orderId ?? ""] ?? 0 };
    }),
    review: inputNode<State>({
      prompt: (s) => `Refund ${s.total} for order ${s.orderId}? (approved/declined)`,
      kind: "approval",
      writes: "decision",
      schema: z.enum(["approved", "declined"]),
    }),
    refund: agentNode<State>("refund_agent", {
      input: (s) => ({
        message: "refund",
        args: { orderId: s.orderId ?? "", total: String(s.total) },
      }),
    }),
  },
  edges: [
    ["intake", "lookup"],
    ["lookup", "review"],
    ["review", (s) => (s.decision === "approved" ? "refund" : END), ["refund", END]],
    ["refund", END],
  ],
  entry: "intake",
  output: (s) => s.refund ?? "no refund",
});

export const handlers: Record<string, AgentHandler> = {
  intake_agent: async (input): Promise<PartialAgentResult> =>
    input.args["orderId"]
      ? { output: "order found", data: { orderId: input.args["orderId"] } }
      : { status: "needs_data", output: "Which order?", data: { missing: ["orderId"] } },
  refund_agent: async (input) =>
    `refunded ${input.args["total"]} on order ${input.args["orderId"]}`,
};

export const config = { store: { sqlite: process.env.RUNS_DB ?? "refund-desk.db" } };
