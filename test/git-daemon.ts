// A git daemon serving bare repositories on loopback (pushes allowed), for the fleet tests and the fleet
// landing bench: the shared remote as a host of its own. Nothing here needs the test runner.

/**
 * Serves the bare repositories under `root` over git's own protocol on loopback, pushes allowed: the remote
 * of a fleet, as a host of its own. A clone's push then ends in the daemon's receive-pack, not in a child of
 * the run: a test that kills a run's whole process group kills what a dying machine would, and the remote
 * cleans up after it as a server does (a local-path remote's receive-pack, killed with the run, left
 * `refs/heads/main.lock` in the remote, and every later push failed on it).
 */
export async function gitDaemon(root: string): Promise<{ url: (repo: string) => string; stop: () => Promise<void> }> {
  for (let attempt = 1; ; attempt++) {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
    const port = probe.port
    probe.stop(true)
    const daemon = Bun.spawn(
      ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", `--port=${port}`, `--base-path=${root}`, "--export-all", "--enable=receive-pack", root],
      { stdout: "ignore", stderr: "ignore" },
    )
    const url = (repo: string) => `git://127.0.0.1:${port}/${repo}`
    const stop = async () => {
      daemon.kill()
      await daemon.exited
    }
    for (let i = 0; i < 100 && daemon.exitCode === null; i++) {
      const probed = Bun.spawnSync(["git", "ls-remote", url("remote.git")], { stdout: "ignore", stderr: "ignore" })
      if (probed.exitCode === 0) return { url, stop }
      await Bun.sleep(50)
    }
    await stop()
    if (attempt === 3) throw new Error(`git daemon did not serve ${root} on 127.0.0.1:${port}`)
  }
}
