// The tasks and model scripts every end-to-end test of a real agent CLI plays (agents-e2e-*.test.ts): the
// same scenarios for each CLI, so their results compare.
import type { Turn } from "./fixtures/model-server/server"

/** A task with two steps, its dependent, one that forgets `flow done` (its instructions test byte-exact
 * delivery) and one the API refuses with a 401. */
export const CHAIN = `tasks:
  - id: api
    title: API
    status: todo
    steps:
      - id: api.1
        instruction: Write api.txt
      - id: api.2
        instruction: Extend api.txt
  - id: web
    title: Web
    status: todo
    depends_on: [api]
    instructions: Build the page from api.txt.
  - id: lazy
    title: Lazy
    status: todo
    instructions: 'Say "hello" to   the "world" (quotes, ''single quotes'' and spaces must arrive as written).'
  - id: denied
    title: Denied
    status: todo
    instructions: Anything.
`

export const CHAIN_SCRIPTS: Record<string, Turn[]> = {
  api: [
    {
      commands: ["git status --short", "printf 'api 1\\n' > api.txt && git add api.txt && git commit -qm 'api: step 1'", "flow step done api.1"],
      text: "Step 1 done.",
    },
    { commands: ["printf 'api 2\\n' >> api.txt && git commit -qam 'api: step 2'", "flow step done api.2"], text: "Step 2 done." },
  ],
  web: [{ commands: ["cat api.txt", "printf 'web\\n' > web.txt && git add web.txt && git commit -qm web", "flow done web"] }],
  lazy: [{ commands: ["ls"], text: "I looked around." }, { text: "Still looking around." }],
  denied: [{ fail: { status: 401, message: "Incorrect API key provided: sk-bad" } }],
}

/**
 * `flow ask --wait` in a command; `flow ask` then exit; `flow ask` answered while the agent still works, which
 * exits without reading the answer (the run hands it over, as it does the one answered after the exit).
 */
export const ASKS = `tasks:
  - id: port
    title: Port
    status: todo
    instructions: Ask which port, and wait for the answer.
  - id: name
    title: Name
    status: todo
    instructions: Ask for a name, then exit to wait.
  - id: early
    title: Early
    status: todo
    instructions: Ask about indentation, then exit.
`

export const ASKS_SCRIPTS: Record<string, Turn[]> = {
  port: [{ commands: ['flow ask port "Which port should the server use?" --wait', "flow done port"] }],
  name: [{ commands: ['flow ask name "Which name?"'], text: "Asked; waiting for the answer." }, { commands: ["flow done name"] }],
  early: [
    // Works on until the answer is given (at most two minutes), and exits without reading it. No `$(...)`:
    // Gemini CLI refuses a command with a substitution ("Blocked: command substitution detected"), and the
    // agent then exited before the answer, which passed only when the answer came within that second.
    {
      commands: ['flow ask early "Tabs or spaces?"', "timeout 120 sh -c 'until flow questions --all | grep -q \"answer: Tabs\"; do sleep 0.2; done'"],
      text: "Asked; exiting now.",
    },
    { commands: ["flow done early"] },
  ],
}

/** A command that runs until the run is stopped. */
export const LONG = `tasks:
  - id: long
    title: Long
    status: todo
    instructions: Run the long job.
`

export const LONG_SCRIPTS: Record<string, Turn[]> = {
  long: [{ commands: ["touch started.txt && sleep 300"] }, { commands: ["flow done long"] }],
}
