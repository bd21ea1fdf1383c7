// Pure functions over the dependency graph. Iterative throughout: a 50,000-long chain must not hit a
// recursion limit.

/**
 * Every cycle of the graph once, as a closed path `[a, b, a]` with the index of its last edge in `deps` of the
 * task it starts from (b's edge to a), found in the order of `order`. Once the cycles
 * found hold `budget` tasks in all, further cycles are only counted (`more`): n tasks can close n cycles of
 * length n, and listing them all would take time and memory quadratic in n.
 */
export function findCycles(
  order: readonly string[],
  deps: ReadonlyMap<string, readonly string[]>,
  budget = Number.POSITIVE_INFINITY,
): { cycles: { path: string[]; edge: number }[]; more: number } {
  const finished = new Set<string>()
  const onPath = new Map<string, number>() // a task on the current path: its index there
  const cycles: { path: string[]; edge: number }[] = []
  let listed = 0
  let more = 0
  for (const root of order) {
    if (finished.has(root) || onPath.has(root)) continue
    const path: string[] = [root]
    const next: number[] = [0]
    onPath.set(root, 0)
    while (path.length > 0) {
      const node = path[path.length - 1]
      const edges = deps.get(node) ?? []
      const i = next[next.length - 1]++
      if (i >= edges.length) {
        finished.add(node)
        onPath.delete(node)
        path.pop()
        next.pop()
        continue
      }
      const to = edges[i]
      if (!deps.has(to) || finished.has(to)) continue // a missing dependency is reported on its own
      const from = onPath.get(to)
      if (from === undefined) {
        onPath.set(to, path.length)
        path.push(to)
        next.push(0)
      } else if (listed + path.length - from + 1 > budget) more++
      else {
        listed += path.length - from + 1
        cycles.push({ path: [...path.slice(from), to], edge: i })
      }
    }
  }
  return { cycles, more }
}
