// Keeps state in the container between invocations: proves a warm container is reused.
let calls = 0;
export default async function counter() {
  calls += 1;
  return { output: String(calls), data: { pid: process.pid, calls } };
}
