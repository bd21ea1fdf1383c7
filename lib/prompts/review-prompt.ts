// What an agent reviewer is told (docs/REVIEW.md, "Agent reviewers"): the task as its author was given it, the
// candidate's evidence and diff, and the two commands that decide, the ones a person runs.
import type { ReviewReport } from "../model/json-shapes"

/** A diff longer than this is cut, with the command that shows it whole: the prompt must fit the CLI. */
const MAX_DIFF = 200_000

export type ReviewInput = {
  report: ReviewReport
  task: { id: string; title: string; instructions?: string }
  /** the task's author (the agent that last worked on it), when known */
  author: string | null
  /** the evidence as `flow show` prints it */
  evidence: string[]
  repo: string
}

/** The reviewer's prompt: a fresh session's whole task. */
export function reviewPrompt({ report, task, author, evidence, repo }: ReviewInput): string {
  const { review, diff } = report
  const id = task.id
  const cut = diff.length > MAX_DIFF ? `${diff.slice(0, MAX_DIFF)}\n[... the diff is cut here: 'flow review ${id}' prints it whole]\n` : diff
  return [
    `You review another agent's work before flow lands it. You do not change it: you approve it, or you ask its author for changes.`,
    "",
    `The work: task '${id}', ${task.title}${author ? ` (by agent ${author})` : ""}.`,
    "Its instructions, as its author was given them:",
    "",
    task.instructions?.trim() || "(none)",
    "",
    `The candidate: branch ${review.branch} at commit ${review.head}, merged into ${review.target}. Its merge passed the project's check.`,
    ...(evidence.length ? ["", ...evidence] : []),
    "",
    `Its diff against ${review.target} (git diff ${review.target}...${review.head}):`,
    "",
    "```diff",
    cut.trimEnd(),
    "```",
    "",
    `Read more of the repository at that commit without changing it, e.g. \`git -C ${repo} show ${review.head}:<path>\`.`,
    "Judge whether it does what the instructions ask, correctly, and nothing it should not. Then decide with exactly one of these commands:",
    "",
    `  flow review ${id} approve`,
    `  flow review ${id} changes "<what to change, and why: the author gets this text as it is>"`,
    "",
    "Your decision is the last thing you do: stop once the command succeeded.",
    "",
  ].join("\n")
}
