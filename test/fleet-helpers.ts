// Many machines on one shared project, for the fleet tests (docs/FLEET.md): a bare repository as the shared
// remote, clones of it as machines (each with its own HOME and FLOW_MACHINE), a random graph of script agents
// that log what ran where, and the remote main's merges counted per task.
import { expect } from "bun:test"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gitDaemon } from "./git-daemon"
import { flow, git, tasksYaml } from "./helpers"

export const sh = (lines: string) => `\`\`\`sh\n${lines}\n\`\`\``

const id = (i: number) => `t${String(i + 1).padStart(2, "0")}`

/** The ids of `graph(n, ...)`'s tasks: t01, t02... */
export const taskIds = (n: number) => Array.from({ length: n }, (_, i) => id(i))

/**
 * A random DAG of `n` tasks (each depends on up to two earlier ones), seeded; each writes its file and a log
 * line when its work is done, and a line in `<log>.started` when it starts. `askAt`: the task (by index) that
 * asks a question first; `hook`: shell lines every task's work runs after its start is logged.
 */
export function graph(n: number, seed: number, log: string, sleep: number, o: { askAt?: number; hook?: string } = {}): string {
  let state = seed
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state / 2 ** 31
  }
  return tasksYaml(
    Array.from({ length: n }, (_, i) => {
      const deps = new Set<string>()
      for (let k = 0; k < 2; k++) if (i > 0 && random() < 0.6) deps.add(id(Math.floor(random() * i)))
      const ask = i === o.askAt ? 'flow ask "$FLOW_TASK_ID" "Which port?" --wait > work/port.txt\n' : ""
      return {
        id: id(i),
        title: `Task ${i + 1}`,
        status: "todo",
        ...(deps.size > 0 ? { depends_on: [...deps] } : {}),
        instructions: sh(
          `echo "$FLOW_TASK_ID $FLOW_ATTEMPT $FLOW_MACHINE" >> ${log}.started\n${o.hook ? `${o.hook}\n` : ""}${ask}sleep ${sleep}\nmkdir -p work\necho "$FLOW_TASK_ID attempt $FLOW_ATTEMPT on $FLOW_MACHINE" > work/$FLOW_TASK_ID.txt\necho "$FLOW_TASK_ID $FLOW_ATTEMPT $FLOW_MACHINE" >> ${log}`,
        ),
      }
    }),
  )
}

export type Fleet = {
  /** the folder holding everything of the fleet */
  root: string
  remote: string
  /** the tasks' log of finished work (`entries` reads it); `<log>.started` logs their starts */
  log: string
  clone: (machine: string) => Promise<{ path: string; env: Record<string, string> }>
  [Symbol.asyncDispose]: () => Promise<void>
}

/**
 * A bare remote holding a project shared in `dbUrl`, served on loopback (gitDaemon), and clones of it as
 * machines; `files`: more files of the project's first commit (a check's script).
 */
export async function fleet(dbUrl: string, tasks: (log: string) => string, flowYaml = "", files: Record<string, string> = {}): Promise<Fleet> {
  const root = mkdtempSync(join(tmpdir(), "flow-fleet-"))
  const remote = join(root, "remote.git")
  const log = join(root, "work.log")
  writeFileSync(log, "")
  writeFileSync(`${log}.started`, "")
  await git(root, ["init", "-q", "--bare", "-b", "main", remote])
  const seed = join(root, "seed")
  mkdirSync(seed)
  writeFileSync(join(seed, "tasks.yaml"), tasks(log))
  writeFileSync(join(seed, "flow.yaml"), flowYaml)
  for (const [name, text] of Object.entries(files)) writeFileSync(join(seed, name), text)
  await git(seed, ["init", "-q", "-b", "main"])
  await git(seed, ["add", "-A"])
  await git(seed, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-q", "-m", "initial"])
  const shared = await flow(seed, ["share", dbUrl, "--project", "shop"])
  expect({ code: shared.code, stderr: shared.stderr }).toEqual({ code: 0, stderr: "" })
  await git(seed, ["add", "-A"])
  await git(seed, ["-c", "user.name=t", "-c", "user.email=t@flow.invalid", "commit", "-q", "-m", "share the project"])
  await git(seed, ["push", "-q", remote, "main"])
  const daemon = await gitDaemon(root)
  return {
    root,
    remote,
    log,
    clone: async (machine) => {
      const path = join(root, machine)
      await git(root, ["clone", "-q", daemon.url("remote.git"), path])
      const home = join(root, `${machine}-home`)
      mkdirSync(home)
      return {
        path,
        env: {
          FLOW_MACHINE: machine,
          HOME: home,
          GIT_AUTHOR_NAME: machine,
          GIT_AUTHOR_EMAIL: `${machine}@flow.invalid`,
          GIT_COMMITTER_NAME: machine,
          GIT_COMMITTER_EMAIL: `${machine}@flow.invalid`,
        },
      }
    },
    [Symbol.asyncDispose]: async () => {
      await daemon.stop()
      rmSync(root, { recursive: true, force: true })
    },
  }
}

export const RUN = ["run", "--cli", "script", "--agents", "2", "--headless"]

/** The log's lines: task, attempt, machine. */
export const entries = (log: string) =>
  readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => {
      const [task, attempt, machine] = l.split(" ")
      return { task, attempt: Number(attempt), machine }
    })

/** The remote main's merges per task (flow's merge subjects end with ": <task id>"). */
export async function mergesPerTask(remote: string): Promise<Map<string, number>> {
  const subjects = (await git(remote, ["log", "--merges", "--format=%s", "main"])).trim().split("\n").filter(Boolean)
  const counts = new Map<string, number>()
  for (const s of subjects) {
    const id = /: (t\d\d)$/.exec(s)?.[1]
    if (id) counts.set(id, (counts.get(id) ?? 0) + 1)
  }
  return counts
}

/** Every task's status, as `flow list --json` reads it on a machine. */
export async function statuses(machine: { path: string; env: Record<string, string> }): Promise<Record<string, string>> {
  const listed = await flow(machine.path, ["list", "--json"], { env: machine.env })
  expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" })
  const tasks: { id: string; status: string }[] = JSON.parse(listed.stdout).phases.flatMap((p: { tasks: unknown[] }) => p.tasks)
  return Object.fromEntries(tasks.map((t) => [t.id, t.status]))
}

/** The tasks not done, each with its status and notes: what a test that expects every task done shows when one is not. */
export async function undone(machine: { path: string; env: Record<string, string> }): Promise<{ id: string; status: string; notes?: string[] }[]> {
  const open = Object.entries(await statuses(machine)).filter(([, status]) => status !== "done")
  return Promise.all(
    open.map(async ([id, status]) => {
      const task = JSON.parse((await flow(machine.path, ["show", id, "--json"], { env: machine.env })).stdout).task
      return { id, status, notes: task.ai_notes }
    }),
  )
}
