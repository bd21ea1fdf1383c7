// `flow validate` on hostile files that used to flood or go superlinear (issue 21 item 2): each shape at
// growing sizes, timed against the `yaml` package's own parse of the same file (bench/yaml-floor.ts, compiled
// like dist/flow and run in turn with it), as a ratio. Goal: linear growth, and within 3x the floor.
// Part of `npm run bench` (after the build). Usage: bun bench/validate-floods.ts [--small] [--runs N] [--only TEXT]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { compile, median, ROOT } from "./lib"

/** A hostile tasks file of `n` repeated parts; the benchmark times n = full/4, full/2 and full. */
export type Shape = { name: string; full: number; make: (n: number) => string }

const id = (i: number) => `t-${i}`
const filler = (from: number, count: number) => {
  let y = ""
  for (let i = from; i < from + count; i++)
    y += `  - id: filler-${i}\n    title: Filler task ${i}\n    status: todo\n    instructions: |\n      Padding, so that the file is the size of the issue's example.\n      It holds ordinary tasks around the hostile one.\n    acceptance_criteria:\n      - nothing\n`
  return y
}

export const SHAPES: Shape[] = [
  {
    // The issue's first file at n = 100,000: 0.5 MB, one depends_on line of 0.3 MB repeating one id.
    name: "depends_on repeats one id",
    full: 100_000,
    make: (n) =>
      `tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n${filler(0, Math.round(n / 400))}  - id: b\n    title: B\n    status: todo\n    instructions: y\n    depends_on: [${Array(n).fill("a").join(", ")}]\n${filler(n, Math.round(n / 400))}`,
  },
  {
    // The issue's second file at n = 100,000: 2 MB, a tasks list of strings, no ':' after the first line.
    name: "tasks list of strings",
    full: 100_000,
    make: (n) => {
      const parts = ["tasks:\n"]
      for (let i = 0; i < n; i++) parts.push(`  - list item ${String(i).padStart(5, "0")}\n`)
      return parts.join("")
    },
  },
  {
    name: "missing dependencies",
    full: 40_000,
    make: (n) => {
      const parts = ["tasks:\n"]
      for (let i = 0; i < n; i++) parts.push(`  - {id: ${id(i)}, title: T, status: todo, instructions: x, depends_on: [gone-${i}]}\n`)
      return parts.join("")
    },
  },
  {
    name: "cycles back to the first task",
    full: 40_000,
    make: (n) => {
      // t-i depends on t-(i+1) and on t-0: n cycles, up to n long.
      const parts = ["tasks:\n"]
      for (let i = 0; i < n; i++) parts.push(`  - {id: ${id(i)}, title: T, status: todo, instructions: x, depends_on: [${id((i + 1) % n)}, ${id(0)}]}\n`)
      return parts.join("")
    },
  },
  {
    name: "unknown fields in one task",
    full: 40_000,
    make: (n) => {
      const parts = ["tasks:\n  - id: a\n    title: A\n    status: todo\n    instructions: x\n"]
      for (let i = 0; i < n; i++) parts.push(`    field_${i}: ${i}\n`)
      return parts.join("")
    },
  },
  {
    name: "YAML aliases",
    full: 40_000,
    make: (n) => {
      const parts = ["tasks:\n  - {id: a, title: A, status: &s todo, instructions: x}\n"]
      for (let i = 0; i < n; i++) parts.push(`  - {id: ${id(i)}, title: T, status: *s, instructions: x}\n`)
      return parts.join("")
    },
  },
  {
    // Larger: each line is cheap for both, and with 40,000 the fixed start-up of a process was most of the time.
    name: "unclosed sh fences in a parent",
    full: 400_000,
    make: (n) =>
      `tasks:\n  - id: p\n    title: P\n    status: todo\n    instructions: |\n${"      ````sh\n".repeat(n)}      \`\`\`\n    subtasks:\n      - {id: c, title: C, status: todo, instructions: x}\n`,
  },
]

// ---- the benchmark ----

if (import.meta.main) {
  const { values: opts } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      small: { type: "boolean", default: false },
      runs: { type: "string", default: process.env.BENCH_RUNS ?? "3" },
      only: { type: "string" },
    },
  })
  const RUNS = Number(opts.runs)
  const FLOW = join(ROOT, "dist", "flow")
  const work = mkdtempSync(join(tmpdir(), "flow-floods-"))
  const FLOOR = compile(join(ROOT, "bench", "yaml-floor.ts"), work, "yaml-floor")

  type Timed = { ms: number; cpuMs: number; code: number; bytes: number }
  const once = async (argv: string[], cwd: string): Promise<Timed> => {
    const start = performance.now()
    const p = Bun.spawn(argv, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1", FLOW_PROJECT: "" } })
    const [out, , code] = await Promise.all([new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text(), p.exited])
    return { ms: performance.now() - start, cpuMs: Number(p.resourceUsage()?.cpuTime.total ?? 0n) / 1000, code, bytes: out.byteLength }
  }

  console.log(`flow validate on hostile files  ${new Date().toISOString()}  bun ${Bun.version}  ${RUNS} runs each, flow and floor in turn`)
  console.log("floor: bench/yaml-floor.ts (read + the yaml package's parseDocument with a LineCounter, as validate uses it)\n")
  const head = ["shape", "n", "MB", "flow ms", "floor ms", "ratio", "flow cpu", "floor cpu", "cpu ratio", "out bytes", "exit"]
  console.log(head.join("\t"))
  let worst = 0
  let bad = 0
  // The fixed cost of each process (start-up, loading the code), which the smallest files mostly are.
  {
    const dir = mkdtempSync(join(work, "p-"))
    writeFileSync(join(dir, "tasks.yaml"), "tasks: []\n")
    const flow: Timed[] = []
    const floor: Timed[] = []
    for (let r = 0; r < RUNS; r++) {
      flow.push(await once([FLOW, "validate"], dir))
      floor.push(await once([FLOOR, "tasks.yaml"], dir))
    }
    const [f, g] = [median(flow.map((t) => t.cpuMs)), median(floor.map((t) => t.cpuMs))]
    console.log(`start-up (an empty tasks list): flow cpu ${f.toFixed(0)} ms, floor cpu ${g.toFixed(0)} ms`)
  }
  for (const shape of SHAPES.filter((s) => !opts.only || s.name.includes(opts.only))) {
    const perItem: number[] = []
    const floorPerItem: number[] = []
    const full = opts.small ? shape.full / 10 : shape.full
    const sizes = [full / 4, full / 2, full]
    for (const n of sizes) {
      const dir = mkdtempSync(join(work, "p-"))
      const text = shape.make(n)
      writeFileSync(join(dir, "tasks.yaml"), text)
      const flow: Timed[] = []
      const floor: Timed[] = []
      for (let r = 0; r < RUNS; r++) {
        flow.push(await once([FLOW, "validate"], dir))
        floor.push(await once([FLOOR, "tasks.yaml"], dir))
      }
      const f = { ms: median(flow.map((t) => t.ms)), cpu: median(flow.map((t) => t.cpuMs)) }
      const g = { ms: median(floor.map((t) => t.ms)), cpu: median(floor.map((t) => t.cpuMs)) }
      const codes = [...new Set(flow.map((t) => t.code))]
      if (codes.some((c) => c !== 0 && c !== 1)) bad++
      // The goal is judged at each shape's largest size, where the start-up is a small part of either time.
      if (n === full) worst = Math.max(worst, f.cpu / g.cpu)
      perItem.push(f.cpu / n)
      floorPerItem.push(g.cpu / n)
      console.log(
        [
          shape.name,
          n,
          (text.length / 1e6).toFixed(2),
          f.ms.toFixed(0),
          g.ms.toFixed(0),
          (f.ms / g.ms).toFixed(2),
          f.cpu.toFixed(0),
          g.cpu.toFixed(0),
          (f.cpu / g.cpu).toFixed(2),
          flow[0].bytes,
          codes.join(","),
        ].join("\t"),
      )
    }
    // CPU per item at the largest size over that at the smallest: at most 1 when linear (start-up is spread
    // over more items), 4 when quadratic; the floor's, for the same files, beside it.
    const growth = (xs: number[]) => (xs.at(-1)! / xs[0]).toFixed(2)
    console.log(`  growth ${sizes[0]} → ${full}: cpu per item x${growth(perItem)} (floor x${growth(floorPerItem)})`)
  }
  console.log(
    `\nworst cpu ratio to the yaml floor at a shape's largest size: ${worst.toFixed(2)} (goal ≤ 3: ${worst <= 3 ? "met" : "MISSED"}); crashes (exit other than 0 or 1): ${bad}`,
  )
  rmSync(work, { recursive: true, force: true })
  process.exit(bad > 0 ? 1 : 0)
}
