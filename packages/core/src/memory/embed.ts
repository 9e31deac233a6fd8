import { ErrorCode, NervaError } from "../errors.js";
import type { EmbedFn } from "./types.js";

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Calls `embed` and checks what it returned: one finite, non-empty vector per text. A failing or
 * misbehaving embedder throws NervaError INTERNAL naming the problem, before anything is written.
 */
export async function embedChecked(
  embed: EmbedFn,
  texts: string[],
  owner: string,
  signal?: AbortSignal,
): Promise<number[][]> {
  let vectors: unknown;
  try {
    vectors = await embed(texts, signal);
  } catch (err) {
    throw new NervaError(ErrorCode.INTERNAL, `${owner}: embed(texts) failed: ${messageOf(err)}`, {
      cause: err,
    });
  }
  if (!Array.isArray(vectors) || vectors.length !== texts.length) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      `${owner}: embed(texts) must return one vector per text (${texts.length} expected, got ${Array.isArray(vectors) ? vectors.length : typeof vectors}).`,
    );
  }
  return vectors.map((raw: unknown, i) => {
    // Typed arrays (Float32Array from most embedding clients) are accepted as well.
    const v =
      ArrayBuffer.isView(raw) && !(raw instanceof DataView)
        ? Array.from(raw as unknown as ArrayLike<number>)
        : raw;
    if (
      !Array.isArray(v) ||
      v.length === 0 ||
      !v.every((x) => typeof x === "number" && Number.isFinite(x))
    ) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        `${owner}: embed(texts)[${i}] must be a non-empty array of finite numbers.`,
      );
    }
    return v as number[];
  });
}
