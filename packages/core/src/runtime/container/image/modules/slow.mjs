// Never finishes on its own and ignores its abort signal: only killing the container stops it.
// With a stream sink it first says "started", so a test knows the call reached the container.
export default function slow(input, ctx) {
  ctx.stream?.push("started");
  return new Promise(() => {
    setInterval(() => {}, 1000);
  });
}
