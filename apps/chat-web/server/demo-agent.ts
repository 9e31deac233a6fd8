// The page's demo agent: answers word by word, slowly (as a model streams), and on a message
// about a refund calls the `refund` tool, which the demo's policy gates with an approval its
// requester may give (a customer approving their own refund).
import { setTimeout as sleep } from "node:timers/promises";
import {
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  defineTool,
  type RunQueue,
} from "@nerva/core";
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import { z } from "zod";

/** The demo agent's name. */
export const CHAT_WEB_AGENT = "chat_web_agent";

/**
 * The words of the demo's answer to `message` (not about a refund), in the order it streams them.
 *
 * @example
 * answerWords("hi").join(""); // "You said: hi. Once upon a time…"
 */
export function answerWords(message: string): string[] {
  const story =
    "Once upon a time a request became a durable run, and its answer streamed to the page word by word until the end.";
  return [`You said: ${message}.`, ...story.split(" ").map((w) => ` ${w}`)];
}

/** The demo's answer once the refund tool answered: its words. */
export function refundWords(status: string): string[] {
  return status === "success"
    ? ["Refunded", " 42.00", " to", " order", " o-7."]
    : ["No", " refund", ` (${status}).`];
}

/**
 * The demo agent on an in-process runtime: an orchestrator with the `refund` tool and a policy
 * that gates it with an approval any `customer` may give for their own request
 * (`allowSelfApproval`), kept on `approvals`. `tokenDelayMs` between words.
 *
 * @example
 * const runtime = chatWebRuntime({ approvals, tokenDelayMs: 50 });
 * new Runner({ queue, runtime });
 */
export function chatWebRuntime(options: {
  readonly approvals: RunQueue;
  readonly tokenDelayMs: number;
  readonly onRefund?: () => void;
}): InProcessRuntime {
  const policy = new DeclarativePolicyEngine(
    {
      version: 1,
      approvals: [
        {
          name: "refunds",
          kind: "tool",
          names: ["refund"],
          approverRoles: ["customer"],
          allowSelfApproval: true,
        },
      ],
    },
    { approvals: options.approvals },
  );
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "refund",
      description: "Refunds an order",
      parameters: z.object({ orderId: z.string(), amount: z.number() }),
      run: async ({ orderId, amount }) => {
        options.onRefund?.();
        return { orderId, refunded: amount };
      },
    }),
  );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({ tools, runtime, policy });
  const delay = options.tokenDelayMs;
  runtime.register(
    CHAT_WEB_AGENT,
    orchestrator.handler(async function* (input, ctx, kit) {
      let words: string[];
      if (/refund/i.test(input.message)) {
        const r = await kit.tools.call("refund", { orderId: "o-7", amount: 42 });
        words = refundWords(r.status);
      } else {
        words = answerWords(input.message);
      }
      for (const word of words) {
        await sleep(delay, undefined, { signal: ctx.signal });
        yield word;
      }
    }),
  );
  return runtime;
}
