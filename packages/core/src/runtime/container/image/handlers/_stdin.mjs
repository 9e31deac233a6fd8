// Shared by the per-call test handlers: reads the AgentInput JSON the runtime writes to stdin.
export async function readInput() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}
