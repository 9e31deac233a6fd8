import { ErrorCode, NervaError } from "../errors.js";
import type { RunListQuery } from "./store.js";
import type { RunRecord } from "./types.js";

/** Where a page of `list` ended: the creation time and id of its last run. */
export interface ListPosition {
  readonly createdAt: number;
  readonly id: string;
}

/** An opaque cursor for the page after `run`. */
export function encodeCursor(run: Pick<RunRecord, "createdAt" | "id">): string {
  return Buffer.from(JSON.stringify([run.createdAt, run.id])).toString("base64url");
}

/** Reads a cursor made by {@link encodeCursor}; INVALID_INPUT naming `query.cursor` otherwise. */
export function decodeCursor(cursor: string | null): ListPosition | null {
  if (cursor === null) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "number" &&
      typeof value[1] === "string"
    ) {
      return { createdAt: value[0], id: value[1] };
    }
  } catch {
    // Falls through to the error below: a cursor is only ever what list() returned.
  }
  throw new NervaError(
    ErrorCode.INVALID_INPUT,
    "Invalid query.cursor: not a cursor returned by list(). Pass the nextCursor of the previous page, or omit it.",
    { issues: [{ path: "query.cursor", message: "unknown cursor" }] },
  );
}

/** Newest first (creation time, then id, both descending): the order of `list`. */
export function newerFirst(a: RunRecord, b: RunRecord): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** Whether `run` belongs on a page of `query` that starts after `after`. */
export function matchesQuery(
  run: RunRecord,
  query: RunListQuery,
  after: ListPosition | null,
): boolean {
  if (run.queue !== query.queue) return false;
  if (query.status !== undefined && run.status !== query.status) return false;
  if (query.handler !== undefined && !run.handlers.includes(query.handler)) return false;
  if (query.userId !== undefined && run.userId !== query.userId) return false;
  if (after !== null) {
    if (run.createdAt > after.createdAt) return false;
    if (run.createdAt === after.createdAt && run.id >= after.id) return false;
  }
  return true;
}
