// Takes the whole agent down mid-call (args.code, default 3): the host must report the exit.
export default async function crash(input) {
  process.stderr.write("about to crash\n");
  process.exit(Number(input.args.code ?? 3));
}
