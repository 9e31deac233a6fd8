/**
 * Reducers for state keys that several nodes add to instead of replacing (give them in
 * `defineGraph({ reducers })`).
 *
 * @example
 * defineGraph({ ..., reducers: { log: Reducers.append, totals: Reducers.merge, count: Reducers.sum } });
 */
export const Reducers = Object.freeze({
  /** Lists: the update (a list or one item) is appended. */
  append: (current: unknown, update: unknown): unknown[] => [
    ...(Array.isArray(current) ? current : current === undefined ? [] : [current]),
    ...(Array.isArray(update) ? update : [update]),
  ],
  /** Objects: a shallow merge, the update's keys winning. */
  merge: (current: unknown, update: unknown): Record<string, unknown> => ({
    ...(typeof current === "object" && current !== null ? current : {}),
    ...(typeof update === "object" && update !== null ? update : {}),
  }),
  /** Numbers: added up. */
  sum: (current: unknown, update: unknown): number =>
    (typeof current === "number" ? current : 0) + Number(update),
});
