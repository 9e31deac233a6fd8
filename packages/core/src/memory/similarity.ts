/** Cosine similarity of two vectors; `null` when dimensions differ or either has zero length. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number | null {
  if (a.length !== b.length || a.length === 0) return null;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (na === 0 || nb === 0) return null;
  return dot / Math.sqrt(na * nb);
}

/**
 * Keeps the `limit` best-scoring candidates, best first; ties keep the newer item first (higher
 * `order`). Candidates whose score is `null` (incomparable vectors) are skipped.
 */
export function topK<T>(
  candidates: Iterable<{ value: T; score: number | null; order: number }>,
  limit: number,
): { value: T; score: number }[] {
  const kept: { value: T; score: number; order: number }[] = [];
  for (const c of candidates) {
    if (c.score === null) continue;
    kept.push({ value: c.value, score: c.score, order: c.order });
  }
  kept.sort((x, y) => y.score - x.score || y.order - x.order);
  return kept.slice(0, limit).map(({ value, score }) => ({ value, score }));
}
