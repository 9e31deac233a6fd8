const FENCE_LINE = /^ {0,3}(?:```|~~~)/;

/** Whether `text` ends inside a fenced code block (an odd number of fence lines). */
export function endsInsideFence(text: string): boolean {
  let inside = false;
  for (const line of text.split("\n")) if (FENCE_LINE.test(line)) inside = !inside;
  return inside;
}

/** Moves `cut` left so that it does not split a UTF-16 surrogate pair. */
function safeCut(text: string, cut: number): number {
  if (cut > 0 && cut < text.length) {
    const code = text.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) return cut - 1;
  }
  return cut;
}

/** Prefers to cut at whitespace in the last fifth of the budget, so words stay whole. */
function wordCut(text: string, cut: number): number {
  const floor = Math.floor(cut * 0.8);
  for (let i = cut; i > floor; i--) {
    if (/\s/.test(text[i] ?? "")) {
      let j = i;
      while (j > 0 && /\s/.test(text[j - 1]!)) j--;
      return j;
    }
  }
  return cut;
}

/** What {@link truncate} returns. */
export interface Truncated {
  readonly text: string;
  readonly truncated: boolean;
  /** Characters of the input left out (0 when not truncated). */
  readonly omitted: number;
}

/**
 * Shortens `text` to at most `max` UTF-16 units, marker included, saying how much was cut.
 * In markdown, an open code fence is closed before the marker.
 */
export function truncate(
  text: string,
  max: number,
  marker: (omitted: number) => string,
  markdown: boolean,
): Truncated {
  if (text.length <= max) return { text, truncated: false, omitted: 0 };
  let reserve = marker(text.length).length + (markdown ? 4 : 0);
  for (let attempt = 0; attempt < 4; attempt++) {
    const budget = Math.max(0, max - reserve);
    const cut = safeCut(text, wordCut(text, budget));
    const kept = text.slice(0, cut);
    const close = markdown && endsInsideFence(kept) ? "\n```" : "";
    const omitted = text.length - cut;
    const out = kept + close + marker(omitted);
    if (out.length <= max) return { text: out, truncated: true, omitted };
    reserve += out.length - max;
  }
  // Unreachable for a marker that fits in `max` (checked where channels are configured).
  const fallback = marker(text.length);
  return { text: fallback.slice(0, max), truncated: true, omitted: text.length };
}
