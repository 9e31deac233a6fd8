// Attacks the host through the agent's frame stream (fd 1, under the agent's own writes), as
// args.mode says: frames nested far too deep, a frame cut off by the exit, a foreign id, a
// frame too large, or deep data returned through the API.
import { writeSync } from "node:fs";

/** Writes all of `text` to `fd`: writeSync may write less than asked on a pipe or socket. */
function writeAll(fd, text) {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length;) {
    try {
      at += writeSync(fd, bytes.subarray(at));
    } catch (err) {
      if (err.code !== "EAGAIN") throw err;
    }
  }
}

const nested = (depth) => "[".repeat(depth) + "]".repeat(depth);
const FRAMES = {
  result: (d) => `{"type":"result","result":{"status":"success","data":{"x":${d}}}}`,
  chunk: (d) => `{"type":"chunk","text":"x","extra":${d}}`,
  usage: (d) => `{"type":"usage","prompt_tokens":${d}}`,
  delegate: (d) =>
    `{"type":"delegate","call_id":"1","handler":"echo","input":{"message":"x","args":{"a":${d}}}}`,
};

export default async function attack(input) {
  const { mode, depth = "20000", bytes = "0" } = input.args;
  switch (mode) {
    case "echo":
      return `ok: ${input.message}`;
    case "return":
      return { output: "deep", data: { x: JSON.parse(nested(Number(depth))) } };
    case "huge":
      writeAll(1, `{"type":"chunk","text":"${"x".repeat(Number(bytes))}"}\n`);
      break;
    case "partial-exit":
      writeAll(1, '{"type":"result","result":{"status":"succ');
      process.exit(0);
      break;
    case "unknown-id":
      writeAll(1, '{"type":"chunk","id":"someone-else","text":"x"}\n');
      break;
    default:
      writeAll(1, FRAMES[mode](nested(Number(depth))) + "\n");
  }
  await new Promise((resolve) => setTimeout(resolve, 5000));
  return "the host ignored the frame";
}
