import { parseInitReport, type InitReport } from "./init.js";

/** Calls one fork server runs before it exits (each has its own stdin, stdout, stderr and fd 3). */
export const FORK_SERVER_CALLS = 16;
/** The fd of the fork server's control socket (commands in, reports out). */
export const CONTROL_FD = 3;
/** The first fd of the first call's stdio; call `i` has fds `4 + 4i` to `7 + 4i`. */
export const FIRST_CALL_FD = 4;

/** Numbers of the system calls the fork server makes, which perl can only reach by number. */
export interface SyscallNumbers {
  readonly mount: number;
  readonly prctl: number;
  readonly capset: number;
}

/**
 * By CPU architecture (`process.arch`). Elsewhere there is no fork server and executables are
 * started through a per-call init (a few milliseconds more per call).
 */
const SYSCALLS: Readonly<Partial<Record<NodeJS.Architecture, SyscallNumbers>>> = {
  x64: { mount: 165, prctl: 157, capset: 126 },
  // The generic table of asm-generic/unistd.h.
  arm64: { mount: 40, prctl: 167, capset: 91 },
  riscv64: { mount: 40, prctl: 167, capset: 91 },
  loong64: { mount: 40, prctl: 167, capset: 91 },
};

export function syscallNumbers(arch: NodeJS.Architecture = process.arch): SyscallNumbers | null {
  return SYSCALLS[arch] ?? null;
}

/**
 * A fork server, in perl: started once in a new PID (and user, and mount) namespace, it runs up
 * to `FORK_SERVER_CALLS` executable calls one after another, forking each program from itself.
 * Starting the namespaces, perl and its /proc is paid once per server, off the path of a call,
 * and a fork of this small process costs less than Node's own spawn.
 *
 * Arguments: the number of calls, then the numbers of mount, prctl and capset. The runtime gives
 * it fds 3 (control) and 4 + 4i .. 7 + 4i (stdin, stdout, stderr and fd 3 of call i), all
 * socket pairs like the stdio of any child Node starts. It runs unshare'd without `--fork`, so
 * the process the runtime started holds no call's stdio: it forks the server (PID 1 of the new
 * namespace), closes every fd and waits, ignoring the SIGTERM a grace period sends to its
 * process group (the server, as a namespace's init, ignores it too; the program gets it).
 *
 * The server mounts the namespace's /proc, makes itself non-dumpable (a program, without
 * capabilities, cannot read or trace it), then for each call reads a command on fd 3 (the
 * format of {@link encodeHandshake}), forks the program with that call's fds as 0-3 and no other
 * fd, without any capability (bounding, ambient and inheritable sets emptied, so exec grants
 * none: it cannot change the mounts or trace the server, which later calls share), and with
 * the command's environment. When the program exits, the server SIGKILLs every process left in
 * the namespace (`kill -1` from PID 1 reaches all of them, `setsid` or not), reaps them all, and
 * only then reports `<call> X<code>`, `<call> S<signal>` or `<call> E<errno>` (could not exec)
 * on fd 3: the next call finds nothing of this one running. It refuses to run unless it is PID 1
 * (anywhere else `kill -1` would reach the host's processes).
 */
export const FORK_SERVER = [
  '$0 = "nerva-fork-server";',
  "my ($calls, $mount, $prctl, $capset) = @ARGV;",
  "require POSIX;",
  "my $last = 3 + 4 * $calls;",
  // What the launcher left open (past the calls' fds) is nobody's business here.
  'opendir(my $dh, "/proc/self/fd") or die "nerva-fork-server: /proc/self/fd: $!\\n";',
  "my @extra = grep { /\\A\\d+\\z/ && $_ > $last } readdir $dh;",
  "closedir $dh;",
  "POSIX::close($_) for @extra;",
  // PR_SET_DUMPABLE 0 (inherited by the fork below, reset by a program's exec).
  'syscall($prctl, 4, 0, 0, 0, 0) == 0 or die "nerva-fork-server: PR_SET_DUMPABLE: $!\\n";',
  'my $server = fork() // die "nerva-fork-server: fork: $!\\n";',
  "if ($server) {",
  "  POSIX::close($_) for 3 .. $last;",
  '  $SIG{$_} = "IGNORE" for qw(TERM INT HUP);',
  "  waitpid($server, 0);",
  "  exit(($? & 127) ? 128 + ($? & 127) : $? >> 8);",
  "}",
  'die "nerva-fork-server: not the init of a new PID namespace\\n" unless $$ == 1;',
  // PR_SET_PDEATHSIG SIGKILL: gone with the process the runtime started.
  'syscall($prctl, 1, 9, 0, 0, 0) == 0 or die "nerva-fork-server: PR_SET_PDEATHSIG: $!\\n";',
  // MS_REC | MS_PRIVATE, then a proc of this namespace with MS_NOSUID | MS_NODEV | MS_NOEXEC.
  'my ($none, $proc, $at) = ("none", "proc", "/proc");',
  'syscall($mount, $none, $at, 0, 0x44000, 0) == 0 or die "nerva-fork-server: private /proc: $!\\n";',
  'syscall($mount, $proc, $at, $proc, 14, 0) == 0 or die "nerva-fork-server: mount /proc: $!\\n";',
  'open(my $ctl, "+<&=", 3) or die "nerva-fork-server: no control fd: $!\\n";',
  // _LINUX_CAPABILITY_VERSION_3, this process; then effective, permitted, inheritable all empty.
  'my ($head, $none_caps) = (pack("LL", 0x20080522, 0), pack("L6", (0) x 6));',
  'my $buf = "";',
  "for my $call (0 .. $calls - 1) {",
  "  my $size = -1;",
  "  while (1) {",
  "    $size = $1 if $size < 0 && $buf =~ s/\\A(\\d+)\\n//;",
  "    last if $size >= 0 && length($buf) >= $size;",
  "    sysread($ctl, $buf, 65536, length $buf) or exit 0;",
  "  }",
  '  my @items = split /\\0/, substr($buf, 0, $size, ""), -1;',
  "  my $argc = shift @items;",
  "  my @argv = splice @items, 0, $argc;",
  "  my $base = 4 + 4 * $call;",
  '  pipe(my $er, my $ew) or die "nerva-fork-server: pipe: $!\\n";',
  '  my $pid = fork() // die "nerva-fork-server: fork: $!\\n";',
  "  if ($pid == 0) {",
  // Reports errno on the pipe (closed by a successful exec) and gives up.
  '    my $fail = sub { syswrite($ew, ($! + 0) . ""); POSIX::_exit(127) };',
  "    my $keep = fileno $ew;",
  "    defined POSIX::dup2($base + $_, $_) or $fail->() for 0 .. 3;",
  "    POSIX::close($_) for grep { $_ != $keep } 4 .. $last;",
  // PR_CAPBSET_DROP each capability (EINVAL past the last one the kernel knows).
  "    for my $cap (0 .. 63) { next if syscall($prctl, 24, $cap, 0, 0, 0) == 0; last if $! == 22; $fail->() }",
  // PR_CAP_AMBIENT_CLEAR_ALL (EINVAL: a kernel without ambient capabilities).
  "    syscall($prctl, 47, 4, 0, 0, 0) == 0 or $! == 22 or $fail->();",
  "    syscall($capset, $head, $none_caps) == 0 or $fail->();",
  "    %ENV = map { /\\A([^=]*)=(.*)\\z/s ? ($1, $2) : () } @items;",
  "    { exec { $argv[0] } @argv }",
  "    $fail->();",
  "  }",
  "  close $ew;",
  "  POSIX::close($base + $_) for 0 .. 3;",
  "  my $status = 0;",
  "  while ((my $w = wait()) != -1) { if ($w == $pid) { $status = $?; last } }",
  '  kill "KILL", -1;',
  "  1 while wait() != -1;",
  '  my $err = "";',
  "  sysread($er, $err, 16);",
  "  close $er;",
  '  my $how = $err ne "" ? "E$err" : ($status & 127) ? "S" . ($status & 127) : "X" . ($status >> 8);',
  '  syswrite($ctl, "$call $how\\n");',
  "}",
  "exit 0;",
].join("\n");

/** The arguments after `perl -e <FORK_SERVER>`. */
export function forkServerArgs(calls: number, numbers: SyscallNumbers): string[] {
  return [String(calls), String(numbers.mount), String(numbers.prctl), String(numbers.capset)];
}

/**
 * Splits what a fork server wrote on its control socket into complete report lines; returns the
 * reports and the unfinished rest.
 */
export function parseServerReports(text: string): {
  reports: { call: number; report: InitReport }[];
  rest: string;
} {
  const reports: { call: number; report: InitReport }[] = [];
  let start = 0;
  for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
    const line = text.slice(start, end);
    start = end + 1;
    const space = line.indexOf(" ");
    const report = parseInitReport(line.slice(space + 1));
    if (space > 0 && report !== null) reports.push({ call: Number(line.slice(0, space)), report });
  }
  return { reports, rest: text.slice(start) };
}
