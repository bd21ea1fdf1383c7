#!/usr/bin/env bun
// The entry: argv → command → exit code. The only file that reads process.argv or sets the exit code.
// Command modules load lazily: agents call flow many times a minute, and start-up must not pay for
// libraries (arktype alone costs about 0.25 s) that a command does not use. The static imports below are
// what `flow --version` loads, so they stay small: node:util (args), node:fs (project) and picocolors (which
// builds process.stdout to read isTTY) load only on the paths that use them (docs/PERFORMANCE.md, "Start-up").
import type { Command } from "./lib/cli/args"
import { ctxFromProcess, type Ctx } from "./lib/cli/context"
import { Exit, FlowError, usage } from "./lib/cli/errors"
import { closest } from "./lib/cli/suggest"
import { versionLine } from "./lib/cli/version"

type Entry = { group: string; summary: string; load: () => Promise<Command> }

/** Every command, grouped by lifecycle step; the order is the order of `flow --help`. */
export const COMMANDS: Record<string, Entry> = {
  create: {
    group: "Start",
    summary: "create a project folder (a git repository) with PRD.md, plan.md, GUIDELINES.md and flow.yaml",
    load: () => import("./commands/create"),
  },
  init: {
    group: "Start",
    summary: "add PRD.md, plan.md, GUIDELINES.md and flow.yaml to an existing folder, touching nothing there",
    load: () => import("./commands/init"),
  },
  demo: { group: "Start", summary: "build the sample project and run it to the end with offline agents", load: () => import("./commands/demo") },
  refine: {
    group: "Plan",
    summary: "review PRD.md or plan.md offline, fix findings, then talk it over with an agent",
    load: () => import("./commands/refine"),
  },
  plan: { group: "Plan", summary: "write plan.md from PRD.md, with an agent CLI or as an offline skeleton", load: () => import("./commands/plan") },
  generate: { group: "Plan", summary: "turn plan.md into tasks.yaml, keeping the progress of tasks that survive", load: () => import("./commands/generate") },
  validate: { group: "Check", summary: "check tasks.yaml: ids, fields, dependencies, cycles", load: () => import("./commands/validate") },
  schema: { group: "Check", summary: "print the JSON Schema of tasks.yaml", load: () => import("./commands/schema") },
  list: { group: "Read", summary: "list the tasks grouped by phase, optionally only those with one status", load: () => import("./commands/list") },
  show: { group: "Read", summary: "show one task: fields, dependencies, notes, steps and subtasks", load: () => import("./commands/show") },
  view: {
    group: "Read",
    summary: "open the task graph inspector in the browser (dependencies, details, prompts, questions)",
    load: () => import("./commands/view"),
  },
  dashboard: {
    group: "Read",
    summary: "a live status display: counts, running and recently completed tasks, what needs you",
    load: () => import("./commands/dashboard"),
  },
  next: { group: "Read", summary: "list the tasks that may be taken now, for any agent or for one", load: () => import("./commands/next") },
  note: { group: "Change", summary: "append a note to a task's ai_notes", load: () => import("./commands/note") },
  ready: { group: "Change", summary: "mark a task ready_for_agent", load: () => import("./commands/status").then((m) => m.statusCommand("ready")) },
  start: {
    group: "Change",
    summary: "mark a task in_progress (sets started_at)",
    load: () => import("./commands/status").then((m) => m.statusCommand("start")),
  },
  done: {
    group: "Change",
    summary: "mark a task done; promotes dependents, completes parents",
    load: () => import("./commands/status").then((m) => m.statusCommand("done")),
  },
  block: {
    group: "Change",
    summary: "mark a task blocked, with an optional reason",
    load: () => import("./commands/status").then((m) => m.statusCommand("block")),
  },
  todo: { group: "Change", summary: "mark a task todo", load: () => import("./commands/status").then((m) => m.statusCommand("todo")) },
  reset: { group: "Change", summary: "put a task (or every stuck task) back to todo for a retry", load: () => import("./commands/reset") },
  assign: { group: "Change", summary: "restrict a task to one named agent", load: () => import("./commands/assign") },
  step: { group: "Steps", summary: "start, finish, show and list the steps of a task", load: () => import("./commands/step") },
  ask: { group: "Questions", summary: "ask a person a question about a task (for agents; --wait for the answer)", load: () => import("./commands/ask") },
  questions: { group: "Questions", summary: "list the questions waiting for an answer", load: () => import("./commands/questions") },
  answer: { group: "Questions", summary: "answer a question an agent asked", load: () => import("./commands/answer") },
  review: {
    group: "Questions",
    summary: "list, show, approve or ask changes of the merges that wait for review (flow.yaml review)",
    load: () => import("./commands/review"),
  },
  run: { group: "Run", summary: "run agents on the task graph, each task in its own worktree", load: () => import("./commands/run") },
  log: { group: "Run", summary: "print the latest run's log, or one task's lines across runs; --follow a live run", load: () => import("./commands/log") },
  agents: { group: "Run", summary: "the agents, their current task and completed count", load: () => import("./commands/agents") },
  repo: { group: "Run", summary: "list or remove the git worktrees of a repository", load: () => import("./commands/repo") },
  doctor: {
    group: "Run",
    summary: "check what a run needs (git, the agent CLIs, setup programs, flow on the agents' PATH) and say what to fix",
    load: () => import("./commands/doctor"),
  },
  prompt: { group: "Run", summary: "print the exact prompt an agent receives for a task", load: () => import("./commands/prompt") },
  mcp: {
    group: "Run",
    summary: "serve the task graph to MCP clients (Claude Code, Codex, Cursor, VS Code) as tools, on stdio or loopback HTTP",
    load: () => import("./commands/mcp"),
  },
  share: {
    group: "Share",
    summary: "move the project's tasks and run state into a PostgreSQL database that many machines share",
    load: () => import("./commands/share"),
  },
  export: { group: "Share", summary: "write the task graph as tasks.yaml text (a shared project's, comments kept)", load: () => import("./commands/export") },
  unshare: { group: "Share", summary: "move a shared project back to tasks.yaml and .flow/state.db", load: () => import("./commands/unshare") },
  completion: {
    group: "Setup",
    summary: "print the bash, zsh or fish completion script",
    load: () => import("./commands/completion").then((m) => m.completionCommand(COMMANDS)),
  },
}

/**
 * `flow help <topic>` for what is not a command: the references a user of the binary alone needs, who has
 * no docs/ folder. Embedded text, so a topic and the file it documents cannot drift apart; imported when asked
 * for, so the 7.6 KB of flow.yaml is not in the entry chunk every command loads.
 */
const TOPICS: Record<string, { summary: string; text: () => Promise<string> }> = {
  config: {
    summary: "flow.yaml: every field, what it does and its default (the file 'flow create' writes)",
    text: () => import("./lib/templates/flow.yaml", { with: { type: "text" } }).then((m) => m.default),
  },
}

const GLOBAL_HELP_FOOTER = `Global options:
  -C <dir>        run as if flow was started in <dir>
  -h, --help      show help (also: flow <command> --help)
  -V, --version   print flow's version, the git commit and the platform it was built for

The project is the nearest folder (from the working directory up) holding tasks.yaml or PRD.md;
FLOW_PROJECT overrides it. Exit codes: 0 ok, 1 failure (or validate found errors), 2 usage,
3 tasks.yaml or config missing or invalid, 4 a run finished with failed tasks, 130 cancelled.
`

function globalHelp(): string {
  const groups = new Map<string, [string, Entry][]>()
  for (const [name, entry] of Object.entries(COMMANDS)) groups.set(entry.group, [...(groups.get(entry.group) ?? []), [name, entry]])
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length))
  const out = [
    "flow: from a requirements document to merged code, with coding agents working a task graph",
    "",
    "Usage: flow [-C <dir>] <command> [arguments]",
    "",
  ]
  for (const [group, entries] of groups) {
    out.push(`${group}:`)
    for (const [name, entry] of entries) out.push(`  ${name.padEnd(width)}  ${entry.summary}`)
    out.push("")
  }
  out.push("Help topics (flow help <topic>):")
  for (const [name, topic] of Object.entries(TOPICS)) out.push(`  ${name.padEnd(width)}  ${topic.summary}`)
  out.push("")
  return `${out.join("\n")}\n${GLOBAL_HELP_FOOTER}`
}

/** Runs one command line; returns the exit code. Tests call this in-process with their own ctx. */
export async function main(ctx: Ctx, argv: string[]): Promise<number> {
  const json = argv.includes("--json")
  try {
    let args = [...argv]
    while (args[0] === "-C") {
      const dir = args[1]
      if (!dir) throw usage("-C needs a folder", "usage: flow -C <dir> <command> ...")
      const [{ folderArgument }, { resolve }] = await Promise.all([import("./lib/cli/project"), import("node:path")])
      ctx = { ...ctx, cwd: folderArgument(dir, resolve(ctx.cwd, dir)) }
      args = args.slice(2)
    }
    const [name, ...rest] = args
    if (name === undefined || name === "-h" || name === "--help" || name === "help") {
      const wanted = name === "help" ? rest[0] : undefined
      if (wanted !== undefined && Object.hasOwn(TOPICS, wanted)) {
        ctx.stdout(await TOPICS[wanted].text())
        return Exit.ok
      }
      if (wanted !== undefined && !Object.hasOwn(COMMANDS, wanted)) {
        const near = closest(wanted, [...Object.keys(COMMANDS), ...Object.keys(TOPICS)])
        throw usage(`no command or help topic '${wanted}'`, `${near ? `did you mean 'flow help ${near}'? ` : ""}run 'flow --help' for the list`)
      }
      if (wanted !== undefined) return main(ctx, [wanted, "--help"])
      // Bare `flow` is a usage error: the help goes to stderr so a script piping stdout sees nothing odd.
      if (name === undefined) ctx.stderr(globalHelp())
      else ctx.stdout(globalHelp())
      return name === undefined ? Exit.usage : Exit.ok
    }
    if (name === "-V" || name === "--version" || name === "version") {
      await (ctx.only ?? ctx.stdout)(`${versionLine()}\n`)
      return Exit.ok
    }
    // The completion scripts' id source: hidden from the help, as people never type it.
    if (name === "__complete") return (await import("./commands/complete").then((m) => m.run(ctx, rest)), Exit.ok)
    // Inside an agent's sandbox, commands go to the run through its door (lib/sandbox/door.ts), which says which may.
    if (ctx.env.FLOW_DOOR) return (await import("./lib/sandbox/door-client")).throughDoor(ctx, ctx.env.FLOW_DOOR, args)
    const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
    if (!entry) {
      const near = closest(name, Object.keys(COMMANDS))
      throw usage(`unknown command '${name}'`, `${near ? `did you mean 'flow ${near}'? ` : ""}run 'flow --help' for the list of commands`)
    }
    const command = await entry.load()
    if (rest.includes("--help") || rest.includes("-h")) {
      const { commandHelp } = await import("./lib/cli/args")
      ctx.stdout(commandHelp(entry.summary, command.meta))
      return Exit.ok
    }
    return (await command.run(ctx, rest)) ?? Exit.ok
  } catch (e) {
    if (!(e instanceof FlowError)) throw e
    if (json) ctx.stderr(`${JSON.stringify({ error: e.message, hint: e.hint, exit: e.exit })}\n`)
    else {
      const c = (await import("./lib/terminal/colour")).colours(ctx)
      ctx.stderr(`${c.red(c.bold("error:"))} ${e.message}\n${e.hint ? `${c.dim("hint:")} ${e.hint}\n` : ""}`)
    }
    return e.exit
  }
}

if (import.meta.main) {
  const code = await main(ctxFromProcess(), process.argv.slice(2))
  process.exitCode = code
}
