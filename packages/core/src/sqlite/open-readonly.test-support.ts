// Child process of open.test.ts: opens one SQLite store at a path (argv: store name, path) as the
// user it was started as, and prints how that ended and which of the path's files it still holds.
import { readdirSync, readlinkSync } from "node:fs";
import { SqliteMemoryStore } from "../memory/sqlite-memory-store.js";
import { SqliteRegistry } from "../registry/sqlite-registry.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";

const [name, path] = process.argv.slice(2) as [string, string];
const open = {
  SqliteRunStore: () => new SqliteRunStore({ path }),
  SqliteMemoryStore: () => new SqliteMemoryStore({ path }),
  SqliteRegistry: () => new SqliteRegistry({ path }),
}[name]!;

function held(): string[] {
  return readdirSync("/proc/self/fd")
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return "";
      }
    })
    .filter((p) => p.startsWith(path));
}

let answer: Record<string, unknown>;
try {
  await open().close();
  answer = { name: "opened" };
} catch (err) {
  const e = err as { name?: string; code?: string; message?: string };
  answer = { name: e.constructor?.name ?? e.name, code: e.code, message: e.message };
}
process.stdout.write(JSON.stringify({ ...answer, openAfter: held() }));
