// Pure functions over the dependency graph. Iterative throughout: a 50,000-long chain must not hit a
// recursion limit.

/** Every cycle of the graph once, as a closed path `[a, b, a]`, found in the order of `order`. */
export function findCycles(order: readonly string[], deps: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 1 | 2>() // 1: on the current path, 2: finished
  const cycles: string[][] = []
  for (const root of order) {
    if (state.has(root)) continue
    const path: string[] = [root]
    const next: number[] = [0]
    state.set(root, 1)
    while (path.length > 0) {
      const node = path[path.length - 1]
      const edges = deps.get(node) ?? []
      const i = next[next.length - 1]++
      if (i >= edges.length) {
        state.set(node, 2)
        path.pop()
        next.pop()
        continue
      }
      const to = edges[i]
      if (!deps.has(to)) continue // a missing dependency is reported on its own
      const s = state.get(to)
      if (s === 1) cycles.push([...path.slice(path.lastIndexOf(to)), to])
      else if (s === undefined) {
        state.set(to, 1)
        path.push(to)
        next.push(0)
      }
    }
  }
  return cycles
}
