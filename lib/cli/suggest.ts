/** The candidate closest to `word` by edit distance, if it is close enough to be a likely typo. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1
  for (const c of candidates) {
    if (Math.abs(c.length - word.length) >= bestDistance) continue
    const d = distance(word, c)
    if (d < bestDistance) [best, bestDistance] = [c, d]
  }
  return best
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]
}

/** `Foo_Bar baz` → `foo-bar-baz`: the kebab-case id a title or a bad id most likely meant. */
export function toKebab(s: string): string {
  return (
    s
      .normalize("NFKD")
      // NFKD splits "ç" into "c" and a combining mark; without the marks an accent is not a word break.
      .replace(/\p{M}/gu, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
  )
}
