// flow view's page: the task graph (positions come from the server's elkjs layout), a details panel, and the
// questions and checkpoints waiting for a person. Plain JS, no framework, nothing from the internet.
// Every text from the project goes through esc() (or textContent) before it reaches the DOM.
import {
  applyHighlights,
  applyView,
  bandTitles,
  buildFilters,
  centreAt,
  drawGraph,
  fit,
  openingView,
  renderCounts,
  setUpPanZoom,
  updateNodes,
  withBandTitles,
} from "./graph.js"
import { setUpMinimap } from "./minimap.js"
import { onCardClick, renderDetails, renderInbox, renderQueue, select } from "./panel.js"
import { $, actions, api, INSTANCE, state } from "./state.js"
import { budgetText, esc, usageText } from "./text.js"

/** Fetches what changed and redraws; calls made while one runs are folded into one more run. */
export async function refresh() {
  if (state.loading) {
    state.again = true
    return state.loading
  }
  state.loading = (async () => {
    do {
      state.again = false
      try {
        await load()
      } catch (e) {
        showBanner(`flow view: ${e.message}`, true)
      }
    } while (state.again || (state.report && state.wanted > state.report.version))
  })()
  await state.loading
  state.loading = null
}

async function load() {
  const [report, questions, usage, queue] = await Promise.all([api("/api/tasks"), api("/api/questions"), api("/api/usage"), api("/api/queue")])
  state.report = report
  state.questions = questions.questions
  state.queue = queue.queue
  state.queued = new Map(queue.queue.flatMap((q) => q.candidates.map((c) => [c.task, c])))
  const spent = usageText(usage.total)
  const runBudget = budgetText(usage.budget)
  $("usage").textContent = [
    spent ? `${usageText(usage.run) ? `last run ${usageText(usage.run)}; ` : ""}all runs ${spent}` : "",
    runBudget ? `run budget: ${runBudget} in the last run` : "",
  ]
    .filter(Boolean)
    .join("; ")
  state.tasks = new Map()
  state.dependents = new Map()
  for (const phase of report.phases) for (const t of phase.tasks) state.tasks.set(t.id, t)
  state.parents = new Set()
  for (const t of state.tasks.values()) {
    for (const d of t.depends_on) state.dependents.set(d, [...(state.dependents.get(d) ?? []), t.id])
    if (t.parent) state.parents.add(t.parent)
  }
  $("project").textContent = `flow view: ${report.project}`
  document.title = `flow view: ${report.project}`
  if (report.error) showBanner(`tasks.yaml cannot be read; showing the last valid version.\n${report.error}`, true)
  else hideBanner()
  // A phase renamed (plan.md) can need another line for its band's title: drawn again as for a new layout.
  const titles = state.rawLayout && state.layoutKey === report.layout_key ? bandTitles() : null
  if (report.layout_key !== state.layoutKey || titles?.join("\n") !== state.bandTitles) {
    if (report.layout_key !== state.layoutKey) {
      if (!state.layout) showProgress("Laying out the graph…")
      state.rawLayout = await api(`/api/layout/${encodeURIComponent(report.layout_key)}`)
      state.layoutKey = report.layout_key
    }
    const now = bandTitles()
    state.layout = withBandTitles(state.rawLayout, now)
    state.bandTitles = now.join("\n")
    hideProgress()
    // Placed before drawing: measuring the canvas after 2,000 new nodes would force a full layout of them.
    if (!state.fitted) {
      openingView()
      state.fitted = true
    }
    drawGraph()
    // For the tests: the structure on screen.
    document.body.dataset.layout = state.layoutKey
  } else {
    updateNodes()
  }
  applyHighlights()
  renderCounts()
  renderInbox()
  renderQueue()
  if (state.selected) {
    if (state.tasks.has(state.selected)) await renderDetails(state.selected, true)
    else select(null)
  }
  document.body.dataset.version = String(report.version)
  // For the benchmark and the browser test: milliseconds from the page's request to the first full paint.
  if (!document.body.dataset.paintedMs) requestAnimationFrame(() => setTimeout(() => (document.body.dataset.paintedMs = String(Math.round(performance.now())))))
}

function showBanner(text, isError) {
  const b = $("banner")
  b.textContent = text
  b.className = isError ? "error" : ""
  b.hidden = false
}
function hideBanner() {
  $("banner").hidden = true
}
function showProgress(text, done, total) {
  const p = $("progress")
  p.hidden = false
  p.innerHTML = `${esc(text)}${total ? `<progress max="${total}" value="${done}"></progress>` : "<progress></progress>"}`
}
function hideProgress() {
  $("progress").hidden = true
}

// ---------- live updates ----------

function connect() {
  const source = new EventSource("/api/events")
  source.addEventListener("open", () => {
    // Each connection starts with the server's current version.
    state.wanted = 0
    $("live").textContent = "live"
    $("live").classList.remove("off")
  })
  source.addEventListener("error", () => {
    $("live").textContent = "reconnecting"
    $("live").classList.add("off")
    // The browser gives up on a stream the server refused (401: a restarted flow view, with a new token).
    // Try again now and then: opening the new address in another tab renews the cookie, and this page with it.
    if (source.readyState === EventSource.CLOSED) {
      showBanner("flow view refused this page: it was restarted with a new token. Open the address it printed.", true)
      setTimeout(connect, 3000)
    }
  })
  source.addEventListener("version", (e) => {
    const { version, instance } = JSON.parse(e.data)
    // Another `flow view` now serves this port: this page's token is dead, so load the new server's page
    // (the selection stays in the URL's #id).
    if (instance !== undefined && instance !== INSTANCE) {
      location.reload()
      return
    }
    state.wanted = Math.max(state.wanted, version)
    // Before the first load, that load brings this version (or a newer one).
    if (state.report && version > state.report.version) void refresh()
  })
  source.addEventListener("layout", (e) => {
    const { done, total } = JSON.parse(e.data)
    if (done < total && !state.layout) showProgress(`Laying out the graph: phase ${done + 1} of ${total}…`, done, total)
  })
}

// ---------- start ----------

/**
 * The token came in the address (flow view prints it so): the server has put it in a cookie for this port,
 * so it leaves the address bar, the history and anything the address is copied into.
 */
function forgetTokenInAddress() {
  const url = new URL(location.href)
  if (!url.searchParams.has("token")) return
  url.searchParams.delete("token")
  history.replaceState(history.state, "", `${url.pathname}${url.search}${url.hash}`)
}

function start() {
  forgetTokenInAddress()
  buildFilters()
  setUpPanZoom()
  setUpMinimap(centreAt)
  window.addEventListener("resize", applyView)
  applyView()
  $("critical").addEventListener("click", () => {
    state.critical = !state.critical
    // Showing the path replaces a selection, whose own chain would hide it.
    if (state.critical && state.selected) select(null)
    renderCounts()
    applyHighlights()
  })
  $("search").addEventListener("input", (e) => {
    state.search = e.target.value
    state.matchAt = -1
    applyHighlights()
  })
  $("search").addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || state.matches.length === 0) return
    state.matchAt = (state.matchAt + 1) % state.matches.length
    select(state.matches[state.matchAt], true)
  })
  document.addEventListener("click", (e) => {
    const link = e.target.closest("a.task")
    if (link) {
      e.preventDefault()
      select(link.dataset.task, true)
      return
    }
    const copy = e.target.closest("button[data-copy]")
    if (copy) void navigator.clipboard?.writeText($(copy.dataset.copy).textContent)
  })
  $("side").addEventListener("click", (e) => void onCardClick(e))
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea")) return
    if (e.key === "f" || e.key === "F") fit()
    if (e.key === "Escape") select(null)
    if (e.key === "/") {
      e.preventDefault()
      $("search").focus()
    }
  })
  actions.select = select
  actions.refresh = refresh
  const initial = taskFromHash()
  showProgress("Loading the tasks…")
  connect()
  void refresh().then(() => {
    if (initial && state.tasks.has(initial)) select(initial, true)
  })
}

/** The task id in the URL's #fragment; a malformed one (a hand-typed %) selects nothing. */
function taskFromHash() {
  try {
    return decodeURIComponent(location.hash.slice(1))
  } catch {
    return ""
  }
}

start()
