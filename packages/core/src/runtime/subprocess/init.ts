import { constants as osConstants } from "node:os";

/** The fd of the socket between the host and the init of a namespace. */
export const STATUS_FD = 4;

/**
 * PID 1 of a confined process's PID namespace, in perl (every Debian-like system has it:
 * perl-base is essential). It starts with an empty environment (so nothing in the program's, such
 * as `PERL5OPT` or a locale perl lacks, changes how it runs) and waits for the program on fd 4:
 * a decimal byte count and a newline, then that many bytes of NUL-separated items (the argument
 * count, the arguments, then `NAME=value` environment entries). A launcher can therefore be
 * started before anyone knows which program it will run. It runs the program as PID 2, so the
 * program keeps normal signal semantics (PID 1 ignores every signal it has no handler for, even a
 * SIGKILL or SIGSEGV it sends itself), reaps orphans, and reports on fd 4 how the program ended:
 * `X<code>` (exited), `S<n>` (killed by signal n, which PID 1 could not pass on by dying of it),
 * `E<errno>` (could not be executed). Then it exits, and the kernel kills everything left in the
 * namespace. If the host goes away before sending a program, it exits quietly.
 */
export const INIT = [
  '$0 = "nerva-init";',
  'open(my $st, "+<&=", 4) or die "nerva-init: no status fd: $!\\n";',
  'my ($size, $buf) = (-1, "");',
  "while (1) {",
  "  $size = $1 if $size < 0 && $buf =~ s/\\A(\\d+)\\n//;",
  "  last if $size >= 0 && length($buf) >= $size;",
  "  sysread($st, $buf, 65536, length $buf) or exit 0;",
  "}",
  "my @items = split /\\0/, substr($buf, 0, $size), -1;",
  "my $argc = shift @items;",
  "my @argv = splice @items, 0, $argc;",
  "%ENV = map { /\\A([^=]*)=(.*)\\z/s ? ($1, $2) : () } @items;",
  'my $pid = fork() // die "nerva-init: fork: $!\\n";',
  "if ($pid == 0) {",
  // F_SETFD, FD_CLOEXEC: the program does not inherit the status socket.
  "  fcntl($st, 2, 1);",
  "  { exec { $argv[0] } @argv }",
  '  syswrite($st, "E" . ($! + 0) . "\\n");',
  "  exit 127;",
  "}",
  // The program's stdio is the program's: held here too, its end would wait for this process.
  'close(STDIN); close(STDOUT); close(STDERR); open(my $ch, "<&=", 3) && close($ch);',
  "my $status = 0;",
  "while ((my $w = wait()) != -1) { if ($w == $pid) { $status = $?; last } }",
  'if ($status & 127) { syswrite($st, "S" . ($status & 127) . "\\n"); exit 128 + ($status & 127) }',
  'syswrite($st, "X" . ($status >> 8) . "\\n");',
  "exit($status >> 8);",
].join("\n");

/** The message that tells the init which program to run, with which environment. */
export function encodeHandshake(
  file: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Buffer {
  const items = [String(args.length + 1), file, ...args];
  for (const [name, value] of Object.entries(env)) items.push(`${name}=${value}`);
  const payload = Buffer.from(items.join("\0"));
  return Buffer.concat([Buffer.from(`${payload.length}\n`), payload]);
}

/** How the program ended, as the init reported it. */
export type InitReport =
  | { readonly kind: "exit"; readonly code: number }
  | { readonly kind: "signal"; readonly signal: NodeJS.Signals }
  | { readonly kind: "exec-error"; readonly code: string };

const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);
const ERRNO_NAMES = new Map<number, string>(
  Object.entries(osConstants.errno).map(([name, n]) => [n, name]),
);

/** Reads what the init wrote on its socket; null while it has not reported (or never will). */
export function parseInitReport(text: string): InitReport | null {
  const m = /^([XSE])(\d+)$/m.exec(text);
  if (m === null) return null;
  const n = Number(m[2]);
  switch (m[1]) {
    case "X":
      return { kind: "exit", code: n };
    case "S": {
      const signal = SIGNAL_NAMES.get(n);
      return signal === undefined ? null : { kind: "signal", signal };
    }
    default:
      return { kind: "exec-error", code: ERRNO_NAMES.get(n) ?? `errno ${n}` };
  }
}
