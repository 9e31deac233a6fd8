// Allocates (and touches) memory 16 MB at a time until args.mb is reached or the container dies.
const blocks = [];
export default async function memoryHog(input) {
  const total = Number(input.args.mb ?? 1024);
  for (let mb = 0; mb < total; mb += 16) blocks.push(Buffer.alloc(16 * 1024 * 1024, 1));
  return `allocated ${blocks.length * 16} MB`;
}
