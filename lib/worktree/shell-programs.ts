// The programs a shell line of flow.yaml starts (setup, teardown, verify), read as sh would read them, for
// `flow doctor`'s PATH check: a program named here and not on PATH stops the run, so only what is surely a
// command's name is named. Quotes, `$(...)` and backquotes (whose commands count too), `VAR=value` before a
// command, redirections, `;`, `&&`, `||`, `|`, `&`, subshells and the keywords of if/while/until are
// understood; anything else (`case`, `for`, a function, a here-document) ends the reading there: what
// follows is not checked, never refused. A word made of variables or quotes ("$CC", "my tool") is not checked.

const BUILTINS = new Set(
  ". : [ alias bg break cd command continue echo eval exec exit export false fg getopts hash jobs kill local printf pwd read readonly return set shift source test times trap true type ulimit umask unalias unset wait".split(
    " ",
  ),
)
/** Words after which a command starts again, and the closers that end a compound command. */
const KEYWORDS = new Set("if then else elif fi do done while until ! time { }".split(" "))
/** Where what follows has a grammar of its own (a loop's word list, case patterns, a function's body): reading stops. */
const STOP = new Set(["for", "select", "case", "function", "[[", "(("])

type Token = { word: string; plain: boolean } | { op: string }

/** Reading stopped at something not understood: what was read so far stands. */
class Unsure extends Error {}

/** The programs `command` starts, in order (an argv's first word, or each command of a shell line). */
export function programsOf(command: string | readonly string[]): string[] {
  if (typeof command !== "string") return [command[0]]
  const found: string[] = []
  try {
    commandsOf(command, found)
  } catch (e) {
    if (!(e instanceof Unsure)) throw e
  }
  return found
}

function commandsOf(line: string, found: string[]): void {
  let atStart = true
  /** the command's name, said once its next token shows it is no function's name (`name() { ... }`) */
  let pending: string | undefined
  let words = 0
  for (const token of tokens(line, found)) {
    if ("op" in token) {
      if (token.op === "(" && words === 1 && !atStart) throw new Unsure()
      if (pending !== undefined) found.push(pending)
      pending = undefined
      atStart = true
      words = 0
      continue
    }
    words++
    if (pending !== undefined) {
      found.push(pending)
      pending = undefined
    }
    if (!atStart) continue
    const { word, plain } = token
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) continue // an assignment before the command
    if (plain && STOP.has(word)) throw new Unsure()
    if (plain && KEYWORDS.has(word)) {
      words = 0
      continue
    }
    atStart = false
    if (plain && !BUILTINS.has(word)) pending = word
  }
  if (pending !== undefined) found.push(pending)
}

/**
 * The words and operators of a line; the commands inside `$(...)` and backquotes are read on the way (into
 * `found`), and a redirection's target is left out.
 */
function* tokens(line: string, found: string[]): Generator<Token> {
  let i = 0
  let word = ""
  let plain = true
  let inWord = false
  const end = function* (): Generator<Token> {
    if (inWord) yield { word, plain }
    word = ""
    plain = true
    inWord = false
  }
  while (i < line.length) {
    const c = line[i]
    if (c === " " || c === "\t") {
      yield* end()
      i++
    } else if ((c === "\n" || c === ";" || c === "&" || c === "|" || c === "(" || c === ")") && !(c === "&" && line[i + 1] === ">")) {
      yield* end()
      const two = line.slice(i, i + 2)
      if (two === ";;") throw new Unsure() // a case arm's end
      const op = two === "&&" || two === "||" ? two : c
      i += op.length
      yield { op }
    } else if (c === "#" && !inWord) {
      while (i < line.length && line[i] !== "\n") i++
    } else if (c === "<" || c === ">" || c === "&") {
      // A redirection (>, >>, 2>&1, <, &> of bash): the word after it is a file or a descriptor, not a command.
      if (inWord && /^\d+$/.test(word) && plain) {
        word = ""
        inWord = false
      } else yield* end()
      if (line.startsWith("<<", i)) throw new Unsure() // a here-document: its lines are not commands
      if (c === "&") i++
      i += line[i + 1] === ">" || line[i + 1] === "&" || line[i + 1] === "|" ? 2 : 1
      while (line[i] === " " || line[i] === "\t") i++
      i = skipWord(line, i, found)
    } else {
      inWord = true
      const next = wordPart(line, i, found)
      word += line.slice(i, next.end)
      plain &&= next.plain
      i = next.end
    }
  }
  yield* end()
}

/** One piece of a word at `i`: a quoted string, a substitution, an escape or a plain character. */
function wordPart(line: string, i: number, found: string[]): { end: number; plain: boolean } {
  const c = line[i]
  if (c === "'") return { end: closing(line, i + 1, "'"), plain: false }
  if (c === '"') {
    let j = i + 1
    while (j < line.length && line[j] !== '"') {
      if (line[j] === "\\") j += 2
      else if (line[j] === "$" || line[j] === "`") j = wordPart(line, j, found).end
      else j++
    }
    if (j >= line.length) throw new Unsure()
    return { end: j + 1, plain: false }
  }
  if (c === "\\") return { end: i + 2, plain: false }
  if (c === "`") {
    const j = closing(line, i + 1, "`")
    commandsOf(line.slice(i + 1, j - 1), found)
    return { end: j, plain: false }
  }
  if (c === "$" && line.startsWith("$((", i)) return { end: balanced(line, i + 1), plain: false } // arithmetic
  if (c === "$" && line[i + 1] === "(") {
    const j = balanced(line, i + 1)
    commandsOf(line.slice(i + 2, j - 1), found)
    return { end: j, plain: false }
  }
  if (c === "$" && line[i + 1] === "{") return { end: closing(line, i + 2, "}"), plain: false }
  if (c === "$") {
    const m = /^\$([A-Za-z_][A-Za-z0-9_]*|[0-9#?*@$!-])/.exec(line.slice(i))
    return { end: i + (m ? m[0].length : 1), plain: false }
  }
  return { end: i + 1, plain: !"*?[]~".includes(c) }
}

/** A redirection's target: one word, skipped (a substitution in it still runs its commands). */
function skipWord(line: string, i: number, found: string[]): number {
  while (i < line.length && !" \t\n;&|()<>".includes(line[i])) i = wordPart(line, i, found).end
  return i
}

/** The index after the `quote` that closes what starts at `i`. */
function closing(line: string, i: number, quote: string): number {
  let j = i
  while (j < line.length && line[j] !== quote) j += quote !== "'" && line[j] === "\\" ? 2 : 1
  if (j >= line.length) throw new Unsure()
  return j + 1
}

/** The index after the `)` matching the `(` at `i`, past quotes and nested parentheses. */
function balanced(line: string, i: number): number {
  let depth = 0
  let j = i
  while (j < line.length) {
    const c = line[j]
    if (c === "(") depth++
    else if (c === ")" && --depth === 0) return j + 1
    else if (c === "'" || c === '"' || c === "`") {
      j = closing(line, j + 1, c)
      continue
    } else if (c === "\\") j++
    j++
  }
  throw new Unsure()
}
