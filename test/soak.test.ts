// The soak (bench/soak.ts) with small counts: the store under a full disk (when root; at the lock too), kill -9,
// broken locks, lock paths that are a directory, a FIFO or a dangling link, a lock deleted under a stopped
// holder, symlinks, read-only files, concurrent writers and a fuzz corpus. Every case must end with no failure and
// no lost update; the full counts run with `npm run soak` (docs/RELIABILITY.md).
import { expect, test } from "bun:test"
import { SMALL, soak, table } from "../bench/soak"

test("the soak's small run: no failures, no lost updates in any case", async () => {
  const rows = await soak(SMALL)
  const bad = rows.filter((r) => r.failures > 0 || r.lost > 0)
  expect(bad.length === 0 ? "" : table(bad)).toBe("")
}, 600_000)
