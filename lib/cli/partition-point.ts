// A binary search over an ordered list, shared by what looks up positions in sorted spans (the quoted
// scalars of a YAML text, the free rows between an inspector's boxes).

/**
 * The first index in [0, length) whose item is no longer `before` the sought place, `length` when every
 * item is: `before` must hold for a prefix of the list and fail for the rest.
 */
export function partitionPoint(length: number, before: (i: number) => boolean): number {
  let lo = 0
  let hi = length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (before(mid)) lo = mid + 1
    else hi = mid
  }
  return lo
}
