import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { agentResult } from "../types/agent.js";
import { AGENT_STATUSES } from "../types/status.js";
import { ChannelResponder } from "./channel-responder.js";
import { clientError } from "./failure-text.js";
import { PassthroughResponder } from "./passthrough-responder.js";
import { stripMarkdown } from "./plain-text.js";

const ctx = () => ExecContext.create({ userId: "u1" });
const ok = (output: string) => agentResult("writer", { output });
const responder = () =>
  new ChannelResponder({
    channels: {
      sms: { format: "plain", maxLength: 160 },
      slack: { format: "markdown", maxLength: 200 },
    },
  });

function stream(r: ChannelResponder, chunks: string[], channel: string, c = ctx()): string {
  let out = "";
  for (const chunk of chunks) out += r.formatChunk(chunk, channel, c);
  return out + r.endStream(channel, c);
}

const FIXED_LINES =
  "Error: the agent failed. Timed out: no answer before the deadline. Could not handle this request: no handler accepted it. Failed";

describe("ChannelResponder.format", () => {
  it("strips markdown for plain and keeps it for markdown", async () => {
    const result = ok("# Flights\n**2** found, see [list](https://x.dev/f)");
    const plain = await responder().format(result, "plain", ctx());
    expect(plain.text).toBe("Flights\n2 found, see list (https://x.dev/f)");
    const md = await responder().format(result, "markdown", ctx());
    expect(md.text).toBe(result.output);
    expect([md.status, md.handler, md.error, md.truncated]).toEqual([
      "success",
      "writer",
      null,
      false,
    ]);
  });

  it("truncates to maxLength with a marker that says how much was cut", async () => {
    const long = `${"word ".repeat(100)}end`;
    const c = ctx();
    const r = await responder().format(ok(long), "sms", c);
    expect(r.text.length).toBeLessThanOrEqual(160);
    expect(r.truncated).toBe(true);
    const omitted = Number(/\[truncated: (\d+) more characters\]$/.exec(r.text)?.[1]);
    const kept = r.text.slice(0, r.text.indexOf(" … [truncated"));
    expect(kept.length + omitted).toBe(long.length);
    expect(long.startsWith(kept)).toBe(true);
    expect(kept.endsWith("word")).toBe(true); // cut between words
    expect(c.events.find((e) => e.name === "responder.truncated")?.attributes).toMatchObject({
      channel: "sms",
      max_length: 160,
    });
  });

  it("closes an open code fence before the marker in markdown", async () => {
    const text = `Here:\n\`\`\`ts\n${"const x = 1;\n".repeat(40)}\`\`\``;
    const r = await responder().format(ok(text), "slack", ctx());
    expect(r.text.length).toBeLessThanOrEqual(200);
    expect(r.text).toMatch(/\n``` … \[truncated: \d+ more characters\]$/);
  });

  it("makes a failure visible, keeps its status, and keeps it visible when truncating", async () => {
    const failed = agentResult("flights", {
      status: "error",
      output: "Partial answer. ".repeat(30),
      error: "upstream returned 502",
    });
    const r = await responder().format(failed, "sms", ctx());
    expect(r.status).toBe("error");
    // The agent's error text is operator text: clients get a fixed line.
    expect(r.error).toBe("the agent failed");
    expect(r.text.length).toBeLessThanOrEqual(160);
    expect(r.text.endsWith("\n\nError: the agent failed.")).toBe(true);
    expect(r.text).toContain("[truncated:");
    // A typed refusal (a client error code in data.code) is shown as written.
    const refused = await responder().format(
      agentResult("refunds", {
        status: "error",
        error: "Only staff may issue refunds.",
        data: { code: "POLICY_DENIED" },
      }),
      "plain",
      ctx(),
    );
    expect(refused).toMatchObject({
      error: "Only staff may issue refunds.",
      text: "Error: Only staff may issue refunds.",
    });

    const silent = await responder().format(
      agentResult("x", { status: "timeout" }),
      "plain",
      ctx(),
    );
    expect(silent.text).toBe("Timed out: no answer before the deadline.");
    const declined = await responder().format(
      agentResult("x", { status: "wrong_handler" }),
      "plain",
      ctx(),
    );
    expect(declined.text).toBe("Could not handle this request: no handler accepted it.");
    const question = await responder().format(
      agentResult("x", { status: "needs_data", output: "Which date?" }),
      "plain",
      ctx(),
    );
    expect(question.text).toBe("Which date?");
    // Output that is only markup is empty once stripped: the failure line must show instead.
    const markupOnly = await responder().format(
      agentResult("x", { status: "needs_credentials", output: "`" }),
      "plain",
      ctx(),
    );
    expect(markupOnly.text).toBe("Credentials are needed to continue.");
  });

  it("shortens an over-long failure line with an ellipsis rather than dropping it", async () => {
    const r = await responder().format(
      agentResult("x", {
        status: "error",
        output: "out",
        error: `Refused: ${"x".repeat(500)}`,
        data: { code: "POLICY_DENIED" },
      }),
      "sms",
      ctx(),
    );
    expect(r.text.length).toBeLessThanOrEqual(160);
    expect(r.text).toMatch(/\n\nError: Refused: x+…$/);
  });

  it("property: never longer than maxLength; truncation is always marked; failures always show", async () => {
    const r = new ChannelResponder();
    await fc.assert(
      fc.asyncProperty(
        fc.string({
          maxLength: 600,
          unit: fc.constantFrom("a", " ", "*", "\n", "`", "#", "é", "🙂", "x"),
        }),
        fc.constantFrom(...AGENT_STATUSES),
        fc.option(fc.string({ maxLength: 300 }), { nil: null }),
        fc.integer({ min: 80, max: 400 }),
        fc.constantFrom("plain" as const, "markdown" as const),
        async (output, status, error, maxLength, format) => {
          const result = agentResult("h", { status, output, error });
          const res = await r.format(result, { format, maxLength }, ctx());
          expect(res.text.length).toBeLessThanOrEqual(maxLength);
          expect(res.status).toBe(status);
          expect(res.error).toBe(clientError(result));
          // Operator text never reaches the formatted answer (typed codes aside: none here).
          const secret = error?.trim() ?? "";
          if (
            secret.length > 3 &&
            !["needs_data", "needs_credentials"].includes(status) &&
            !output.includes(secret) &&
            !FIXED_LINES.includes(secret)
          ) {
            expect(res.text).not.toContain(secret);
          }
          const full = await r.format(result, { format }, ctx());
          if (res.truncated) expect(res.text).toMatch(/\[truncated: \d+ more characters\]|…/);
          else expect(res.text).toBe(full.text);
          if (status === "error" || status === "timeout" || status === "wrong_handler") {
            expect(res.text).toMatch(/(Error|Timed out|Could not handle this request)/);
          }
          if (status !== "success") expect(res.text.trim()).not.toBe("");
        },
      ),
      { numRuns: 400 },
    );
  });

  it("leaves the responder.format span to its caller (the orchestrator opens it)", async () => {
    const c = ctx();
    await responder().format(ok("hi"), "sms", c);
    expect(c.spans).toEqual([]);
  });

  it("rejects an unknown channel or a bad inline spec naming it", async () => {
    const err = await responder()
      .format(ok("x"), "pager", ctx())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
    expect((err as NervaError).message).toContain(
      '"pager" is not configured (known: plain, markdown, sms, slack)',
    );
    expect(() => responder().formatChunk("x", { format: "plain", maxLength: 10 }, ctx())).toThrow(
      /channel\.maxLength/,
    );
  });

  it("rejects invalid options naming the field", () => {
    expect(() => new ChannelResponder({ channels: { sms: { format: "text" as never } } })).toThrow(
      /options\.channels\.sms\.format/,
    );
    expect(() => new ChannelResponder({ truncationMarker: "[cut]" })).toThrow(
      /options\.truncationMarker: must contain \{omitted\}/,
    );
    expect(
      () => new ChannelResponder({ channels: { tiny: { format: "plain", maxLength: 20 } } }),
    ).toThrow(/options\.channels\.tiny\.maxLength/);
  });
});

describe("ChannelResponder streams", () => {
  it("strips markdown across chunk boundaries, identical to format", async () => {
    const text =
      "# Title\nSome **bold** and `code` with [a link](https://x.dev).\n```\nraw *x*\n```\nbye";
    const r = responder();
    const whole = (await r.format(ok(text), "plain", ctx())).text;
    for (let i = 0; i <= text.length; i++) {
      expect(stream(r, [text.slice(0, i), text.slice(i)], "plain")).toBe(whole);
    }
    expect(stream(r, [...text], "plain")).toBe(whole);
  });

  it("property: a stream never exceeds maxLength; short replies are untouched; long ones are marked", async () => {
    const r = new ChannelResponder({ channels: { small: { format: "plain", maxLength: 100 } } });
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.string({ maxLength: 30, unit: fc.constantFrom("a", "b", " ", "*", "\n", "🙂") }),
          {
            maxLength: 12,
          },
        ),
        async (chunks) => {
          const out = stream(r, chunks, "small");
          const full = stripMarkdown(chunks.join(""));
          expect(out.length).toBeLessThanOrEqual(100);
          if (full.length <= 100) expect(out).toBe(full);
          else {
            const marker = " … [truncated: the reply exceeded 100 characters]";
            expect(out.endsWith(marker)).toBe(true);
            expect(full.startsWith(out.slice(0, -marker.length))).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("closes an open fence when a markdown stream is cut", () => {
    const r = responder();
    const chunks = ["Code:\n```ts\n", ...Array.from({ length: 30 }, () => "let a = 1;\n"), "```\n"];
    const out = stream(r, chunks, "slack");
    expect(out.length).toBeLessThanOrEqual(200);
    expect(out).toMatch(/\n``` … \[truncated: the reply exceeded 200 characters\]$/);
  });

  it("keeps separate state per ctx, and endStream resets it", () => {
    const r = responder();
    const a = ctx();
    const b = ctx();
    expect(r.formatChunk("**a", "plain", a)).toBe("a");
    expect(r.formatChunk("# b", "plain", b)).toBe("b");
    expect(r.formatChunk("**", "plain", a)).toBe("");
    expect(r.endStream("plain", a)).toBe("");
    expect(r.endStream("plain", b)).toBe("");
    // A new stream on the same ctx starts at a line start again.
    expect(r.formatChunk("# again", "plain", a)).toBe("again");
  });
});

describe("PassthroughResponder", () => {
  it("passes output and chunks through unchanged", async () => {
    const r = new PassthroughResponder();
    const c = ctx();
    const res = await r.format(ok("**as is**"), "plain", c);
    expect(res).toEqual({
      text: "**as is**",
      status: "success",
      handler: "writer",
      data: {},
      error: null,
      truncated: false,
    });
    expect(r.formatChunk("# x", "plain", c)).toBe("# x");
    await r.format(agentResult("x", { status: "timeout", error: "slow" }), "markdown", c);
    // The orchestrator calls exactly this class without a fork under responder.format: it must
    // keep recording nothing, or what it records would land under the wrong span.
    expect([c.spans, c.events]).toEqual([[], []]);
  });

  it("never drops a failure", async () => {
    const r = new PassthroughResponder();
    const res = await r.format(
      agentResult("x", { status: "error", output: "partial", error: "disk full" }),
      "plain",
      ctx(),
    );
    expect(res).toMatchObject({
      text: "partial\n\nError: the agent failed.",
      status: "error",
      error: "the agent failed",
    });
    const bare = await r.format(agentResult("x", { status: "error" }), "plain", ctx());
    expect(bare.text).toBe("Error: the agent failed.");
    // A subprocess's stderr tail is operator text too; the handler's own data stays.
    const crashed = await r.format(
      agentResult("x", {
        status: "error",
        error: "exit 1",
        data: { stderr: "at /srv/app.py", step: 2 },
      }),
      "plain",
      ctx(),
    );
    expect(crashed.data).toEqual({ step: 2 });
  });
});
