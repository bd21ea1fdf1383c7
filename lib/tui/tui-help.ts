// The run screen's key help (`?`), drawn in the agent panes' place.
import type { Colours } from "../terminal/colour"

const HELP: [string, string][] = [
  ["q", "stop the run: agents stop, their tasks resume with the next 'flow run' (again: quit at once)"],
  ["a", "answer the oldest question waiting (Enter sends, Esc cancels)"],
  ["c", "approve the oldest checkpoint waiting for review: it becomes done and the run goes on"],
  ["b", "block the oldest checkpoint waiting for review, with a reason (added to its ai_notes)"],
  ["l", "approve the oldest merge waiting for your review (flow.yaml review): it lands"],
  ["r", "ask for changes to the oldest merge waiting for your review, with a comment its agent gets as a fix round"],
  ["Tab, 1-9", "give one agent's pane most of the height; Esc, or Tab past the last, shares it again"],
  ["?", "this help; any key closes it"],
  ["Ctrl-C", "the same as q; twice quits at once"],
]

/** The key help, in the panes' place, cut to the rows there are. */
export function helpLines(rows: number, c: Colours): string[] {
  const lines = [c.bold("Keys"), ...HELP.map(([key, what]) => `  ${c.bold(key.padEnd(9))} ${what}`)]
  return [...lines, ...Array<string>(Math.max(0, rows - lines.length)).fill("")].slice(0, Math.max(0, rows))
}
