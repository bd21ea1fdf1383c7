// The page's shared state, its DOM handles and the API call helper.
import { esc } from "./text.js"

export const STATUSES = ["todo", "ready_for_agent", "assigned", "in_progress", "done", "blocked"]
export const TOKEN = document.querySelector('meta[name="flow-token"]').getAttribute("content")
export const INSTANCE = document.querySelector('meta[name="flow-instance"]').getAttribute("content")
export const $ = (id) => document.getElementById(id)
export const SVG = $("graph")
export const VIEWPORT = $("viewport")

// What graph.js and panel.js call back into (set by app.js at start): they reach the page's selection and
// refresh through here instead of importing the modules that import them, so the modules form no cycle.
export const actions = { select: (_id, _center) => {}, refresh: async () => {} }

export const state = {
  tasks: new Map(), // id → GraphTask
  report: null,
  layout: null, // the server's layout with room for the band titles (graph.js withBandTitles)
  rawLayout: null, // the server's layout as it came
  layoutKey: null,
  bandTitles: "", // the band titles the layout was last made room for
  selected: null,
  critical: false, // the critical path shown (the header's button)
  view: { x: 20, y: 20, k: 1 },
  canvas: { width: 0, height: 0 }, // the graph's area on screen, measured by applyView
  fitted: false,
  search: "",
  matches: [],
  matchAt: -1,
  hidden: new Set(),
  dependents: new Map(), // id → ids depending on it
  parents: new Set(), // ids of tasks with subtasks
  drawn: new Map(), // id → the markup its node was last drawn with
  validations: "", // the validation links the arrows were last drawn for
  questions: [],
  queue: [], // the merge queues of the live or last run (GET /api/queue)
  queued: new Map(), // task id → its candidate in a merge queue
  loading: null,
  wanted: 0, // the newest version the server announced
  again: false,
}

export function taskLink(id) {
  const t = state.tasks.get(id)
  return `<a href="#${esc(id)}" class="task" data-task="${esc(id)}">${esc(id)}</a>${t ? ` <span class="pill ${esc(t.status)}">${esc(t.status)}</span>` : ""}`
}

export async function api(path, init) {
  const res = await fetch(path, init)
  const body = await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }))
  if (!res.ok) throw new Error(body.hint ? `${body.error} (${body.hint})` : body.error)
  return body
}
