// Never finishes on its own and ignores its abort signal: only killing the container stops it.
export default function slow() {
  return new Promise(() => {
    setInterval(() => {}, 1000);
  });
}
