// What a line or a heading of plan.md says besides its text: the labels (`Depends on: 1.2`, `Done when:`,
// `Validated by: 2.3`, `Files: src/a.ts`), and a heading's `{#id}`, `(checkpoint)` and `(depends on 1.2)`. Pure: no IO.

const CHECKPOINT = /\s*[([]\s*checkpoint\s*[)\]]/i
const ID_ATTRIBUTE = /\s*\{#([^}\s]*)\}/

const EMPHASIS = String.raw`(?:\*{1,2}|_{1,2})`
// A bullet or a number, then emphasis: what may come before a label's words.
const LABEL_LEAD = String.raw`^(?:(?:[-*+]|\d+[.)])\s+)?${EMPHASIS}?\s*`
// "Requires: 1.3", "Needs 1.2", "Blocked by: 2.1", "Prerequisites: 1.1": other words for a dependency, read
// only when a section number (or none) follows, as "Requires: Node 22" is a requirement, not a reference.
const LOOSE_DEPENDS = String.raw`requires|required|needs|prerequisites?|blocked\s+by`
const LABEL_LINE = new RegExp(
  String.raw`${LABEL_LEAD}(acceptance(?:\s+criteria)?|done\s+when|definition\s+of\s+done|depends(?:\s+on)?|dependencies|${LOOSE_DEPENDS}|validated\s+by)\b(.*)$`,
  "i",
)
// The label's end: a colon with emphasis closing before or after it, emphasis alone, or the end of the line.
const LABEL_END = new RegExp(String.raw`^\s*(?:${EMPHASIS}?\s*:\s*${EMPHASIS}?|${EMPHASIS}(?=\s|$)|$)\s*`)
// What a dependency label without a colon, the less usual "Dependencies" and the other words (LOOSE_DEPENDS)
// must start with to be read as one: a section number or "none". Otherwise "Dependencies: add zod" or
// "Requires: Node 22" in a work item would be taken for references.
export const REFS_START = /^(?:(?:section|task)\s+)?(?:\d+\.\d+|none\b|n\/a\b)/i
// Lines that start like a label; one that is not read as a label is reported rather than silently kept as text.
const LABEL_LIKE = new RegExp(
  String.raw`${LABEL_LEAD}(?:depends\s+on|dependencies|validated\s+by|done\s+when|definition\s+of\s+done|acceptance\s+criteria)\b`,
  "i",
)

// "Files: `src/a.ts`, lib/b/": the files a section touches. The colon is required: "Files are uploaded to S3" is work.
const FILES_LINE = new RegExp(String.raw`${LABEL_LEAD}files(?:\s+touched)?\s*${EMPHASIS}?\s*:\s*${EMPHASIS}?\s*(.*)$`, "i")

export type LabelKind = "acceptance" | "depends" | "validated" | "files"

/** A label line that `flow generate` reads inside a section: what it labels and the text after it. */
export type Label = { kind: LabelKind; rest: string }

/**
 * Reads a label line: plain (`Done when:`), emphasised (`**Acceptance criteria:**`, `*Done when:*`), a list
 * item (`- Depends on: 1.1`, `2. Depends on: 1.1`) or a heading (`#### Acceptance`); `Depends on 1.1` and
 * `Dependencies: 1.2` when a section number follows.
 */
export function readLabel(text: string): Label | undefined {
  const files = withoutHeadingMarks(text).match(FILES_LINE)
  if (files) return { kind: "files", rest: files[1].replace(new RegExp(String.raw`\s*${EMPHASIS}\s*$`), "").trim() }
  const m = withoutHeadingMarks(text).match(LABEL_LINE)
  if (!m) return undefined
  const word = m[1].toLowerCase().replace(/\s+/g, " ")
  const kind: LabelKind = word.startsWith("validated") ? "validated" : /^(?:done|definition|acceptance)/.test(word) ? "acceptance" : "depends"
  const end = m[2].match(LABEL_END)
  const rest = end
    ? m[2]
        .slice(end[0].length)
        .replace(new RegExp(String.raw`\s*${EMPHASIS}\s*$`), "")
        .trim()
    : m[2].trim()
  if (!end && kind !== "depends") return undefined
  if (kind === "depends" && (!end || word === "dependencies") && rest !== "" && !REFS_START.test(rest)) return undefined
  if (kind === "depends" && !word.startsWith("depend") && !REFS_START.test(rest)) return undefined
  return { kind, rest }
}

/** Whether a label is followed by a list of its items: acceptance always, `Depends on` and `Files` only when bare. */
export function labelOpensList(label: Label): boolean {
  return label.kind === "acceptance" || ((label.kind === "depends" || label.kind === "files") && label.rest === "")
}

/** Whether a line that is no label starts like one (`Depends on the API`): it is worth a warning. */
export function looksLikeLabel(text: string): boolean {
  return LABEL_LIKE.test(withoutHeadingMarks(text))
}

function withoutHeadingMarks(text: string): string {
  return text.replace(/^\s*#{1,6}\s+/, "").trimStart()
}

// "(depends on 1.5)", "[after 1.2, 1.3]", "(requires: 2.1)" in a section or subtask heading.
export const HEADING_DEPENDS = new RegExp(String.raw`\s*[([]\s*(depends\s+on|dependencies|after|${LOOSE_DEPENDS})\s*:?\s*([^)\]]*)[)\]]`, "i")

/** A heading's text without its `(checkpoint)` marker and `{#id}` attribute, and whether they were there. */
export function cleanTitle(raw: string): { title: string; id?: string; checkpoint: boolean } {
  let title = raw.trim()
  let id: string | undefined
  const attr = title.match(ID_ATTRIBUTE)
  if (attr) {
    id = attr[1]
    title = `${title.slice(0, attr.index)} ${title.slice(attr.index! + attr[0].length)}`.trim()
  }
  const checkpoint = CHECKPOINT.test(title)
  if (checkpoint) title = title.replace(CHECKPOINT, "").trim()
  // Emphasis around a whole heading ("### 1.1 **Setup**") is decoration, not part of the title.
  title = title.replace(/^(\*\*|__)(.*)\1$/, "$2").trim()
  return { title, id, checkpoint }
}
