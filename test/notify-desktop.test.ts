// The desktop destination for real (docs/NOTIFY.md, "The desktop"): notify-send (Debian's libnotify-bin)
// against a notification server on a session D-Bus the test starts (dbus-daemon, and a small server in
// Python's dbus bindings: test/fixtures/notification-daemon.py), with a run driven by the script agent.
import { expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { flow, ROOT, tasksYaml, tempRepo } from "./helpers"

/** The first line a process prints. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder()
  let text = ""
  for await (const chunk of stream) {
    text += decoder.decode(chunk, { stream: true })
    if (text.includes("\n")) break
  }
  return text.split("\n")[0]
}

/** A session bus and a notification server on it; the file the server writes each notification to. */
async function sessionBus(dir: string) {
  const bus = Bun.spawn(["dbus-daemon", "--session", "--nofork", "--print-address=1", `--address=unix:path=${join(dir, "bus")}`], {
    stdout: "pipe",
    stderr: "ignore",
  })
  const address = await firstLine(bus.stdout)
  const shown = join(dir, "shown.jsonl")
  const server = Bun.spawn(["/usr/bin/python3", join(ROOT, "test/fixtures/notification-daemon.py"), shown], {
    env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: address },
    stdout: "pipe",
    stderr: "inherit",
  })
  expect(await firstLine(server.stdout)).toBe("ready")
  return {
    address,
    shown: () =>
      existsSync(shown)
        ? readFileSync(shown, "utf8")
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : [],
    stop: async () => {
      server.kill()
      bus.kill()
      await Promise.all([server.exited, bus.exited])
    },
  }
}

test("a blocked task is shown on the desktop through notify-send", async () => {
  const scratch = mkdtempSync(join(tmpdir(), "flow-desktop-"))
  const bus = await sessionBus(scratch)
  try {
    await using dir = await tempRepo({
      "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", instructions: "```sh\nexit 3\n```" }]),
      "flow.yaml": "retries: 0\nnotify:\n  - { desktop: true, on: [blocked] }\n",
    })
    const r = await flow(dir.path, ["run", "--agents", "1", "--cli", "script", "--headless"], { env: { DBUS_SESSION_BUS_ADDRESS: bus.address } })
    expect(r.code).toBe(4)
    expect(r.stdout).not.toContain("notify:")
    expect(bus.shown()).toEqual([
      {
        app_name: "flow",
        summary: `flow ${basename(dir.path)}: api is blocked`,
        body: "task api is blocked ('flow show api' says why; reset it to try again)\n  → flow reset api",
        hints: expect.objectContaining({ urgency: 2 }),
      },
    ])
  } finally {
    await bus.stop()
    rmSync(scratch, { recursive: true, force: true })
  }
})
