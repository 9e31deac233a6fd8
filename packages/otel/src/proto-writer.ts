/**
 * Protobuf's wire format into one growable buffer, reused from one export to the next: the few
 * field types an OTLP trace request uses. A nested message reserves one byte for its length and
 * moves its content when the length needs more (a span, an attribute: rarely; a batch: once).
 *
 * Hot writers (the span encoder) {@link reserve} room once, then write into {@link buf} from
 * {@link pos} with local variables and store the new position: no bounds check per byte.
 */
export class ProtoWriter {
  /** The buffer being written; replaced when it grows or is taken (re-read after `reserve`). */
  buf: Buffer;
  pos = 0;

  constructor(size = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  /**
   * What was written, as its own bytes (a retried export re-sends them): the buffer itself is
   * handed over and the next message starts in a new one of the same size (no copy, no fill).
   */
  take(): Uint8Array {
    const buf = this.buf;
    const out = buf.subarray(0, this.pos);
    this.buf = Buffer.allocUnsafe(buf.length);
    this.pos = 0;
    return out;
  }

  /** Makes room for `n` more bytes after {@link pos}. */
  reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** One byte: a tag of a field number below 16, or a length below 128. */
  byte(b: number): void {
    this.reserve(1);
    this.buf[this.pos++] = b;
  }

  /** An unsigned varint of a number in [0, 2^32). */
  uint32(v: number): void {
    this.reserve(5);
    this.pos = varint32(this.buf, this.pos, v);
  }

  /** An int64 varint of an integer in [-2^63, 2^63) (two's complement when negative). */
  int64(v: number): void {
    this.reserve(10);
    this.pos = varint64(this.buf, this.pos, v);
  }

  fixed32(v: number): void {
    this.reserve(4);
    this.pos = le32(this.buf, this.pos, v >>> 0);
  }

  double(v: number): void {
    this.reserve(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  // The whole seconds of the last time written, as the two 32-bit halves of their nanoseconds:
  // a batch's times fall in few distinct seconds.
  #second = -1;
  #secondLow = 0;
  #secondHigh = 0;

  /**
   * Epoch milliseconds as fixed64 nanoseconds, rounded as OpenTelemetry's `millisToHrTime` and
   * its serializer do (whole seconds, then the nanoseconds of the fraction), so both agree.
   */
  epochNanos(ms: number): void {
    this.reserve(8);
    this.pos = this.epochNanosAt(this.buf, this.pos, ms);
  }

  /** {@link epochNanos} into `buf` at `p` (room reserved); returns the position after it. */
  epochNanosAt(buf: Uint8Array, p: number, ms: number): number {
    const seconds = Math.trunc(ms / 1000);
    // `ms % 1000` without V8's call out to fmod: the same value for ms >= 0 (the difference is
    // exact; when ms / 1000 rounded up to a whole second it is just below 0, and fmod's is 1000 more).
    let frac = ms - seconds * 1000;
    if (frac < 0) frac += 1000;
    const nanos = Math.round(frac * 1e6);
    if (seconds !== this.#second) {
      // seconds * 1e9 overflows 2^53: split seconds in 16-bit halves, each product stays exact.
      const fromLow = (seconds & 0xffff) * 1e9;
      const fromHigh = ((seconds / 0x10000) >>> 0) * 1e9;
      const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0);
      this.#second = seconds;
      this.#secondLow = low >>> 0;
      this.#secondHigh =
        Math.floor(fromLow / 0x100000000) +
        ((fromHigh / 0x10000) >>> 0) +
        Math.floor(low / 0x100000000);
    }
    const low = this.#secondLow + nanos;
    const high = this.#secondHigh + (low >= 0x100000000 ? 1 : 0);
    p = le32(buf, p, low >>> 0);
    return le32(buf, p, high >>> 0);
  }

  /** A length-prefixed UTF-8 string (ASCII below 128 characters: without a second pass). */
  string(s: string): void {
    const n = s.length;
    if (n < 0x80) {
      this.reserve(3 * n + 1);
      const end = asciiAt(this.buf, this.pos + 1, s);
      if (end >= 0) {
        this.buf[this.pos] = n;
        this.pos = end;
        return;
      }
    }
    this.#utf8(s);
  }

  #utf8(s: string): void {
    const len = Buffer.byteLength(s, "utf8");
    this.uint32(len);
    this.reserve(len);
    this.buf.write(s, this.pos, len, "utf8");
    this.pos += len;
  }

  /**
   * Starts a nested message: reserves `reserve` bytes for its length (1: below 128 bytes, 2:
   * below 16 KiB). Returns the mark for {@link end}.
   */
  begin(reserve = 1): number {
    this.reserve(reserve);
    const mark = this.pos;
    this.pos += reserve;
    return mark;
  }

  /** Ends the nested message started at `mark`: writes its length, moving it if it must. */
  end(mark: number, reserve = 1): void {
    const len = this.pos - mark - reserve;
    const size = len < 0x80 ? 1 : len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    if (size !== reserve) {
      this.reserve(size - reserve);
      this.buf.copyWithin(mark + size, mark + reserve, this.pos);
      this.pos += size - reserve;
    }
    varint32(this.buf, mark, len);
  }

  /** Appends bytes encoded elsewhere. */
  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
}

/** The unsigned varint of `v` in [0, 2^32) at `p`; returns the position after it. */
export function varint32(buf: Uint8Array, p: number, v: number): number {
  while (v > 0x7f) {
    buf[p++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[p++] = v;
  return p;
}

/** The int64 varint of an integer in [-2^63, 2^63) at `p` (10 bytes of room); the end. */
export function varint64(buf: Uint8Array, p: number, v: number): number {
  if (v >= 0 && v <= 0xffffffff) return varint32(buf, p, v);
  const abs = Math.abs(v);
  let low = abs >>> 0;
  let high = (abs / 0x100000000) >>> 0;
  if (v < 0) {
    low = ~low >>> 0;
    high = ~high >>> 0;
    low = (low + 1) >>> 0;
    if (low === 0) high = (high + 1) >>> 0;
  }
  while (high > 0 || low > 0x7f) {
    buf[p++] = (low & 0x7f) | 0x80;
    low = ((low >>> 7) | (high << 25)) >>> 0;
    high >>>= 7;
  }
  buf[p++] = low;
  return p;
}

/** `v` (uint32) little-endian at `p`; returns the position after it. */
export function le32(buf: Uint8Array, p: number, v: number): number {
  buf[p] = v & 0xff;
  buf[p + 1] = (v >>> 8) & 0xff;
  buf[p + 2] = (v >>> 16) & 0xff;
  buf[p + 3] = v >>> 24;
  return p + 4;
}

/**
 * `s` as ASCII bytes at `p`, with room for `3 * s.length` bytes reserved (UTF-8's most per
 * UTF-16 unit); the end, or -1 if it is not ASCII (then what was written past the position is
 * garbage, which the caller does not count). Short strings in a loop; from 16 characters
 * `Buffer#write` is faster (one call, ~50 ns, against ~3 ns a character): with room for all of
 * it, it writes one byte per character exactly when every character is ASCII.
 */
export function asciiAt(buf: Buffer, p: number, s: string): number {
  const n = s.length;
  if (n >= 16) return buf.write(s, p) === n ? p + n : -1;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return -1;
    buf[p++] = c;
  }
  return p;
}

/** `bytes` at `p` (room reserved); returns the position after them. */
export function copyAt(buf: Uint8Array, p: number, bytes: Uint8Array): number {
  buf.set(bytes, p);
  return p + bytes.length;
}

/** The value of each hex digit by its character code (0 for any other: ids are validated). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) HEX[0x61 + i] = HEX[0x41 + i] = 10 + i;

/** `bytes * 2` hex digits as `bytes` bytes at `p` (room reserved); returns the end. */
export function hexAt(buf: Uint8Array, p: number, hex: string, bytes: number): number {
  for (let j = 0; j < 2 * bytes; j += 2) {
    buf[p++] = (HEX[hex.charCodeAt(j) & 0x7f]! << 4) | HEX[hex.charCodeAt(j + 1) & 0x7f]!;
  }
  return p;
}
