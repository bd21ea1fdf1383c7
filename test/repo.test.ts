// `flow repo worktree list|remove <repo>`: <repo> is a repository flow knows (SPEC 4 says a repository name),
// by its path as flow.yaml or a task writes it or by its folder's name, or else a folder of the project.
import { expect, test } from "bun:test"
import { existsSync, realpathSync, renameSync } from "node:fs"
import { join } from "node:path"
import { background, flow, git, tasksYaml, tempRepo } from "./helpers"

/** A project whose task works in repos/app, a repository of its own with a worktree on branch flow/api. */
async function projectWithApp() {
  const dir = await tempRepo({
    "tasks.yaml": tasksYaml([{ id: "api", title: "API", status: "todo", repo: "repos/app", instructions: "x" }]),
    "flow.yaml": "verify: { repo: repos/web/, command: 'true' }\n",
    "repos/app/README.md": "app\n",
    "repos/web/README.md": "web\n",
    "src/main.ts": "\n",
  })
  for (const name of ["app", "web"]) {
    const repo = dir.file(`repos/${name}`)
    await git(repo, ["init", "-q", "-b", "main"])
    await git(repo, ["add", "-A"])
    await git(repo, ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "initial"])
  }
  await git(dir.file("repos/app"), ["worktree", "add", "-q", "-b", "flow/api", dir.file(".flow/worktrees/api")])
  return dir
}

test.concurrent("<repo> may be a known repository's name or path, or any folder of the project", async () => {
  await using dir = await projectWithApp()
  const listed = { code: 0, stdout: "flow/api  .flow/worktrees/api\n", stderr: "" }
  expect(await flow(dir.path, ["repo", "worktree", "list", "app"])).toEqual(listed)
  expect(await flow(dir.path, ["repo", "worktree", "list", "repos/app"])).toEqual(listed)
  expect(await flow(dir.path, ["repo", "worktree", "list", "./repos/app/"])).toEqual(listed)
  // web is known from flow.yaml's verify; src is no repository of its own but a folder in the project's.
  expect(await flow(dir.path, ["repo", "worktree", "list", "web"])).toEqual({ code: 0, stdout: "No worktrees.\n", stderr: "" })
  expect(await flow(dir.path, ["repo", "worktree", "list", "src"])).toEqual({ code: 0, stdout: "No worktrees.\n", stderr: "" })
  expect(await flow(dir.path, ["repo", "worktree", "remove", "app", "flow/api"])).toEqual({
    code: 0,
    stdout: "Removed the worktree of flow/api (.flow/worktrees/api); the branch is kept.\n",
    stderr: "",
  })
  expect(await flow(dir.path, ["repo", "worktree", "list", "app"])).toEqual({ code: 0, stdout: "No worktrees.\n", stderr: "" })
})

test.concurrent("an unknown <repo> is a usage error with the closest name and the repositories flow knows", async () => {
  await using dir = await projectWithApp()
  expect(await flow(dir.path, ["repo", "worktree", "list", "ap"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: no repository or folder 'ap' in this project\nhint: did you mean 'repos/app'? the repositories flow knows: repos/app, repos/web\n",
  })
  expect(await flow(dir.path, ["repo", "worktree", "remove", "nothing-like-it", "flow/api"])).toEqual({
    code: 2,
    stdout: "",
    stderr: "error: no repository or folder 'nothing-like-it' in this project\nhint: the repositories flow knows: repos/app, repos/web\n",
  })
  // A known repository whose folder is gone is named as given and as resolved.
  renameSync(dir.file("repos/web"), dir.file("repos/site"))
  expect(await flow(dir.path, ["repo", "worktree", "list", "web"])).toEqual({
    code: 2,
    stdout: "",
    stderr: `error: the folder web (${join(realpathSync(dir.path), "repos/web")}) does not exist\nhint: <repo> is a repository flow knows (flow.yaml's 'repo', a task's 'repo'), a folder relative to the project, or '.'\n`,
  })
})

test.concurrent("remove runs flow.yaml's teardown of that repository in the worktree first, and not when git would refuse the removal", async () => {
  await using dir = await projectWithApp()
  dir.write("flow.yaml", "teardown:\n  - { repo: repos/app, command: 'echo \"bye $FLOW_TASK_ID from $(basename $PWD)\"; echo down > ../down.txt' }\n")
  dir.write(".flow/worktrees/api/draft.txt", "unsaved\n")
  const refused = await flow(dir.path, ["repo", "worktree", "remove", "app", "flow/api"])
  expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: "" })
  expect(refused.stderr).toStartWith("error: the worktree ")
  expect(dir.read(".flow/worktrees/api/draft.txt")).toBe("unsaved\n")
  expect(await flow(dir.path, ["repo", "worktree", "remove", "app", "flow/api", "--force"])).toEqual({
    code: 0,
    stdout: `teardown 'echo "bye $FLOW_TASK_ID from $(basename $PWD)"; echo down > ../down.txt'\n  bye api from api\nRemoved the worktree of flow/api (.flow/worktrees/api); the branch is kept.\n`,
    stderr: "",
  })
  expect(dir.read(".flow/worktrees/down.txt")).toBe("down\n")
})

test.concurrent("remove --force, and reset, refuse the worktree of an agent at work in a live run, naming the run", async () => {
  await using dir = await tempRepo({
    ".gitignore": ".flow/\n",
    // The agent works until the test lets it finish: it waits for a file the test writes.
    "tasks.yaml": tasksYaml([{ id: "long", title: "Long", status: "todo", instructions: '```sh\nwhile [ ! -e "$FLOW_PROJECT/go" ]; do sleep 0.1; done\n```' }]),
  })
  const run = background(dir.path, ["run", "--headless", "--agents", "1", "--cli", "script"])
  try {
    await run.waitFor("long: started by script-1")
    const who = `script-1 of a live 'flow run' (pid ${run.proc.pid}, since `
    const removed = await flow(dir.path, ["repo", "worktree", "remove", ".", "flow/long", "--force"])
    expect({ code: removed.code, stdout: removed.stdout }).toEqual({ code: 1, stdout: "" })
    expect(removed.stderr).toContain(`error: ${who}`)
    expect(removed.stderr).toContain("is at work on task 'long': removing it would pull its worktree from under it\n")
    expect(removed.stderr).toContain(
      "hint: stop that run first (q or Ctrl-C where it runs; the next 'flow run' resumes the task here), or stop it and run 'flow reset long'",
    )
    expect(existsSync(dir.file(".flow/worktrees/long"))).toBe(true)
    const reset = await flow(dir.path, ["reset", "long"])
    expect({ code: reset.code, stdout: reset.stdout }).toEqual({ code: 1, stdout: "" })
    expect(reset.stderr).toContain("is at work on task 'long': a retry from the target would pull its worktree from under it\n")
    expect(dir.read("tasks.yaml")).toContain("status: in_progress")
  } finally {
    dir.write("go", "")
    await run.done()
  }
  expect(dir.read("tasks.yaml")).toContain("status: done")
})
