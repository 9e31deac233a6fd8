// Test support (not exported): finds the Docker engine and the test image for the container
// tests. Not a test file itself; the tests import it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, ".ci", "docker.sh"))) {
    const up = dirname(dir);
    if (up === dir)
      throw new Error("cannot find .ci/docker.sh above " + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

/**
 * The test image reference (built by `.ci/docker.sh --image` if missing), or `null` when no
 * Docker engine answers. In CI (CI=true) a missing engine is an error, never a skip; elsewhere
 * the reason is printed loudly.
 */
export async function dockerTestImage(suite: string): Promise<string | null> {
  const script = join(repoRoot(), ".ci", "docker.sh");
  const outcome = await new Promise<{ ok: boolean; stdout: string; stderr: string }>((resolve) => {
    execFile("bash", [script, "--image"], { timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ ok: err === null, stdout, stderr }),
    );
  });
  const image = outcome.stdout.trim().split("\n").pop() ?? "";
  if (outcome.ok && /^[\w.-]+:[\w.-]+$/.test(image)) return image;
  const reason = `no Docker engine / test image: ${outcome.stderr.trim() || "docker.sh printed no image"}`;
  if (process.env["CI"] === "true") {
    throw new Error(
      `${suite}: ${reason}. In CI the Docker tests must run: call .ci/docker.sh first.`,
    );
  }
  console.warn(
    `\n⚠️  SKIPPING ${suite}: ${reason}\n   Run .ci/docker.sh (as root) to install/start Docker and build the image.\n`,
  );
  return null;
}

/** The host's address on Docker's default bridge (what a bridged container can reach). */
export function dockerBridgeAddress(): string {
  const docker0 = networkInterfaces()["docker0"]?.find((a) => a.family === "IPv4");
  return docker0?.address ?? "172.17.0.1";
}
