/**
 * A typed key for a request-local slot (see {@link ExecContext.local}). Keys are compared by
 * identity, not by name: two keys with the same name are two slots. The name is for debugging.
 *
 * Made with `ExecContext.key<T>(name)`, in the style of OpenTelemetry's `createContextKey`.
 *
 * @example
 * const kAttempts = ExecContext.key<{ count: number }>("my-app.attempts");
 * ctx.local(kAttempts, () => ({ count: 0 })).count += 1;
 */
export class ContextKey<T> {
  /** Never set: carries `T` so that a key's value type is checked by the compiler. */
  declare readonly __type?: T;
  readonly name: string;

  /** @internal Use `ExecContext.key(name)`. */
  constructor(name: string) {
    this.name = name;
  }

  toString(): string {
    return `ContextKey(${this.name})`;
  }
}

/** The slots of one request tree. */
export type LocalSlots = Map<ContextKey<unknown>, unknown>;
