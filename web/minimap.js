// The minimap: the whole graph small in a corner (bands, and every box coloured by its status) with the
// part on screen outlined; a click or a drag there moves the view. It is what lets the page open at a
// readable zoom on a graph far larger than the screen (issue 26: a 2,000-task chain fitted to a thin strip).
import { $, STATUSES, state } from "./state.js"

const MAX_WIDTH = 240
const MAX_HEIGHT = 150
/** Thinner than this, a long graph is stretched across: a chain of 2,000 is still a strip you can point at. */
const MIN_SIDE = 36

let scale = { x: 1, y: 1 }
/** The statuses' colours (style.css), read once at start: reading styles after 2,000 new nodes would style them all at once. */
const colours = new Map()

/** Draws the graph into the minimap (after a new layout, or when statuses change). */
export function drawMinimap() {
  const { layout } = state
  if (!layout) return
  const w = Math.max(1, layout.width)
  const h = Math.max(1, layout.height)
  const k = Math.min(MAX_WIDTH / w, MAX_HEIGHT / h)
  const width = Math.max(MIN_SIDE, Math.round(w * k))
  const height = Math.max(MIN_SIDE, Math.round(h * k))
  scale = { x: width / w, y: height / h }
  const canvas = $("minimap-canvas")
  const ratio = window.devicePixelRatio || 1
  canvas.width = Math.round(width * ratio)
  canvas.height = Math.round(height * ratio)
  canvas.style.width = `${width}px`
  canvas.style.height = `${height}px`
  const g = canvas.getContext("2d")
  g.setTransform(ratio, 0, 0, ratio, 0, 0)
  g.clearRect(0, 0, width, height)
  g.fillStyle = "#e3e7ee"
  for (const b of layout.phases) g.fillRect(b.x * scale.x, b.y * scale.y, Math.max(1, b.width * scale.x), height)
  // Parents first: their children are drawn over them.
  for (const t of [...state.tasks.values()].sort((a, b) => a.depth - b.depth)) {
    const box = layout.nodes[t.id]
    if (!box) continue
    g.fillStyle = state.parents.has(t.id) ? "#f6f7f9" : (colours.get(t.status) ?? "#8a94a6")
    g.fillRect(box.x * scale.x, box.y * scale.y, Math.max(1, box.width * scale.x), Math.max(1, box.height * scale.y))
  }
  drawLens()
}

/** Outlines the part of the graph on screen; the minimap shows only while some of the graph is off it. */
export function drawLens() {
  const { layout, view, canvas: r } = state
  const map = $("minimap")
  if (!layout || !map) return
  const [x0, y0] = [-view.x / view.k, -view.y / view.k]
  const [x1, y1] = [x0 + r.width / view.k, y0 + r.height / view.k]
  map.hidden = x0 <= 0 && y0 <= 0 && x1 >= layout.width && y1 >= layout.height
  const lens = $("minimap-lens")
  const left = Math.max(0, x0 * scale.x)
  const top = Math.max(0, y0 * scale.y)
  lens.style.left = `${left}px`
  lens.style.top = `${top}px`
  lens.style.width = `${Math.max(4, Math.min(layout.width, x1) * scale.x - left)}px`
  lens.style.height = `${Math.max(4, Math.min(layout.height, y1) * scale.y - top)}px`
}

/** Clicks and drags on the minimap call `moveTo` with the graph's point to centre on. */
export function setUpMinimap(moveTo) {
  const css = getComputedStyle(document.documentElement)
  for (const status of STATUSES) colours.set(status, css.getPropertyValue(`--${status}`).trim())
  const map = $("minimap")
  let dragging = false
  const go = (e) => {
    const r = $("minimap-canvas").getBoundingClientRect()
    moveTo((e.clientX - r.left) / scale.x, (e.clientY - r.top) / scale.y)
  }
  map.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return
    dragging = true
    map.setPointerCapture(e.pointerId)
    go(e)
  })
  map.addEventListener("pointermove", (e) => dragging && go(e))
  map.addEventListener("pointerup", () => {
    dragging = false
  })
}
