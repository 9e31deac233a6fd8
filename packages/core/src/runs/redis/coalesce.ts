import type { Redis } from "ioredis";

/**
 * Makes `redis` send the commands issued in one turn of the event loop as one socket write.
 * ioredis writes each command as it is issued: a busy store (many claims, finishes, enqueues and
 * reads answered by one reply packet) made a write system call per command, each as costly on
 * loopback as the command itself. Here the first command of a turn corks the socket and the turn's
 * end uncorks it, so Node writes them all with one `writev`. Nothing waits longer than the turn.
 */
export function coalesceWrites(redis: Redis): void {
  const send = redis.sendCommand.bind(redis);
  let corked: Redis["stream"] | null = null;
  const uncork = (): void => {
    const socket = corked;
    corked = null;
    socket?.uncork();
  };
  redis.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    const socket = redis.stream;
    // Only the connection's own socket, ready for commands (others go to ioredis's offline queue).
    if (corked === null && args[1] === undefined && redis.status === "ready" && socket.writable) {
      corked = socket;
      socket.cork();
      process.nextTick(uncork);
    }
    return send(...args);
  }) as Redis["sendCommand"];
}
