// The fenced code blocks of a markdown page, for the tests that keep the docs honest
// (snippets.test.ts runs them; the runtime and bridge page tests check theirs against the code).
import { readFileSync } from "node:fs";

/** One fenced block: its language, the rest of its info string, where it starts, its code. */
export interface CodeBlock {
  readonly lang: string;
  /** What follows the language on the opening fence, e.g. `no-run`. */
  readonly info: string;
  /** 1-based line number of the opening fence. */
  readonly line: number;
  readonly code: string;
}

/** Every fenced code block of the markdown file at `path`, in order. */
export function codeBlocks(path: string): CodeBlock[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const out: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)(.*)$/.exec(lines[i] as string);
    if (open === null) continue;
    const line = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i] as string);
    out.push({
      lang: open[1] as string,
      info: (open[2] ?? "").trim(),
      line,
      code: body.join("\n"),
    });
  }
  return out;
}
