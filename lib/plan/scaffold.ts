// The files a new flow project starts with, for `flow create` (a new folder) and `flow init` (an existing one).
import { lstatSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import flowYaml from "../templates/flow.yaml" with { type: "text" }
import guidelines from "../templates/GUIDELINES.md" with { type: "text" }
import prd from "../templates/PRD.md" with { type: "text" }

/** File name → content, in the order they are listed to the user. */
export function projectFiles(name: string): Record<string, string> {
  const fill = (t: string) => t.replaceAll("{{name}}", name)
  return { "PRD.md": fill(prd), "plan.md": "", "GUIDELINES.md": fill(guidelines), "flow.yaml": flowYaml }
}

/**
 * Writes each of the project files that `dir` lacks and returns which were added and which kept. Anything
 * already at a name (a file, a folder, a dangling link) is kept as it is; "wx" makes the write itself refuse
 * to replace a file that appeared meanwhile.
 */
export function addMissing(dir: string, name: string): { added: string[]; kept: string[] } {
  const added: string[] = []
  const kept: string[] = []
  for (const [file, text] of Object.entries(projectFiles(name))) {
    const path = join(dir, file)
    if (exists(path)) {
      kept.push(file)
      continue
    }
    try {
      writeFileSync(path, text, { flag: "wx" })
      added.push(file)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
      kept.push(file)
    }
  }
  return { added, kept }
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}
