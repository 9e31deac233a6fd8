#!/usr/bin/env node
// Per-call handler: a JSON object on stdout; `output` is the text, other fields become data.
import { readInput } from "./_stdin.mjs";

await readInput();
const env = process.env;
process.stdout.write(
  JSON.stringify({
    output: "ok",
    request_id: env.NERVA_REQUEST_ID,
    trace_id: env.NERVA_TRACE_ID,
    user_id: env.NERVA_USER_ID ?? null,
    session_id: env.NERVA_SESSION_ID ?? null,
    depth: Number(env.NERVA_DEPTH),
    deadline: env.NERVA_DEADLINE ?? null,
    permissions: JSON.parse(env.NERVA_PERMISSIONS ?? "null"),
  }),
);
