import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PlainTextStripper, stripMarkdown } from "./plain-text.js";

const cases: [string, string][] = [
  ["# Title\n## Sub", "Title\nSub"],
  ["**bold**, __bold__, *it*, _it_, ~~struck~~", "bold, bold, it, it, struck"],
  ["2 * 3 = 6, a_b_c, 5*3*2, ~approx", "2 * 3 = 6, a_b_c, 5*3*2, ~approx"],
  ["see [the docs](https://x.dev/a) now", "see the docs (https://x.dev/a) now"],
  ["![a cat](cat.png) sat", "a cat sat"],
  ["[https://x.dev](https://x.dev)", "https://x.dev"],
  ["[not a link] (x) and [half](", "[not a link] (x) and [half]("],
  ["`a*b*` and `__x__`", "a*b* and __x__"],
  ["```ts\nconst a = b * c; // *x*\n```\nafter", "const a = b * c; // *x*\nafter"],
  ["> quoted **text**\n> > nested", "quoted text\nnested"],
  ["* one\n+ two\n  - three\n1. four", "- one\n- two\n  - three\n1. four"],
  ["above\n\n---\n\nbelow", "above\n\n\n\nbelow"],
  ["\\*literal\\* and \\_x\\_", "*literal* and _x_"],
  ["unclosed ``` fence inline", "unclosed  fence inline"],
];

/** Markdown-ish text built from the constructs the stripper handles, plus plain words. */
const piece = fc.constantFrom(
  "word",
  " ",
  " ",
  "\n",
  "\n\n",
  "*",
  "**",
  "_",
  "__",
  "~~",
  "~",
  "`",
  "```",
  "```js\n",
  "\n```\n",
  "~~~\n",
  "# ",
  "## ",
  "> ",
  "- ",
  "* ",
  "1. ",
  "---",
  "[",
  "]",
  "(",
  ")",
  "](",
  "[a](http://x.y)",
  "![i](p.png)",
  "!",
  "\\",
  "\\*",
  "snake_case",
  "2 * 3",
  "ü",
  "🙂",
  "\t",
);
const markdown = fc.array(piece, { maxLength: 40 }).map((p) => p.join(""));

/** Splits `text` at the given fractional positions. */
function chunk(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => Math.floor(c * (text.length + 1))))].sort(
    (a, b) => a - b,
  );
  const out: string[] = [];
  let last = 0;
  for (const p of points) {
    out.push(text.slice(last, p));
    last = p;
  }
  out.push(text.slice(last));
  return out;
}

describe("stripMarkdown", () => {
  it.each(cases)("%j → %j", (input, expected) => {
    expect(stripMarkdown(input)).toBe(expected);
  });

  it("gives the same text however the input is chunked (streaming = whole)", () => {
    const streamed = (parts: string[]): string => {
      const stripper = new PlainTextStripper();
      let out = "";
      for (const part of parts) out += stripper.push(part);
      return out + stripper.end();
    };
    fc.assert(
      fc.property(
        markdown,
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
        (text, cuts) => {
          const whole = stripMarkdown(text);
          // Every single split point, one character at a time, and random multi-way splits.
          for (let i = 0; i <= text.length; i++) {
            expect(streamed([text.slice(0, i), text.slice(i)])).toBe(whole);
          }
          expect(streamed([...text])).toBe(whole);
          expect(streamed(chunk(text, cuts))).toBe(whole);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("streams real documents identically at every split point", () => {
    for (const [input] of cases) {
      const doc = `${input}\n\n\`\`\`\nfenced *code*\n\`\`\`\ntail **x**`;
      const whole = stripMarkdown(doc);
      for (let i = 0; i <= doc.length; i++) {
        const stripper = new PlainTextStripper();
        const out = stripper.push(doc.slice(0, i)) + stripper.push(doc.slice(i)) + stripper.end();
        expect(out, `split at ${i} of ${JSON.stringify(doc)}`).toBe(whole);
      }
    }
  });

  it("never drops a word: letters and digits survive in order (no images or fences)", () => {
    const noMedia = markdown.filter(
      (t) => !t.includes("![") && !t.includes("```") && !t.includes("~~~"),
    );
    fc.assert(
      fc.property(noMedia, (text) => {
        const words = (s: string) => (s.match(/[\p{L}\p{N}]/gu) ?? []).join("");
        expect(words(stripMarkdown(text))).toBe(words(text));
      }),
      { numRuns: 1000 },
    );
  });

  it("holds back at most the current line", () => {
    const stripper = new PlainTextStripper();
    expect(stripper.push("plain words ")).toBe("plain words ");
    // Emphasis delimiters are decided by their neighbours alone: nothing to hold back here.
    expect(stripper.push("and **bo")).toBe("and bo");
    // A delimiter run at the very end waits for the next character.
    expect(stripper.push("ld**")).toBe("ld");
    expect(stripper.push(" ok")).toBe(" ok");
    expect(stripper.push("\n# ")).toBe("\n");
    expect(stripper.push("Head")).toBe("Head");
    expect(stripper.push(" [link](htt")).toBe(" ");
    expect(stripper.push("p://a)")).toBe("link (http://a)");
    expect(stripper.end()).toBe("");
  });
});
