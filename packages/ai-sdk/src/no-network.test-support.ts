// Test setup: these tests must never reach the network. Every TCP/TLS connection goes through
// net.Socket.prototype.connect; this guard lets through loopback addresses and local sockets and
// fails anything else (a provider's real API, a DNS name), before any packet leaves. A test that
// tried is failed by the afterEach below, even if the code under test swallowed the error.
import net from "node:net";
import { afterEach, expect } from "vitest";

const violations: string[] = [];
const GUARDED = Symbol.for("nerva.test.no-network");

/** True for the addresses a test may connect to: loopback IPs and `localhost`. */
export function isLoopback(host: string | undefined): boolean {
  if (host === undefined || host === "" || host === "localhost") return true;
  const h = host.startsWith("[") ? host.slice(1, -1) : host;
  if (net.isIPv4(h)) return h.startsWith("127.");
  if (net.isIPv6(h)) return h === "::1" || /^::ffff:127\./i.test(h);
  return false;
}

type ConnectTarget = { host?: string; port?: unknown; path?: unknown };

function targetOf(args: unknown[]): ConnectTarget {
  const first = args[0];
  if (Array.isArray(first)) return (first[0] ?? {}) as ConnectTarget; // Node's normalised form
  if (typeof first === "object" && first !== null) return first as ConnectTarget;
  if (typeof first === "string" && !/^\d+$/.test(first)) return { path: first };
  return { port: first, host: typeof args[1] === "string" ? args[1] : undefined };
}

/** Violations so far, cleared (for the test of the guard itself). */
export function takeViolations(): string[] {
  return violations.splice(0);
}

const proto = net.Socket.prototype as net.Socket & { [GUARDED]?: true };
if (proto[GUARDED] !== true) {
  const original = proto.connect;
  Object.defineProperty(proto, GUARDED, { value: true });
  proto.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
    const target = targetOf(args);
    if (target.path === undefined && !isLoopback(target.host)) {
      const where = `${target.host}:${String(target.port)}`;
      violations.push(where);
      process.nextTick(() =>
        this.destroy(
          new Error(`Network access to ${where} is not allowed in tests (loopback only).`),
        ),
      );
      return this;
    }
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof proto.connect;
}

afterEach(() => {
  expect(takeViolations(), "connections to non-loopback addresses").toEqual([]);
});
