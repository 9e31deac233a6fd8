// The refund desk's GraphHost on a SQLite file: the graph, its handlers on an InProcessRuntime,
// one queue. What `nerva run` builds from the same module, written out with public names.
import { GraphHost, InProcessRuntime, RunQueue } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { graph, handlers } from "./refund-desk.js";

/** The host of the refund desk over the SQLite file `path`; `close()` stops it and closes the file. */
export function refundDeskHost(path: string): { host: GraphHost; close: () => Promise<void> } {
  const agents = new InProcessRuntime();
  for (const [name, handler] of Object.entries(handlers)) agents.register(name, handler);
  const store = new SqliteRunStore({ path });
  const host = new GraphHost({
    graph,
    runtime: agents,
    queue: new RunQueue({ store, name: graph.name }),
  });
  return {
    host,
    close: async () => {
      await host[Symbol.asyncDispose]();
      await store.close();
    },
  };
}
