/**
 * Protobuf's wire format into one growable buffer, reused from one export to the next: the few
 * field types an OTLP trace request uses. A nested message reserves one byte for its length and
 * moves its content when the length needs more (a span, an attribute: rarely; a batch: once).
 */
export class ProtoWriter {
  #buf: Buffer;
  pos = 0;

  constructor(size = 64 * 1024) {
    this.#buf = Buffer.allocUnsafe(size);
  }

  /**
   * What was written, as its own bytes (a retried export re-sends them): the buffer itself is
   * handed over and the next message starts in a new one of the same size (no copy, no fill).
   */
  take(): Uint8Array {
    const buf = this.#buf;
    const out = buf.subarray(0, this.pos);
    this.#buf = Buffer.allocUnsafe(buf.length);
    this.pos = 0;
    return out;
  }

  #ensure(n: number): void {
    if (this.pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.#buf.copy(grown, 0, 0, this.pos);
    this.#buf = grown;
  }

  /** One byte: a tag of a field number below 16, or a length below 128. */
  byte(b: number): void {
    this.#ensure(1);
    this.#buf[this.pos++] = b;
  }

  /** An unsigned varint of a number in [0, 2^32). */
  uint32(v: number): void {
    this.#ensure(5);
    const buf = this.#buf;
    let p = this.pos;
    while (v > 0x7f) {
      buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[p++] = v;
    this.pos = p;
  }

  /** An int64 varint of an integer in [-2^63, 2^63) (two's complement when negative). */
  int64(v: number): void {
    if (v >= 0 && v <= 0xffffffff) return this.uint32(v);
    const abs = Math.abs(v);
    let low = abs >>> 0;
    let high = (abs / 0x100000000) >>> 0;
    if (v < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    this.#ensure(10);
    const buf = this.#buf;
    while (high > 0 || low > 0x7f) {
      buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low;
  }

  fixed32(v: number): void {
    this.#le32(v >>> 0);
  }

  #le32(v: number): void {
    this.#ensure(4);
    const buf = this.#buf;
    const p = this.pos;
    buf[p] = v & 0xff;
    buf[p + 1] = (v >>> 8) & 0xff;
    buf[p + 2] = (v >>> 16) & 0xff;
    buf[p + 3] = v >>> 24;
    this.pos = p + 4;
  }

  double(v: number): void {
    this.#ensure(8);
    this.#buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /**
   * Epoch milliseconds as fixed64 nanoseconds, rounded as OpenTelemetry's `millisToHrTime` and
   * its serializer do (whole seconds, then the nanoseconds of the fraction), so both agree.
   */
  epochNanos(ms: number): void {
    const seconds = Math.trunc(ms / 1000);
    const nanos = Math.round((ms % 1000) * 1e6);
    // seconds * 1e9 overflows 2^53: split seconds in 16-bit halves, each product stays exact.
    const fromLow = (seconds & 0xffff) * 1e9;
    const fromHigh = ((seconds / 0x10000) >>> 0) * 1e9;
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + nanos;
    const high =
      Math.floor(fromLow / 0x100000000) +
      ((fromHigh / 0x10000) >>> 0) +
      Math.floor(low / 0x100000000);
    this.#le32(low >>> 0);
    this.#le32(high >>> 0);
  }

  /** A length-prefixed UTF-8 string (ASCII below 128 characters: without a second pass). */
  string(s: string): void {
    const n = s.length;
    if (n < 0x80) {
      this.#ensure(n + 1);
      const buf = this.#buf;
      const start = this.pos;
      let p = start + 1;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) return this.#utf8(s);
        buf[p++] = c;
      }
      buf[start] = n;
      this.pos = p;
      return;
    }
    this.#utf8(s);
  }

  #utf8(s: string): void {
    const len = Buffer.byteLength(s, "utf8");
    this.uint32(len);
    this.#ensure(len);
    this.#buf.write(s, this.pos, len, "utf8");
    this.pos += len;
  }

  // The last two ids written, decoded (a request's spans share a trace id, siblings a parent).
  #hexA = "";
  #hexB = "";
  #idA: Uint8Array = new Uint8Array(16);
  #idB: Uint8Array = new Uint8Array(16);

  /** `bytes * 2` (at most 32) hex digits as `bytes` length-prefixed bytes. */
  hex(hex: string, bytes: number): void {
    this.#ensure(bytes + 1);
    const buf = this.#buf;
    let p = this.pos;
    buf[p++] = bytes;
    let id: Uint8Array;
    if (hex === this.#hexA) id = this.#idA;
    else if (hex === this.#hexB) id = this.#idB;
    else {
      // Decode into the older slot, which becomes the newest.
      id = this.#idB;
      this.#idB = this.#idA;
      this.#hexB = this.#hexA;
      this.#idA = id;
      this.#hexA = hex;
      for (let i = 0, j = 0; i < bytes; i++, j += 2) {
        id[i] = (HEX[hex.charCodeAt(j) & 0x7f]! << 4) | HEX[hex.charCodeAt(j + 1) & 0x7f]!;
      }
    }
    for (let i = 0; i < bytes; i++) buf[p++] = id[i]!;
    this.pos = p;
  }

  /**
   * Starts a nested message: reserves `reserve` bytes for its length (1: below 128 bytes, 2:
   * below 16 KiB). Returns the mark for {@link end}.
   */
  begin(reserve = 1): number {
    this.#ensure(reserve);
    const mark = this.pos;
    this.pos += reserve;
    return mark;
  }

  /** Ends the nested message started at `mark`: writes its length, moving it if it must. */
  end(mark: number, reserve = 1): void {
    const len = this.pos - mark - reserve;
    const size = len < 0x80 ? 1 : len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    if (size !== reserve) {
      this.#ensure(size - reserve);
      this.#buf.copyWithin(mark + size, mark + reserve, this.pos);
      this.pos += size - reserve;
    }
    const buf = this.#buf;
    let v = len;
    let p = mark;
    while (v > 0x7f) {
      buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[p] = v;
  }

  /** Appends a few bytes encoded elsewhere (an attribute's key: a loop beats `set` when short). */
  bytes(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n > 48) return this.raw(bytes);
    this.#ensure(n);
    const buf = this.#buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) buf[p++] = bytes[i]!;
    this.pos = p;
  }

  /** Appends bytes encoded elsewhere. */
  raw(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    this.#buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
}

/** The value of each hex digit by its character code (0 for any other: ids are validated). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) HEX[0x61 + i] = HEX[0x41 + i] = 10 + i;
