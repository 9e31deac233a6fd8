#!/usr/bin/env node
// /app/word-count.mjs: an executable speaking the stdin/stdout protocol.
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const words = input.message.split(/\s+/).filter(Boolean).length;
if (words === 0) process.exit(2); // exit code 2: "not for me" (wrong_handler)
// A JSON object: `output` is the text, the other fields become `data`.
console.log(JSON.stringify({ output: `${words} words`, words, user: process.env.NERVA_USER_ID }));
