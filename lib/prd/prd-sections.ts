// PRD.md's headings as flow reads them (docs/PLANNING.md, "How PRD.md is read"): the names people give their
// sections mapped onto SPEC 1's, numbered headings and wrapper tags (`<context>`, `<PRD>`) taken in stride.
// One table for `flow refine`'s review and `flow plan`'s skeleton, so the two never disagree.
import { outline, type Outline, type OutlineHeading } from "../markdown/markdown-outline"

/** What a PRD heading is about; several kinds count as one of flow's sections (`SECTION_OF`). */
export type PrdKind =
  | "overview"
  | "problem"
  | "goals"
  | "features"
  | "stories"
  | "functional"
  | "non-functional"
  | "requirements"
  | "constraints"
  | "success"
  | "out-of-scope"
  | "questions"

/** SPEC 1's recommended sections, in the order the review reports them. */
export const FLOW_SECTIONS = [
  "Overview",
  "Problem Statement",
  "Requirements",
  "Functional Requirements",
  "Non-Functional Requirements",
  "Technical Constraints",
  "Success Criteria",
  "Out of Scope",
  "Open Questions",
] as const
export type FlowSection = (typeof FLOW_SECTIONS)[number]

/**
 * The heading names taken for each kind, matched against the title lowercased with its numbering, emphasis,
 * accents and punctuation gone ("3.2. **Non-Goals:**" is "non goals", "Überblick" is "uberblick"). First match
 * wins: "Non-Functional Requirements" must meet its own row before "... Requirements" does, and "Non-Goals"
 * before "Goals". Each row has the English names and then the German ones (German compounds: "Produktziele",
 * "Leistungsanforderungen").
 */
const KINDS: { kind: PrdKind; names: RegExp }[] = [
  {
    kind: "out-of-scope",
    names:
      /^(?:out of scope|non goals?|not in scope|scope exclusions|exclusions|what we (?:are|re) not doing|won t do)\b|^(?:nicht ziele|nicht im (?:umfang|projektumfang)|ausserhalb des umfangs|abgrenzung(?: des umfangs)?)$/,
  },
  {
    kind: "non-functional",
    names:
      /^(?:non functional|nonfunctional|nfrs?$|quality attributes$|(?:performance|security|reliability|scalability|availability|accessibility|compliance|privacy|operational|technical|quality) (?:and \w+ )?requirements$)|^(?:nicht funktionale|nichtfunktionale)|^(?:qualitats|leistungs|sicherheits|datenschutz|betriebs|technische |verfugbarkeits)anforderungen$/,
  },
  {
    kind: "functional",
    names:
      /^(?:functional (?:requirements|specification|spec)s?|specific requirements|system features|capabilities)$|^(?:funktionale (?:anforderungen|spezifikation)|funktionsumfang|leistungsumfang)$/,
  },
  { kind: "features", names: /^(?:(?:core|key|main|product|mvp) )?features?(?: list| set| overview)?$|^(?:kern|haupt)?(?:funktionen|merkmale)$/ },
  {
    kind: "stories",
    names:
      /^(?:user stories|stories|use cases|user scenarios|scenarios|jobs to be done)$|^(?:anwendungsfalle|nutzungsszenarien|szenarien|benutzergeschichten)$/,
  },
  { kind: "goals", names: /^(?:goals?|objectives|goals and objectives|product goals|goals and non goals)$|^(?:ziele|zielsetzung|produktziele)$/ },
  { kind: "requirements", names: /(?:^|\s)requirements$|anforderungen$/ },
  {
    kind: "overview",
    names:
      /^(?:(?:project|product|executive|system) )?(?:overview|summary)$|^(?:introduction|purpose|about|tl dr)$|^(?:uberblick|ubersicht|zusammenfassung|einleitung|einfuhrung|zweck)$/,
  },
  {
    kind: "problem",
    names: /^(?:(?:the )?problem(?: statement)?|motivation|background|why|why now|problem and motivation)$|^(?:problemstellung|ausgangslage|hintergrund)$/,
  },
  {
    kind: "constraints",
    names:
      /^(?:(?:technical )?constraints|technical (?:design|architecture|considerations|approach|notes)|(?:system )?(?:architecture|design)|tech(?:nology)? stack|integration points|(?:[a-z ]+ )?constraints(?: and assumptions)?)$|^(?:(?:technische )?(?:rahmenbedingungen|randbedingungen|einschrankungen)|(?:technische |system)?architektur|technisches (?:design|konzept))$/,
  },
  {
    kind: "success",
    names:
      /^(?:success (?:criteria|metrics|measures)|acceptance(?: criteria| tests?| checklist)?|definition of done|verification(?: and validation)?|(?:key )?metrics|kpis?|release criteria|exit criteria)$|^(?:akzeptanzkriterien|abnahmekriterien|erfolgskriterien|erfolgsmessung|kennzahlen)$/,
  },
  {
    kind: "questions",
    names: /^(?:open (?:questions|issues)|questions|unresolved (?:questions|issues)|outstanding questions|tbd)$|^(?:offene (?:fragen|punkte)|fragen)$/,
  },
]

/** flow's section that each kind stands for. */
export const SECTION_OF: Record<PrdKind, FlowSection> = {
  overview: "Overview",
  problem: "Problem Statement",
  goals: "Requirements",
  features: "Functional Requirements",
  stories: "Functional Requirements",
  functional: "Functional Requirements",
  "non-functional": "Non-Functional Requirements",
  requirements: "Requirements",
  constraints: "Technical Constraints",
  success: "Success Criteria",
  "out-of-scope": "Out of Scope",
  questions: "Open Questions",
}

/** Kinds whose headings are requirements: what the skeleton plans from and the review's Requirements. */
export const REQUIREMENT_KINDS: ReadonlySet<PrdKind> = new Set(["goals", "features", "stories", "functional", "non-functional", "requirements"])

/** A heading of the PRD with what it is about, when flow knows. */
export type PrdHeading = OutlineHeading & {
  kind?: PrdKind
  /** the title without numbering and emphasis: "3.1 **Search**" is "Search" */
  name: string
  /** false when it sits inside a section that owns it (a feature's own "Acceptance criteria" heading) */
  top: boolean
}

export type PrdDoc = {
  doc: Outline
  headings: PrdHeading[]
  /** the level of the PRD's chapters: 2 under a `#` title, 1 when every section is a `#` heading */
  chapter: number
}

// Containers: a heading of these kinds (or of none) leaves the kinds of its sub-headings their own.
// An SRS's "1 Introduction" holds its purpose, background and scope: sections of their own.
const CONTAINERS: ReadonlySet<PrdKind | undefined> = new Set([undefined, "overview", "requirements", "constraints"])

/** Reads PRD.md's headings and what each is about. */
export function readPrd(text: string): PrdDoc {
  const doc = outline(text)
  const chapter = chapterLevel(doc)
  const headings: PrdHeading[] = []
  const open: PrdHeading[] = []
  for (const h of doc.headings) {
    while (open.length > 0 && open.at(-1)!.level >= h.level) open.pop()
    const name = headingName(h.title)
    // The document's title ("# Billing export: Product Requirements") names the whole, not a section.
    const kind = h.level < chapter ? undefined : kindOf(name)
    // Requirement groups nest ("3.7 Performance Requirements" under "3 Specific Requirements"); anything else
    // inside a requirement (a feature's own "Acceptance criteria") belongs to it.
    const owned = open.some((o) => !CONTAINERS.has(o.kind) && !(kind && REQUIREMENT_KINDS.has(kind) && REQUIREMENT_KINDS.has(o.kind!)))
    const heading: PrdHeading = { ...h, name, kind, top: !owned }
    headings.push(heading)
    open.push(heading)
  }
  // The outline holds the same objects, so its helpers (childrenOf) find them.
  return { doc: { preamble: doc.preamble, headings }, headings, chapter }
}

/** The kind a heading's name is taken for, if any. */
export function kindOf(name: string): PrdKind | undefined {
  const plain = normal(name)
  return KINDS.find((k) => k.names.test(plain))?.kind
}

/** The headings of a kind that are sections of the PRD (not parts of another section), in file order. */
export function sectionsOf(prd: PrdDoc, ...kinds: PrdKind[]): PrdHeading[] {
  return prd.headings.filter((h) => h.top && h.kind !== undefined && kinds.includes(h.kind))
}

/** The headings under `parent` (deeper levels), as PrdHeadings. */
export function prdChildren(prd: PrdDoc, parent: PrdHeading): PrdHeading[] {
  const out: PrdHeading[] = []
  for (const h of prd.headings.slice(prd.headings.indexOf(parent) + 1)) {
    if (h.level <= parent.level) break
    out.push(h)
  }
  return out
}

/** Whether a heading's name is flow's own name for its section ("Out of Scope" for Out of Scope). */
export function namedAsFlow(h: PrdHeading): boolean {
  return h.kind !== undefined && normal(h.name) === normal(SECTION_OF[h.kind])
}

/**
 * A heading's title without what numbers it: "3.2.1 Export", "1. Export", "IV. Export", "Section 3: Export",
 * "Feature 2 - Export", and emphasis around it.
 */
export function headingName(title: string): string {
  const bare = (t: string) => t.replace(/^(\*\*|__)(.*)\1$/, "$2").trim()
  const name = bare(title)
    .replace(/^(?:section|chapter|part|feature|epic)\s+\d+(?:\.\d+)*\s*(?:[:.)\-–—]\s*|\s+|$)/i, "")
    // "3D printing" and "2FA" keep their number: only one followed by a mark or a space goes.
    .replace(/^(?:\d+(?:\.\d+)*\.?|\d+\)|[IVXLC]+\.|[A-Z][.)])\s+/, "")
  return (
    bare(name)
      .replace(/\s*[:.]$/, "")
      .trim() || bare(title)
  )
}

function normal(title: string): string {
  // Accents go with their letters kept ("Überblick" is "uberblick", "Einschränkungen" "einschrankungen").
  return title
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/ß/g, "ss")
    .replace(/\((?:optional|draft|tbd)\)/g, " ")
    .replace(/[^a-z]+/g, " ")
    .trim()
}

/**
 * The level of the PRD's chapters: the shallowest heading level, unless one heading alone has it at the top (the
 * document's title), then the next level that is used.
 */
function chapterLevel(doc: Outline): number {
  const levels = doc.headings.map((h) => h.level)
  if (levels.length === 0) return 2
  const top = Math.min(...levels)
  const atTop = levels.filter((l) => l === top).length
  if (atTop === 1 && doc.headings[0].level === top) {
    const below = levels.filter((l) => l > top)
    return below.length > 0 ? Math.min(...below) : top + 1
  }
  return top
}
