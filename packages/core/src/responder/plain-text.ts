/**
 * Markdown → plain text, as a streaming state machine: feed text in any chunks with `push`, call
 * `end` once; the concatenated output is the same however the text was chunked. Text is held
 * back only while a construct is undecided (a line's first characters, a delimiter run at the end
 * of a chunk, a link whose `](url)` has not arrived), never more than one line.
 *
 * What it does: drops code fences (keeps the code), heading and blockquote markers, horizontal
 * rules, emphasis and strikethrough delimiters (CommonMark flanking rules, so `2 * 3` and
 * `snake_case` stay), inline code backticks; turns `[text](url)` into `text (url)` and
 * `![alt](url)` into `alt`; unescapes `\*`; normalises bullets to `- `.
 */

const LINK = /\[([^\]\n]{0,500})\]\(([^()\s]{0,2000})\)/y;
const LINK_PREFIX = /\[[^\]\n]{0,500}(?:\]\(?[^()\s]{0,2000})?$/y;
const FENCE = /^ {0,3}(?:```|~~~)/;
const FENCE_PREFIX = /^ {0,3}(?:`{0,2}|~{0,2})$/;
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const HEADING = /^ {0,3}#{1,6}(?:[ \t]+|$)/;
const QUOTE = /^ {0,3}>[ \t]?/;
const BULLET = /^( *)[*+-][ \t]+/;
/** Characters that may still change how a line starts; hold the line while it has only these. */
const UNDECIDED_START = /^[ \t#>*+\-_`~=\d.)]*$/;
const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;

const isSpace = (c: string | undefined): boolean => c === undefined || /\s/.test(c);
const isPunct = (c: string | undefined): boolean => c !== undefined && PUNCT.test(c);

/** Streaming markdown stripper; see the module comment. */
export class PlainTextStripper {
  #pending = "";
  #lineStart = true;
  #fence = false;
  #inCode = false;
  /** Last source character consumed (for flanking rules); "" at the start. */
  #prev = "";

  /** Feeds `text`; returns what can be emitted now. */
  push(text: string): string {
    this.#pending += text;
    return this.#run(false);
  }

  /** Flushes everything held back. The stripper can be reused afterwards. */
  end(): string {
    const out = this.#run(true);
    this.#lineStart = true;
    this.#fence = false;
    this.#inCode = false;
    this.#prev = "";
    return out;
  }

  #run(final: boolean): string {
    const s = this.#pending;
    let out = "";
    let i = 0;
    const n = s.length;
    while (i < n) {
      if (this.#lineStart) {
        const nl = s.indexOf("\n", i);
        const line = nl === -1 ? s.slice(i) : s.slice(i, nl);
        const complete = nl !== -1 || final;
        if (this.#fence) {
          if (FENCE.test(line)) {
            if (!complete) break;
            this.#fence = false;
            i = nl === -1 ? n : nl + 1; // the closing fence line disappears
            this.#prev = "\n";
            continue;
          }
          if (!complete && FENCE_PREFIX.test(line)) break;
          this.#lineStart = false;
          continue;
        }
        if (!complete && UNDECIDED_START.test(line)) break;
        if (FENCE.test(line)) {
          if (!complete) break;
          this.#fence = true;
          i = nl === -1 ? n : nl + 1;
          this.#prev = "\n";
          continue;
        }
        if (complete && HR.test(line)) {
          i += line.length; // the rule itself goes; its newline stays (a blank line)
          this.#lineStart = false;
          continue;
        }
        let rest = line;
        let marker = "";
        for (let m = QUOTE.exec(rest); m !== null; m = QUOTE.exec(rest))
          rest = rest.slice(m[0].length);
        const heading = HEADING.exec(rest);
        if (heading !== null) rest = rest.slice(heading[0].length);
        else {
          const bullet = BULLET.exec(rest);
          if (bullet !== null) {
            marker = `${bullet[1]}- `;
            rest = rest.slice(bullet[0].length);
          }
        }
        out += marker;
        i += line.length - rest.length;
        this.#lineStart = false;
        this.#prev = marker === "" ? "" : " ";
        continue;
      }
      const c = s[i]!;
      if (c === "\n") {
        out += "\n";
        i++;
        this.#lineStart = true;
        this.#inCode = false;
        this.#prev = "\n";
        continue;
      }
      if (this.#fence) {
        const nl = s.indexOf("\n", i);
        const end = nl === -1 ? n : nl;
        out += s.slice(i, end);
        this.#prev = s[end - 1]!;
        i = end;
        continue;
      }
      if (c === "`") {
        let j = i;
        while (j < n && s[j] === "`") j++;
        if (j === n && !final) break;
        this.#inCode = !this.#inCode;
        this.#prev = "`";
        i = j;
        continue;
      }
      if (this.#inCode) {
        out += c;
        this.#prev = c;
        i++;
        continue;
      }
      if (c === "\\") {
        if (i + 1 >= n && !final) break;
        const next = s[i + 1];
        if (next !== undefined && next !== "\n" && isPunct(next) && next.charCodeAt(0) < 128) {
          out += next;
          this.#prev = next;
          i += 2;
        } else {
          out += c;
          this.#prev = c;
          i++;
        }
        continue;
      }
      if (c === "*" || c === "_" || c === "~") {
        let j = i;
        while (j < n && s[j] === c) j++;
        if (j === n && !final) break;
        const run = s.slice(i, j);
        const next = s[j];
        const prev = this.#prev === "" ? undefined : this.#prev;
        const left = !isSpace(next) && (!isPunct(next) || isSpace(prev) || isPunct(prev));
        const right = !isSpace(prev) && (!isPunct(prev) || isSpace(next) || isPunct(next));
        const delimiter = (c !== "~" || run.length === 2) && left !== right;
        if (!delimiter) out += run;
        this.#prev = c;
        i = j;
        continue;
      }
      if (c === "[" || (c === "!" && s[i + 1] === "[")) {
        const start = c === "!" ? i + 1 : i;
        LINK.lastIndex = start;
        const link = LINK.exec(s);
        if (link !== null) {
          const [whole, label = "", url = ""] = link;
          const inner = new PlainTextStripper();
          const text = inner.push(label) + inner.end();
          out += c === "!" ? text : text === url || url === "" ? text || url : `${text} (${url})`;
          this.#prev = ")";
          i = start + whole.length;
          continue;
        }
        LINK_PREFIX.lastIndex = start;
        if (!final && LINK_PREFIX.test(s)) break;
        if (c === "!" && !final && start + 1 >= n) break;
      }
      if (c === "!" && i + 1 >= n && !final) break;
      out += c;
      this.#prev = c;
      i++;
    }
    this.#pending = s.slice(i);
    return out;
  }
}

/**
 * Strips markdown from a whole text (same rules as {@link PlainTextStripper}).
 *
 * @example
 * stripMarkdown("# Hi\n**bold** and [docs](https://x.dev)"); // "Hi\nbold and docs (https://x.dev)"
 */
export function stripMarkdown(text: string): string {
  const stripper = new PlainTextStripper();
  return stripper.push(text) + stripper.end();
}
