// Module handler run by the Nerva agent (warm or per-call containers).
export default async function echo(input) {
  return `echo: ${input.message}`;
}
