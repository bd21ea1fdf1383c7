// The graph: nodes, arrows and phase bands from the server's layout; highlights (selection chain, search,
// status filter); pan, zoom and fit.
import { drawLens, drawMinimap } from "./minimap.js"
import { $, actions, STATUSES, state, SVG, VIEWPORT } from "./state.js"
import { esc } from "./text.js"

// Rough widths in px per character at the node fonts (style.css): title 13px, badge 11px, id 11px monospace.
const TITLE_PX = 7
const BADGE_PX = 6.2
const ID_PX = 6.7

export function nodeMarkup(t, box) {
  const parent = state.parents.has(t.id)
  const queued = state.queued.get(t.id)
  const classes = [
    "node",
    `st-${t.status}`,
    parent ? "parent" : "",
    t.checkpoint ? "checkpoint" : "",
    t.review ? "review" : "",
    queued ? `queue-${queued.state}` : "",
  ]
    .filter(Boolean)
    .join(" ")
  // In order of importance: a box too narrow for all of them drops from the end, never the checkpoint flag.
  const badges = [
    t.checkpoint ? "⚑ checkpoint" : "",
    queued ? `⇉ queue ${queued.state}` : "",
    t.validation_task_id ? `✓ by ${t.validation_task_id}` : "",
    t.steps.total ? `${t.steps.done}/${t.steps.total} steps` : "",
    t.agent_name ? `@${t.agent_name}` : "",
  ].filter(Boolean)
  // The tooltip names the task whole: its id, shortened in the box when the box is too narrow for it, and its title.
  const head = `<g class="${classes}" data-id="${esc(t.id)}" transform="translate(${box.x},${box.y})"><title>${esc(`${t.id}: ${t.title} (${t.status})`)}</title><rect width="${box.width}" height="${box.height}"></rect>`
  if (parent) {
    // One line: id, title, badges. The id takes at most 60% of it; then the badges are placed (the title can
    // be read in the tooltip).
    const line = box.width - 24
    const id = shortId(t.id, Math.floor((line * 0.6) / ID_PX) - 2)
    const free = line - (id.length + 2) * ID_PX
    const badge = fitBadges(badges, Math.floor((free - 8 * TITLE_PX) / BADGE_PX) - 2)
    const room = Math.max(4, Math.floor((free - (badge ? (width(badge) + 2) * BADGE_PX : 0)) / TITLE_PX))
    return `${head}<rect class="bar" width="6" height="24" rx="3"></rect><text class="title" x="12" y="19"><tspan class="id">${esc(id)}</tspan>  ${esc(clip(t.title, room))}${badge ? `  <tspan class="badge">${esc(badge)}</tspan>` : ""}</text></g>`
  }
  const room = Math.max(8, Math.floor((box.width - 16) / TITLE_PX))
  const badge = fitBadges(badges, Math.floor((box.width - 20) / BADGE_PX))
  return (
    `${head}<rect class="bar" width="6" height="${box.height}" rx="3"></rect><text class="id" x="12" y="14">${esc(shortId(t.id, Math.floor((box.width - 20) / ID_PX)))}</text>` +
    `<text class="title" x="12" y="30">${esc(clip(t.title, room))}</text><text class="badge" x="12" y="43">${esc(badge)}</text></g>`
  )
}

/** An id of at most `chars` characters: its start and its end (where the ids of a series differ) around "…". */
export function shortId(id, chars) {
  if (id.length <= chars) return id
  const keep = Math.max(2, chars - 1)
  const head = Math.ceil(keep / 2)
  return `${id.slice(0, head)}…${id.slice(id.length - (keep - head))}`
}

export function clip(text, chars) {
  const one = text.replace(/\s+/g, " ")
  return one.length > chars ? `${one.slice(0, chars - 1)}…` : one
}

/** As many whole badges as fit in `chars`, then "…" for the rest; a first badge too long alone is clipped. */
function fitBadges(badges, chars) {
  let out = ""
  for (const [i, b] of badges.entries()) {
    const next = out ? `${out}  ${b}` : b
    if (width(next) > chars) {
      if (!out) return clip(b, Math.max(1, chars - 1))
      return width(out) + 2 <= chars ? `${out} …` : out
    }
    out = next
    if (i === badges.length - 1) return out
  }
  return out
}

/** Characters as drawn: the flag and the tick are about two characters wide in most fonts. */
function width(text) {
  return [...text].reduce((n, c) => n + (c === "⚑" || c === "✓" ? 2 : 1), 0)
}

export function edgePath(points) {
  return `M${points.map((p) => `${p[0]},${p[1]}`).join("L")}`
}

export function curve(a, b) {
  const x1 = a.x + a.width
  const y1 = a.y + a.height / 2
  const x2 = b.x
  const y2 = b.y + b.height / 2
  const dx = Math.max(40, Math.abs(x2 - x1) / 2)
  return `M${x1},${y1}C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`
}

// A band's title at the font of `.band text` (style.css), one line per BAND_LINE px, its first baseline
// BAND_FIRST px below the band's top: the layout leaves room for one line above the boxes.
const BAND_FONT = "600 22px"
const BAND_LINE = 28
const BAND_FIRST = 30

/** The title of each band, as the report names its phase. */
export function bandTitles() {
  const titles = new Map(state.report.phases.map((p) => [p.phase, p.title]))
  return state.rawLayout.phases.map((b) => `${titles.get(b.phase) ?? "No phase"}${b.parts > 1 ? ` (part ${b.part} of ${b.parts})` : ""}`)
}

/**
 * The server's layout with every band's title wrapped to the band's width (measured in its font, a word too
 * long for a line broken where it must) and the boxes and arrows moved down by the lines the longest takes
 * past the first: a phase's name is never cut, nor drawn over its boxes or into the next band.
 */
export function withBandTitles(layout, titles) {
  const measure = document.createElement("canvas").getContext("2d")
  measure.font = `${BAND_FONT} ${getComputedStyle(document.documentElement).fontFamily}`
  const lines = layout.phases.map((b, i) => wrap(titles[i], b.width, (text) => measure.measureText(text).width))
  const extra = (Math.max(1, ...lines.map((l) => l.length)) - 1) * BAND_LINE
  const down = ([x, y]) => [x, y + extra]
  return {
    ...layout,
    height: layout.height + extra,
    phases: layout.phases.map((b, i) => ({ ...b, height: b.height + extra, lines: lines[i] })),
    nodes: Object.fromEntries(Object.entries(layout.nodes).map(([id, n]) => [id, { ...n, y: n.y + extra }])),
    edges: layout.edges.map((e) => ({ ...e, points: e.points.map(down) })),
  }
}

/** `text` in lines no wider than `max`, broken between words, and inside a word only when it is wider alone. */
function wrap(text, max, widthOf) {
  const lines = []
  let line = ""
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word
    if (widthOf(next) <= max) {
      line = next
      continue
    }
    if (line) lines.push(line)
    line = ""
    let rest = word
    while (widthOf(rest) > max) {
      let n = 1
      while (n < rest.length && widthOf(rest.slice(0, n + 1)) <= max) n++
      lines.push(rest.slice(0, n))
      rest = rest.slice(n)
    }
    line = rest
  }
  if (line || lines.length === 0) lines.push(line)
  return lines
}

export function drawGraph() {
  const { layout } = state
  $("bands").innerHTML = layout.phases
    .map((b) => {
      const x = b.x + 4
      const lines = b.lines.map((l, i) => `<tspan x="${x}"${i > 0 ? ` dy="${BAND_LINE}"` : ""}>${esc(l)}</tspan>`).join("")
      return `<g class="band"><rect x="${b.x - 10}" y="${b.y}" width="${b.width + 20}" height="${b.height}" rx="10"></rect><text x="${x}" y="${b.y + BAND_FIRST}">${lines}</text></g>`
    })
    .join("")
  drawEdges()
  // Parents first, so their children are drawn on top of them.
  const ordered = [...state.tasks.values()].sort((a, b) => a.depth - b.depth)
  state.drawn = new Map()
  const nodes = []
  for (const t of ordered) {
    if (!layout.nodes[t.id]) continue
    const markup = nodeMarkup(t, layout.nodes[t.id])
    state.drawn.set(t.id, markup)
    nodes.push(markup)
  }
  $("nodes").innerHTML = nodes.join("")
  cullTexts()
  drawMinimap()
}

/** Dependency arrows (routed around the boxes by the server) and validation links (not part of the layout: drawn as curves). */
function drawEdges() {
  const { layout } = state
  const routed = new Map(layout.edges.map((e) => [`${e.from}>${e.to}`, e.points]))
  const edges = []
  for (const t of state.tasks.values()) {
    const to = layout.nodes[t.id]
    for (const d of t.depends_on) {
      const from = layout.nodes[d]
      if (!from || !to) continue
      const points = routed.get(`${d}>${t.id}`)
      edges.push(`<path class="edge" data-from="${esc(d)}" data-to="${esc(t.id)}" d="${points ? edgePath(points) : curve(from, to)}"></path>`)
    }
    if (t.validation_task_id && layout.nodes[t.validation_task_id] && to) {
      edges.push(
        `<path class="edge validates" data-from="${esc(t.id)}" data-to="${esc(t.validation_task_id)}" d="${curve(to, layout.nodes[t.validation_task_id])}"></path>`,
      )
    }
  }
  $("edges").innerHTML = edges.join("")
  state.validations = validationLinks()
}

function validationLinks() {
  return [...state.tasks.values()]
    .filter((t) => t.validation_task_id)
    .map((t) => `${t.id}>${t.validation_task_id}`)
    .join(" ")
}

/** A status or title change: the same layout, new classes and texts on the existing nodes. */
export function updateNodes() {
  // A validator is no part of the layout key, so a changed one arrives here: redraw the arrows for it.
  if (validationLinks() !== state.validations) drawEdges()
  let changed = false
  for (const g of $("nodes").children) {
    const t = state.tasks.get(g.dataset.id)
    if (!t) continue
    const fresh = nodeMarkup(t, state.layout.nodes[t.id])
    if (state.drawn.get(t.id) === fresh) continue
    state.drawn.set(t.id, fresh)
    g.outerHTML = fresh
    changed = true
  }
  if (changed) {
    cullTexts()
    drawMinimap()
  }
}

export function chainOf(id) {
  const on = new Set([id])
  const walk = (start, next) => {
    const stack = [start]
    while (stack.length) {
      for (const n of next(stack.pop()) ?? []) if (!on.has(n)) on.add(n), stack.push(n)
    }
  }
  walk(id, (x) => state.tasks.get(x)?.depends_on)
  walk(id, (x) => state.dependents.get(x))
  // A subtask waits for its parent's dependencies too.
  for (let p = state.tasks.get(id)?.parent; p; p = state.tasks.get(p)?.parent) {
    on.add(p)
    walk(p, (x) => state.tasks.get(x)?.depends_on)
  }
  return on
}

/** The critical path as pairs "from>to" of the arrows along it (graph.js draws an arrow from a dependency to its dependent). */
function criticalPairs(path) {
  const pairs = new Set()
  for (let i = 1; i < path.length; i++) {
    pairs.add(`${path[i - 1]}>${path[i]}`)
    // The path runs through a parent's subtasks: an arrow to or from the parent is on it too.
    for (const [a, b] of [
      [state.tasks.get(path[i - 1])?.parent, path[i]],
      [path[i - 1], state.tasks.get(path[i])?.parent],
    ])
      if (a && b) pairs.add(`${a}>${b}`)
  }
  return pairs
}

export function applyHighlights() {
  const selected = state.selected && state.tasks.has(state.selected) ? chainOf(state.selected) : null
  // With nothing selected, the critical path may be shown: its tasks and the arrows between them.
  const path = !selected && state.critical ? (state.report?.parallelism.critical_path.tasks ?? []) : null
  const chain = selected ?? (path ? new Set(path) : null)
  const pairs = path ? criticalPairs(path) : null
  const q = state.search.trim().toLowerCase()
  state.matches = []
  for (const g of $("nodes").children) {
    const id = g.dataset.id
    const t = state.tasks.get(id)
    const match = q !== "" && (id.toLowerCase().includes(q) || t.title.toLowerCase().includes(q))
    if (match) state.matches.push(id)
    g.classList.toggle("match", match)
    g.classList.toggle("on", chain ? chain.has(id) : false)
    g.classList.toggle("selected", id === state.selected)
    g.classList.toggle("filtered", state.hidden.has(t.status))
  }
  // The selected task's own dependencies, in and out, apart from the rest of its chain and on top of every
  // other arrow: where arrows run side by side, these are the ones that end at it.
  const near = []
  for (const e of $("edges").children) {
    e.classList.toggle("hot", pairs ? pairs.has(`${e.dataset.from}>${e.dataset.to}`) : chain ? chain.has(e.dataset.from) && chain.has(e.dataset.to) : false)
    const own = selected !== null && !e.classList.contains("validates")
    e.classList.toggle("in", own && e.dataset.to === state.selected)
    e.classList.toggle("out", own && e.dataset.from === state.selected)
    if (own && (e.dataset.to === state.selected || e.dataset.from === state.selected)) near.push(e)
  }
  for (const e of near) $("edges").appendChild(e)
  VIEWPORT.classList.toggle("dim", chain !== null)
  $("matches").textContent = q ? `${state.matches.length} match${state.matches.length === 1 ? "" : "es"}` : ""
}

export function renderCounts() {
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]))
  for (const t of state.tasks.values()) counts[t.status] = (counts[t.status] ?? 0) + 1
  for (const s of STATUSES) {
    const el = $(`count-${s}`)
    if (el) el.textContent = String(counts[s])
  }
  $("counts").textContent = `${state.tasks.size} tasks`
  renderParallelism()
}

/** The graph's parallelism in the header: the critical path on a button that shows it, the widest level, edges per task. */
function renderParallelism() {
  const p = state.report?.parallelism
  const button = $("critical")
  if (!p || p.critical_path.tasks.length === 0) {
    button.hidden = true
    $("parallelism").textContent = ""
    return
  }
  const path = p.critical_path
  const time =
    path.minutes === null ? "" : `, ${minutesText(path.minutes)}${path.timed < path.tasks.length ? ` (${path.timed} of ${path.tasks.length} timed)` : ""}`
  button.hidden = false
  button.textContent = `Critical path: ${path.tasks.length} task${path.tasks.length === 1 ? "" : "s"}${time}`
  button.title = `The longest chain of tasks that must run one after another (click to show it):\n${path.tasks.join(" → ")}`
  button.setAttribute("aria-pressed", String(Boolean(state.critical)))
  $("parallelism").textContent = `widest level ${p.widest_level.tasks.length} · ${p.edges_per_task} edges per task`
  $("parallelism").title = `At most ${p.widest_level.tasks.length} tasks can run at once; ${p.edges} dependencies for ${p.tasks} tasks`
}

function minutesText(m) {
  return m < 60 ? `${m}m` : `${Math.floor(m / 60)}h${m % 60 ? `${m % 60}m` : ""}`
}

export function buildFilters() {
  $("filters").innerHTML = STATUSES.map(
    (s) => `<label title="show ${s}"><input type="checkbox" data-status="${s}" checked><i class="dot ${s}"></i>${s} <span id="count-${s}">0</span></label>`,
  ).join("")
  $("filters").addEventListener("change", (e) => {
    const s = e.target.dataset.status
    if (e.target.checked) state.hidden.delete(s)
    else state.hidden.add(s)
    applyHighlights()
  })
}

// ---------- pan, zoom, fit ----------

export function applyView() {
  const { x, y, k } = state.view
  VIEWPORT.setAttribute("transform", `translate(${x},${y}) scale(${k})`)
  // Far out, the texts are unreadable anyway; not drawing them keeps 2,000 tasks quick to paint.
  SVG.classList.toggle("far", k < 0.35)
  // Measured here, where nothing new waits to be laid out: measuring after 2,000 new nodes would force
  // their layout at once. Whatever needs the canvas's size afterwards reads it from the state.
  const r = SVG.getBoundingClientRect()
  state.canvas = { width: r.width, height: r.height }
  cullTexts()
  drawLens()
}

/**
 * Boxes well off screen are drawn without their texts (class `away`): at a readable zoom their layout was
 * most of a large graph's first paint. A margin of half a screen around the view keeps panning seamless.
 */
function cullTexts() {
  const { layout, view, canvas } = state
  if (!layout) return
  const { k } = view
  const [mx, my] = [canvas.width / 2 / k, canvas.height / 2 / k]
  const x0 = -view.x / k - mx
  const y0 = -view.y / k - my
  const x1 = x0 + canvas.width / k + 2 * mx
  const y1 = y0 + canvas.height / k + 2 * my
  for (const g of $("nodes").children) {
    const b = layout.nodes[g.dataset.id]
    if (b) g.classList.toggle("away", b.x > x1 || b.x + b.width < x0 || b.y > y1 || b.y + b.height < y0)
  }
}

/** Below this zoom a box's title cannot be read (and below 0.35 texts are not drawn at all). */
const READABLE = 0.6
/** The zoom the page opens at when the whole graph would be drawn smaller than READABLE. */
const OPENING_ZOOM = 0.8
/** Where work starts, in this order: the first box of the first of these statuses that any task has. */
const FOCUS = ["ready_for_agent", "in_progress", "assigned", "blocked", "todo", "done"]

/** The zoom at which the whole graph fits in `r`. */
function fitZoom(r) {
  const w = Math.max(1, state.layout.width)
  const h = Math.max(1, state.layout.height)
  return Math.min(2, Math.max(0.02, Math.min((r.width - 40) / w, (r.height - 40) / h)))
}

export function fit() {
  if (!state.layout) return
  const r = SVG.getBoundingClientRect()
  const k = fitZoom(r)
  state.view = { k, x: (r.width - state.layout.width * k) / 2, y: Math.max(20, (r.height - state.layout.height * k) / 2) }
  applyView()
}

/**
 * The view a page opens with: the whole graph when it can be read that way; else a readable zoom on the
 * first ready tasks (the leftmost, where the work stands), with the minimap for the rest.
 */
export function openingView() {
  if (!state.layout) return
  const r = SVG.getBoundingClientRect()
  if (fitZoom(r) >= READABLE) return fit()
  const { width: w, height: h, nodes } = state.layout
  const k = OPENING_ZOOM
  let focus
  for (const status of FOCUS) {
    for (const t of state.tasks.values()) {
      const b = nodes[t.id]
      if (t.status === status && b && (!focus || b.x < focus.x || (b.x === focus.x && b.y < focus.y))) focus = b
    }
    if (focus) break
  }
  focus ??= { x: 0, y: 0, width: 0, height: 0 }
  // The focus a third of the way in (what it waits on to its left, what follows to its right), without
  // showing empty space beyond either end of the graph; vertically centred on it when the graph is taller.
  const x = Math.max(Math.min(r.width / 3 - focus.x * k, 20), r.width - 20 - w * k)
  const y = h * k <= r.height - 40 ? (r.height - h * k) / 2 : Math.max(Math.min(r.height / 2 - (focus.y + focus.height / 2) * k, 20), r.height - 20 - h * k)
  state.view = { k, x, y }
  applyView()
}

/** Centres the view on the graph's point (x, y), keeping the zoom (the minimap's clicks). */
export function centreAt(x, y) {
  const r = SVG.getBoundingClientRect()
  state.view = { k: state.view.k, x: r.width / 2 - x * state.view.k, y: r.height / 2 - y * state.view.k }
  applyView()
}

export function centerOn(id) {
  const box = state.layout?.nodes[id]
  if (!box) return
  const r = SVG.getBoundingClientRect()
  const k = Math.max(state.view.k, 0.8)
  state.view = { k, x: r.width / 2 - (box.x + box.width / 2) * k, y: r.height / 2 - (box.y + box.height / 2) * k }
  applyView()
}

export function setUpPanZoom() {
  let drag = null
  SVG.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return
    drag = { x: e.clientX, y: e.clientY, vx: state.view.x, vy: state.view.y, moved: false }
    SVG.setPointerCapture(e.pointerId)
  })
  SVG.addEventListener("pointermove", (e) => {
    if (!drag) return
    const dx = e.clientX - drag.x
    const dy = e.clientY - drag.y
    if (!drag.moved && Math.hypot(dx, dy) < 4) return
    drag.moved = true
    SVG.classList.add("dragging")
    state.view.x = drag.vx + dx
    state.view.y = drag.vy + dy
    applyView()
  })
  SVG.addEventListener("pointerup", (e) => {
    const clicked = drag && !drag.moved
    drag = null
    SVG.classList.remove("dragging")
    if (!clicked) return
    const target = document.elementFromPoint(e.clientX, e.clientY)?.closest?.(".node")
    actions.select(target ? target.dataset.id : null)
  })
  SVG.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault()
      const r = SVG.getBoundingClientRect()
      const px = e.clientX - r.left
      const py = e.clientY - r.top
      const k = Math.min(4, Math.max(0.02, state.view.k * Math.exp(-e.deltaY * 0.0015)))
      const f = k / state.view.k
      state.view = { k, x: px - (px - state.view.x) * f, y: py - (py - state.view.y) * f }
      applyView()
    },
    { passive: false },
  )
  $("fit").addEventListener("click", fit)
}
