import { ErrorCode, NervaError } from "../../errors.js";

// A 5-field cron (minute hour day-of-month month day-of-week, UTC): numbers, `*`, ranges `a-b`,
// steps `*/n` and `a-b/n`, lists `a,b`. Day of month and day of week follow cron's rule: when
// both are restricted, a day matching either one fires. Core depends only on zod, and this subset
// is all a timer entry point needs.

const FIELDS = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "day of week", min: 0, max: 7 },
] as const;

function bad(expr: string, why: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid cron "${expr}": ${why}. Use 5 fields "minute hour day-of-month month day-of-week" (UTC), e.g. "0 3 * * *".`,
    { issues: [{ path: "trigger.cron", message: why }] },
  );
}

/** A parsed cron expression. */
export interface Cron {
  readonly sets: readonly ReadonlySet<number>[];
  readonly domAny: boolean;
  readonly dowAny: boolean;
}

export function parseCron(expr: string): Cron {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw bad(expr, `${parts.length} fields instead of 5`);
  const sets = parts.map((part, i) => {
    const f = FIELDS[i] as (typeof FIELDS)[number];
    const set = new Set<number>();
    for (const item of part.split(",")) {
      const m = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(item);
      if (m === null)
        throw bad(expr, `the ${f.name} field "${part}" is not a number, range, list or step`);
      const lo = m[1] === "*" ? f.min : Number(m[2]);
      const hi =
        m[1] === "*" ? f.max : m[3] !== undefined ? Number(m[3]) : m[4] !== undefined ? f.max : lo;
      const step = m[4] === undefined ? 1 : Number(m[4]);
      if (lo < f.min || hi > f.max || lo > hi || step < 1) {
        throw bad(expr, `the ${f.name} field "${part}" is outside ${f.min}-${f.max}`);
      }
      for (let v = lo; v <= hi; v += step) set.add(i === 4 && v === 7 ? 0 : v);
    }
    return set;
  });
  return { sets, domAny: parts[2] === "*", dowAny: parts[4] === "*" };
}

function matches(c: Cron, d: Date): boolean {
  const [min, hour, dom, month, dow] = c.sets as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  if (
    !min.has(d.getUTCMinutes()) ||
    !hour.has(d.getUTCHours()) ||
    !month.has(d.getUTCMonth() + 1)
  ) {
    return false;
  }
  const byDom = dom.has(d.getUTCDate());
  const byDow = dow.has(d.getUTCDay());
  if (c.domAny && c.dowAny) return true;
  if (c.domAny) return byDow;
  if (c.dowAny) return byDom;
  return byDom || byDow;
}

/** The first minute strictly after `afterMs` the cron names (epoch ms), within ~5 years. */
export function nextCronSlot(c: Cron, afterMs: number): number {
  let t = Math.floor(afterMs / 60_000) * 60_000 + 60_000;
  const limit = t + 5 * 366 * 24 * 3_600_000;
  while (t < limit) {
    const d = new Date(t);
    if (!c.sets[3]?.has(d.getUTCMonth() + 1)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      continue;
    }
    if (matches(c, d)) return t;
    if (!c.sets[1]?.has(d.getUTCHours())) {
      t = Math.floor(t / 3_600_000) * 3_600_000 + 3_600_000;
      continue;
    }
    t += 60_000;
  }
  throw bad("(schedule)", "it names no time in the next 5 years");
}

/** The first slot strictly after `afterMs` of a timer: cron, or multiples of the interval. */
export function nextSlot(
  timer: { cron?: Cron | undefined; intervalMs?: number | undefined },
  afterMs: number,
): number {
  if (timer.cron !== undefined) return nextCronSlot(timer.cron, afterMs);
  const every = timer.intervalMs as number;
  return Math.floor(afterMs / every) * every + every;
}
