// The ```sh blocks of instructions (lib/model/shell-blocks.ts): the same blocks as the regular expression the
// script agent used before, on random Markdown, in one pass even over 50,000 fences never closed.
import { expect, test } from "bun:test"
import { fencedShellBlocks, shellBlocks } from "../lib/model/shell-blocks"

/** The regular expression the line scanner replaced: the reference for which blocks there are. */
function byRegex(markdown: string, label?: string): string[] {
  const fence = /^([ \t]*)(`{3,}|~{3,})[ \t]*(sh|bash|shell)(?:[ \t]+([A-Za-z][\w-]*))?[ \t]*\r?\n([\s\S]*?)^\1\2[ \t]*$/gm
  return [...markdown.matchAll(fence)].filter((m) => m[4] === label).map((m) => m[5])
}

/** A small deterministic random generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PIECES = [
  "```sh",
  "```bash",
  "```shell",
  "~~~sh",
  "````sh",
  "```sh fix",
  "```sh  fix  ",
  "```",
  "````",
  "~~~",
  "  ```",
  "\t```",
  "```shx",
  "echo hi",
  "  ```sh",
  "",
  "text ``` inline",
  "```sh\t",
  " ~~~bash fix-2",
]
const BREAKS = ["\n", "\n", "\n", "\r\n", "\r", "\u2028"]

test("the line scanner finds exactly the regular expression's blocks, labels and bodies, on 3,000 random texts", () => {
  const next = random(21)
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]
  for (let i = 0; i < 3_000; i++) {
    let text = ""
    const lines = Math.floor(next() * 12)
    for (let l = 0; l < lines; l++) text += pick(PIECES) + (next() < 0.9 ? pick(BREAKS) : "")
    for (const label of [undefined, "fix", "fix-2"])
      expect({ text, label, blocks: shellBlocks(text, label) }).toEqual({ text, label, blocks: byRegex(text, label) })
  }
})

test("every block is found with its label, in order", () => {
  const text = "intro\n```sh\nnpm ci\n```\n\n  ~~~bash fix\n  git add .\n  ~~~\n```sh\nnever closed\n"
  expect(fencedShellBlocks(text)).toEqual([
    { label: undefined, body: "npm ci\n" },
    { label: "fix", body: "  git add .\n" },
  ])
})

test("50,000 fences never closed, then one closer of another length: no block, in one pass", () => {
  const text = `${"````sh\n".repeat(50_000)}\`\`\`\n`
  expect(fencedShellBlocks(text)).toEqual([])
})
