// The refund desk as an agent module for `nerva run` (graph + handlers + config).
import { z } from "zod";
import { END, agentNode, defineGraph, fnNode, inputNode, type AgentHandler } from "@nerva/core";

const State = z.object({
  orderId: z.string().optional(),
  total: z.number().optional(),
  decision: z.enum(["approved", "declined"]).optional(),
  refund: z.string().optional(),
});
type State = z.output<typeof State>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const graph = defineGraph({
  name: "refund_desk",
  state: State,
  nodes: {
    intake: agentNode<State>("intake_agent", {
      input: (s) => ({ message: "intake", args: { orderId: s.orderId ?? "1" } }),
    }),
    lookup: fnNode<State>(async (s, ctx) => {
      await ctx.emit(`Looking up order ${s.orderId}...\n`);
      await sleep(400);
      await ctx.emit("found."); // no newline: the next progress line must start its own
      return { total: 42 };
    }),
    review: inputNode<State>({
      prompt: (s) => `Refund ${s.total} for order ${s.orderId}? (approved/declined)`,
      writes: "decision",
      schema: z.enum(["approved", "declined"]),
    }),
    refund: agentNode<State>("refund_agent", {
      input: (s) => ({ message: "refund", args: { orderId: s.orderId ?? "" } }),
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
  intake_agent: async (input) => ({
    output: "ok",
    data: { orderId: input.args["orderId"] ?? "1" },
  }),
  refund_agent: async (input) => `refunded order ${input.args["orderId"]}`,
};
