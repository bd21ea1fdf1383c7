// Whether this machine can make the sandbox (flow doctor, and flow run before any agent starts): bubblewrap on
// PATH and a kernel that lets it make its namespaces. Without them a run with `sandbox` refuses to start: an
// agent is never run unsandboxed in its place.
import { run } from "../cli/proc"

export type Probe = { ok: true; version: string } | { ok: false; what: string; hint: string }

const INSTALL = "install bubblewrap (Debian, Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap)"

/** Tries bwrap the way an agent's sandbox uses it (`network: none` included when `net`), on `env`'s PATH. */
export async function probeSandbox(env: Record<string, string | undefined>, net: boolean): Promise<Probe> {
  if (process.platform !== "linux")
    return {
      ok: false,
      what: `flow's sandbox is made with bubblewrap, which is Linux's: there is none on ${process.platform}`,
      hint: "run the sandboxed agents on Linux, or set 'sandbox: false' in flow.yaml (the agents then run with your rights)",
    }
  const bwrap = Bun.which("bwrap", { PATH: env.PATH ?? "" })
  if (!bwrap) return { ok: false, what: "bwrap (bubblewrap) is not on PATH, and flow.yaml asks for a sandbox", hint: INSTALL }
  const args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", ...(net ? ["--unshare-net"] : [])]
  const tried = await run([bwrap, ...args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"], { cwd: "/", env })
  if (tried.code !== 0)
    return {
      ok: false,
      what: `bwrap cannot make a sandbox here: ${tried.stderr.trim().split("\n").pop() || `exit ${tried.code}`}`,
      hint: "the kernel must allow user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0), or bwrap must be setuid",
    }
  const version = (await run([bwrap, "--version"], { cwd: "/", env })).stdout.trim()
  return { ok: true, version: version || "bwrap" }
}
