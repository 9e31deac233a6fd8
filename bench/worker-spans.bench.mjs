// What spans from workers cost (issue 13 §3), against the built package:
// 1. end to end: a warm-pool Node handler that ends 10 spans (each sent as a `span` frame and
//    adopted by the host) vs the same handler ending none, calls alternating: the added time per
//    span;
// 2. the host's side alone: WorkerSpans adopting 1,000 reported spans (validated frames, nested
//    two deep, children first) vs the same 1,000 spans started and ended locally.
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/run.mjs worker-spans
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { ExecContext } from "@nerva/core";
import { WorkerSpanSchema, WorkerSpans } from "@nerva/core/protocol";
import { SubprocessRuntime } from "@nerva/core/subprocess";

const CALLS = Number(process.env.CALLS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 200);
const SPANS = 10;
const WARMUP = 200;

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const median = (xs) => pct(xs, 50);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const sink = { onSpanEnd() {} };

const none = "async () => 'ok'";
const ten = `async (input, ctx) => { for (let i = 0; i < ${SPANS}; i++) ctx.startSpan("step", { i }).end(); return "ok"; }`;
const dir = mkdtempSync(join(tmpdir(), "nerva-bench-worker-spans-"));
writeFileSync(join(dir, "none.mjs"), `export default ${none};\n`);
writeFileSync(join(dir, "ten.mjs"), `export default ${ten};\n`);
const subprocess = new SubprocessRuntime({
  handlerDir: dir,
  pool: { min: 1, max: 1 },
  maxInvocationsPerWorker: 1_000_000,
});

async function time(runtime, name) {
  const ctx = ExecContext.create({ userId: "bench", traceSink: sink });
  const t0 = process.hrtime.bigint();
  const result = await runtime.invoke(name, { message: "hi" }, ctx);
  const elapsed = ms(t0);
  if (result.status !== "success") throw new Error(JSON.stringify(result));
  if (name === "ten" && ctx.spans.length !== SPANS + 1) throw new Error("spans did not come back");
  ctx.dispose();
  return elapsed;
}

/** 1,000 reported spans: 250 trees of a parent and three children, children sent first. */
function reported(invId) {
  const out = [];
  const now = Date.now() / 1000;
  for (let t = 0; t < 250; t++) {
    const parent = (t + 1).toString(16).padStart(16, "a");
    for (let c = 0; c < 3; c++) {
      out.push({
        span_id: `${(t + 1).toString(16).padStart(12, "b")}000${c + 1}`,
        parent_id: parent,
        name: "child",
        started_at: now,
        ended_at: now,
        attributes: { c },
      });
    }
    out.push({
      span_id: parent,
      parent_id: invId,
      name: "parent",
      started_at: now,
      ended_at: now,
      attributes: { t },
    });
  }
  return out;
}

function hostSide() {
  const adopt = [];
  const local = [];
  for (let r = 0; r < ROUNDS; r++) {
    {
      const ctx = ExecContext.create({ traceSink: sink });
      const inv = ctx.startSpan("runtime.invoke");
      // As the decoder hands them over: parsed from JSON text, then validated.
      const frames = JSON.parse(JSON.stringify(reported(inv.id))).map((s) =>
        WorkerSpanSchema.parse(s),
      );
      const t0 = process.hrtime.bigint();
      const spans = new WorkerSpans(ctx.fork({ span: inv }), "h");
      for (const f of frames) spans.add(f);
      spans.finish();
      adopt.push(ms(t0));
      if (ctx.spans.length !== 1001) throw new Error("not all adopted");
    }
    {
      const ctx = ExecContext.create({ traceSink: sink });
      const inv = ctx.startSpan("runtime.invoke");
      const t0 = process.hrtime.bigint();
      const scoped = ctx.fork({ span: inv });
      for (let t = 0; t < 250; t++) {
        const parent = scoped.startSpan("parent", { t });
        const under = scoped.fork({ span: parent });
        for (let c = 0; c < 3; c++) under.startSpan("child", { c }).end();
        parent.end();
      }
      local.push(ms(t0));
    }
  }
  return { adopt, local };
}

try {
  await subprocess.warmUp();
  for (let i = 0; i < WARMUP; i++) {
    await time(subprocess, "none");
    await time(subprocess, "ten");
  }
  const w0 = [];
  const w10 = [];
  for (let i = 0; i < CALLS; i++) {
    w0.push(await time(subprocess, "none"));
    w10.push(await time(subprocess, "ten"));
  }
  const { adopt, local } = hostSide();
  const perSpanUs = (a, b) => +(((median(a) - median(b)) / SPANS) * 1000).toFixed(2);
  const per1000Us = (xs) => +(median(xs) * 1000).toFixed(1);
  console.log(
    JSON.stringify({
      bench: "worker-spans",
      node: process.version,
      cpus: cpus().length,
      warm_pool_10_spans_vs_none: {
        calls: CALLS,
        none_median_ms: +median(w0).toFixed(4),
        ten_spans_median_ms: +median(w10).toFixed(4),
        ratio_median: +(median(w10) / median(w0)).toFixed(3),
        added_per_span_us: perSpanUs(w10, w0),
      },
      host_adopts_1000_vs_local_1000: {
        rounds: ROUNDS,
        adopt_median_us: per1000Us(adopt),
        local_median_us: per1000Us(local),
        ratio_median: +(median(adopt) / median(local)).toFixed(2),
        adopt_per_span_us: +median(adopt).toFixed(3),
      },
    }),
  );
} finally {
  await subprocess.close();
  rmSync(dir, { recursive: true, force: true });
}
