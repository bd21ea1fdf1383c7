// The doctor's check of what preparing worktrees (and a merge's check) needs (lib/ops/doctor.ts lists every
// check): the programs of flow.yaml's setup, teardown and verify, on PATH or in the repository they run in.
import { existsSync } from "node:fs"
import { isAbsolute, resolve } from "node:path"
import type { Project } from "../cli/project"
import { type FlowConfig, repoEntries } from "../config/config"
import { repoRoot } from "../git/git"
import { insideProject } from "../git/workspace"
import { programsOf } from "./shell-programs"

/** A finding's weight: a `fail` stops `flow run`, a `warn` is said and the run goes on. */
export type DoctorState = "ok" | "warn" | "fail"
/** One finding: `what` is one sentence; a failed one names its fix in `hint`. */
export type DoctorLine = { state: DoctorState; what: string; hint?: string }

/** What the check reads of the doctor's input (lib/ops/doctor.ts DoctorInput). */
export type ProgramsInput = { project: Pick<Project, "dir">; config: FlowConfig; env: Record<string, string | undefined> }

/** The programs of setup, teardown and verify: on PATH, or (a path) in the repository they run in. */
export async function commandPrograms(i: ProgramsInput): Promise<DoctorLine[]> {
  const fields = ["setup", "teardown", "verify"] as const
  const entries = fields.flatMap((field) => repoEntries(i.config, field).map((e) => ({ field, e })))
  return Promise.all(
    entries.map(async ({ field, e }): Promise<DoctorLine> => {
      const label = `${field}${e.repo ? ` of ${e.repo}` : ""} '${typeof e.command === "string" ? e.command : e.command.join(" ")}'`
      const programs = programsOf(e.command)
      const missing: string[] = []
      const absent: string[] = []
      for (const program of programs) {
        if (program.includes("/")) {
          // A file of the repository may come with the task's branch, or from the command's own first step: said, not fatal.
          const root = await repoOf(i, e.repo)
          const path = isAbsolute(program) ? program : resolve(root ?? i.project.dir, program)
          if (!existsSync(path)) absent.push(`'${program}' is not in ${isAbsolute(program) ? "this machine's files" : (root ?? i.project.dir)}`)
        } else if (!Bun.which(program, { PATH: i.env.PATH ?? "" })) missing.push(`'${program}'`)
      }
      if (missing.length)
        return {
          state: "fail",
          what: `${label} needs ${missing.join(", ")}, not on PATH`,
          hint: `install ${missing.length === 1 ? "it" : "them"}, or change flow.yaml's ${field}`,
        }
      if (absent.length) return { state: "warn", what: `${label}: ${absent.join("; ")}` }
      return { state: "ok", what: `${label}${programs.length ? `: ${programs.join(", ")} found` : ""}` }
    }),
  )
}

/** The top folder of the repository an entry names (or the default repository's), where its commands run. */
export async function repoOf(i: Pick<ProgramsInput, "project" | "config">, repo: string | undefined): Promise<string | undefined> {
  const named = repo ?? i.config.repo
  try {
    return await repoRoot(named === undefined ? i.project.dir : insideProject(i.project.dir, named, "flow.yaml: repo"))
  } catch {
    return undefined // a repository that is not there: the run says so itself
  }
}
