// `flow completion bash|zsh|fish` loaded into the real shells (Debian's bash, zsh and fish; scripts/test-deps.sh
// installs them): bash completion driven through its completion function and compgen, fish through
// `complete -C`, zsh loaded through bashcompinit. Task and step ids come from tasks.yaml via `flow __complete`.
import { expect, test } from "bun:test"
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { flow, flowArgv, tasksYaml, tempRepo } from "./helpers"

const TASKS = tasksYaml([
  {
    id: "api-layer",
    title: "API",
    status: "todo",
    steps: [
      { id: "api-layer.1", instruction: "a" },
      { id: "api-layer.2", instruction: "b" },
    ],
  },
  { id: "web", title: "Web", status: "in_progress", instructions: "w", subtasks: [{ id: "web-form", title: "Form", status: "todo", instructions: "f" }] },
])

/** A repo holding a project in `proj/`, the three scripts, and a `flow` on a PATH of its own (the scripts call it). */
async function setup() {
  const dir = await tempRepo({ "proj/tasks.yaml": TASKS })
  mkdirSync(dir.file("bin"))
  const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`
  writeFileSync(dir.file("bin/flow"), `#!/bin/sh\nexec ${flowArgv().map(quote).join(" ")} "$@"\n`)
  chmodSync(dir.file("bin/flow"), 0o755)
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await flow(dir.path, ["completion", shell])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    dir.write(`completion.${shell}`, r.stdout)
  }
  return Object.assign(dir, { env: { ...process.env, PATH: `${dir.file("bin")}:${process.env.PATH}`, NO_COLOR: "1" } as Record<string, string> })
}

async function shell(argv: string[], cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn(argv, { cwd, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

test.concurrent("bash completes commands, flags, statuses, task ids and step ids, also under -C", async () => {
  await using dir = await setup()
  // Each case sets the words of the command line as bash would and calls the registered function.
  const cases: [string, string[]][] = [
    ["flow sh", ["show", "share"]],
    ["flow s", ["schema", "show", "start", "step", "share"]],
    ["flow show ", ["api-layer", "web", "web-form"]],
    ["flow done w", ["web", "web-form"]],
    ["flow step ", ["start", "done", "show", "list"]],
    ["flow step done ", ["api-layer.1", "api-layer.2"]],
    ["flow step list a", ["api-layer"]],
    ["flow run --a", ["--agents"]],
    ["flow list in", ["in_progress"]],
    ["flow completion ", ["bash", "zsh", "fish"]],
    ["flow -C proj show a", ["api-layer"]],
    ["flow show --json ", ["api-layer", "web", "web-form"]],
    ["flow run --agents 2 ", []],
    ["flow run --cli ", []],
  ]
  const script = [
    "source completion.bash",
    "complete -p flow",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash source, where ${...} is bash's own expansion
    'c() { read -ra COMP_WORDS <<< "$1"; [[ $1 == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _flow_complete; echo "$1|${COMPREPLY[*]}"; }',
    ...cases.map(([line]) => `c '${line}'`),
  ].join("\n")
  // From proj/ for the ids, except the -C case, which must find proj/ from the repository's top.
  const top = await shell(["bash", "--norc", "--noprofile", "-c", script], dir.path, dir.env)
  const inProj = await shell(["bash", "--norc", "--noprofile", "-c", script.replaceAll("completion.bash", "../completion.bash")], dir.file("proj"), dir.env)
  expect(top.stderr + inProj.stderr).toBe("")
  const answers = (out: string) =>
    Object.fromEntries(
      out
        .split("\n")
        .slice(1, -1)
        .map((l) => [l.split("|")[0], l.split("|")[1].split(" ").filter(Boolean)]),
    )
  expect(top.stdout.split("\n")[0]).toBe("complete -o default -F _flow_complete flow")
  const got = answers(inProj.stdout)
  got["flow -C proj show a"] = answers(top.stdout)["flow -C proj show a"]
  expect(got).toEqual(Object.fromEntries(cases))
  // Outside any project the ids are simply absent: no error text reaches the terminal.
  expect(answers(top.stdout)["flow show "]).toEqual([])
})

test.concurrent("fish completes commands with their summaries, flags, task ids and step ids", async () => {
  await using dir = await setup()
  const lines = ["flow sh", "flow show ", "flow step done ", "flow run --c"]
  const r = await shell(
    ["fish", "--no-config", "-c", ["source ../completion.fish", ...lines.map((l) => `echo '# ${l}'; complete -C '${l}'`)].join("\n")],
    dir.file("proj"),
    dir.env,
  )
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
  expect(r.stdout).toBe(`# flow sh
share	move the project's tasks and run state into a PostgreSQL database that many machines share
show\tshow one task: fields, dependencies, notes, steps and subtasks
# flow show 
api-layer
web
web-form
# flow step done 
api-layer.1
api-layer.2
# flow run --c
--checks\tat most this many merge-queue checks at once on this machine (default: as many as tasks; 0, on a shared project: other machines run them)
--cli\tthe agent CLI for --agents: script, claude, codex, gemini, opencode, ...
`)
})

test.concurrent("zsh loads the script without error and registers the completion for flow", async () => {
  await using dir = await setup()
  const r = await shell(["zsh", "-f", "-c", "source completion.zsh && print -r -- loaded $_comps[flow]"], dir.path, { ...dir.env, HOME: dir.path })
  expect(r).toEqual({ code: 0, stdout: "loaded _bash_complete -o default -F _flow_complete\n", stderr: "" })
})

test.concurrent("an unknown shell is a usage error; __complete prints nothing outside a project and is not in the help", async () => {
  await using dir = await tempRepo()
  expect(await flow(dir.path, ["completion", "tcsh"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: unknown shell 'tcsh'\nhint: use one of bash, zsh, fish\n",
  })
  expect(await flow(dir.path, ["__complete", "tasks"])).toEqual({ code: 0, stdout: "", stderr: "" })
  expect((await flow(dir.path, ["--help"])).stdout).not.toContain("__complete")
})
