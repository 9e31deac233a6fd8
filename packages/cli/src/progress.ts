import type { CliIo } from "./cli.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * Shows progress on stderr: on a terminal a spinner line with the current node and a node
 * counter, redrawn in place; otherwise one plain line per node.
 */
export class Progress {
  readonly #io: CliIo;
  readonly #tty: boolean;
  #timer: ReturnType<typeof setInterval> | null = null;
  #frame = 0;
  #label = "";
  #done = 0;
  #shown = false;
  /** Output left a line open: the spinner must not draw over it. */
  #hold = false;

  constructor(io: CliIo) {
    this.#io = io;
    this.#tty = io.stderr.isTTY === true;
  }

  node(nodeId: string): void {
    this.#label = nodeId;
    // A progress line never continues the streamed text: it starts a line of its own.
    this.breakLine();
    if (!this.#tty) {
      this.#io.stderr.write(`[nerva] node ${nodeId} started\n`);
      return;
    }
    this.#timer ??= setInterval(() => this.#draw(), 80);
    this.#draw();
  }

  completed(): void {
    this.#done += 1;
  }

  /** Writes streamed output to stdout, keeping the spinner off a line the output left open. */
  output(chunk: string): void {
    this.clear();
    this.#io.stdout.write(chunk);
    if (chunk.length > 0) this.#hold = !chunk.endsWith("\n");
  }

  /** Ends a line the streamed output left open (before a progress line, a prompt or an error). */
  breakLine(): void {
    if (!this.#hold) return;
    this.clear();
    this.#io.stdout.write("\n");
    this.#hold = false;
  }

  /** Clears the spinner line (before output or a prompt is written). */
  clear(): void {
    if (this.#tty && this.#shown) this.#io.stderr.write("\r\x1b[2K");
    this.#shown = false;
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.clear();
  }

  #draw(): void {
    if (this.#hold) return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.#io.stderr.write(
      `\r\x1b[2K${FRAMES[this.#frame]} ${this.#label} (${this.#done} nodes done)`,
    );
    this.#shown = true;
  }
}
