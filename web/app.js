// flow view's page: the task graph (positions come from the server's elkjs layout), a details panel, and the
// questions and checkpoints waiting for a person. Plain JS, no framework, nothing from the internet.
// Every text from the project goes through esc() (or textContent) before it reaches the DOM.
"use strict"

const STATUSES = ["todo", "ready_for_agent", "assigned", "in_progress", "done", "blocked"]
const TOKEN = document.querySelector('meta[name="flow-token"]').getAttribute("content")
const $ = (id) => document.getElementById(id)
const SVG = $("graph")
const VIEWPORT = $("viewport")

const state = {
  tasks: new Map(), // id → GraphTask
  report: null,
  layout: null,
  layoutKey: null,
  selected: null,
  view: { x: 20, y: 20, k: 1 },
  fitted: false,
  search: "",
  matches: [],
  matchAt: -1,
  hidden: new Set(),
  dependents: new Map(), // id → ids depending on it
  parents: new Set(), // ids of tasks with subtasks
  drawn: new Map(), // id → the markup its node was last drawn with
  questions: [],
  loading: null,
  wanted: 0, // the newest version the server announced
  again: false,
}

// ---------- text ----------

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }
function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ESC[c])
}

/** Inline Markdown on one line: `code`, **bold**, *italic*, [text](http…). Escapes everything else. */
function inline(text) {
  return String(text)
    .split(/(`[^`]+`)/)
    .map((part) => {
      if (part.length > 1 && part.startsWith("`") && part.endsWith("`")) return `<code>${esc(part.slice(1, -1))}</code>`
      return esc(part)
        .replace(/\*\*(.+?)\*\*/g, "<strong>$1</strong>")
        .replace(/(^|[\s(])\*(?!\s)(.+?)\*(?=$|[\s).,;:!?])/g, "$1<em>$2</em>")
        .replace(/\[([^\]]+)\]\(((?:https?:|mailto:)[^\s)]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>')
    })
    .join("")
}

/** A small, safe Markdown renderer: headings, paragraphs, lists, fenced code, quotes. No raw HTML passes. */
function markdown(text) {
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n")
  const out = []
  let para = []
  let list = null // { tag, items }
  const flushPara = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`)
    para = []
  }
  const flushList = () => {
    if (list) out.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join("")}</${list.tag}>`)
    list = null
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const fence = /^\s*(```|~~~)/.exec(line)
    if (fence) {
      flushPara()
      flushList()
      const code = []
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i])
      out.push(`<pre><code>${esc(code.join("\n"))}</code></pre>`)
      continue
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line)
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line)
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line)
    if (heading) {
      flushPara()
      flushList()
      const level = Math.min(6, heading[1].length + 2)
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`)
    } else if (bullet || numbered) {
      flushPara()
      const tag = bullet ? "ul" : "ol"
      if (list && list.tag !== tag) flushList()
      list = list ?? { tag, items: [] }
      list.items.push((bullet ?? numbered)[1])
    } else if (line.trim() === "") {
      flushPara()
      flushList()
    } else if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += ` ${line.trim()}`
    } else if (/^>\s?/.test(line)) {
      flushPara()
      flushList()
      out.push(`<blockquote>${inline(line.replace(/^>\s?/, ""))}</blockquote>`)
    } else {
      flushList()
      para.push(line)
    }
  }
  flushPara()
  flushList()
  return out.join("\n")
}

function taskLink(id) {
  const t = state.tasks.get(id)
  return `<a href="#${esc(id)}" class="task" data-task="${esc(id)}">${esc(id)}</a>${t ? ` <span class="pill ${esc(t.status)}">${esc(t.status)}</span>` : ""}`
}

// ---------- data ----------

async function api(path, init) {
  const res = await fetch(path, init)
  const body = await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }))
  if (!res.ok) throw new Error(body.hint ? `${body.error} (${body.hint})` : body.error)
  return body
}

/** Fetches what changed and redraws; calls made while one runs are folded into one more run. */
async function refresh() {
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
  const t0 = performance.now()
  const [report, questions] = await Promise.all([api("/api/tasks"), api("/api/questions")])
  state.report = report
  state.questions = questions.questions
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
  if (report.layout_key !== state.layoutKey) {
    if (!state.layout) showProgress("Laying out the graph…")
    state.layout = await api(`/api/layout/${encodeURIComponent(report.layout_key)}`)
    state.layoutKey = report.layout_key
    hideProgress()
    // Fit before drawing: measuring the canvas after 2,000 new nodes would force a full layout of them.
    if (!state.fitted) {
      fit()
      state.fitted = true
    }
    drawGraph()
  } else {
    updateNodes()
  }
  applyHighlights()
  renderCounts()
  renderInbox()
  if (state.selected) {
    if (state.tasks.has(state.selected)) await renderDetails(state.selected, true)
    else select(null)
  }
  document.body.dataset.version = String(report.version)
  // For the benchmark and the browser test: milliseconds from the page's request to the first full paint.
  if (!document.body.dataset.paintedMs) requestAnimationFrame(() => setTimeout(() => (document.body.dataset.paintedMs = String(Math.round(performance.now())))))
}

// ---------- graph ----------

function nodeMarkup(t, box) {
  const parent = state.parents.has(t.id)
  const classes = ["node", `st-${t.status}`, parent ? "parent" : "", t.checkpoint ? "checkpoint" : "", t.review ? "review" : ""].filter(Boolean).join(" ")
  const badges = [t.checkpoint ? "⚑ checkpoint" : "", t.validation_task_id ? `✓ by ${t.validation_task_id}` : "", t.steps.total ? `${t.steps.done}/${t.steps.total} steps` : "", t.agent_name ? `@${t.agent_name}` : ""].filter(Boolean).join("  ")
  const head = `<g class="${classes}" data-id="${esc(t.id)}" transform="translate(${box.x},${box.y})"><title>${esc(`${t.id}: ${t.title} (${t.status})`)}</title><rect width="${box.width}" height="${box.height}"></rect>`
  if (parent) {
    const room = Math.max(8, Math.floor((box.width - 24) / 7) - t.id.length - 2)
    return `${head}<rect class="bar" width="6" height="24" rx="3"></rect><text class="title" x="12" y="19"><tspan class="id">${esc(t.id)}</tspan>  ${esc(clip(t.title, room))}  <tspan class="badge">${esc(badges)}</tspan></text></g>`
  }
  const room = Math.max(8, Math.floor((box.width - 16) / 7))
  return `${head}<rect class="bar" width="6" height="${box.height}" rx="3"></rect><text class="id" x="12" y="14">${esc(t.id)}</text>` +
    `<text class="title" x="12" y="30">${esc(clip(t.title, room))}</text><text class="badge" x="12" y="43">${esc(badges)}</text></g>`
}

function clip(text, chars) {
  const one = text.replace(/\s+/g, " ")
  return one.length > chars ? `${one.slice(0, chars - 1)}…` : one
}

function edgePath(points) {
  return `M${points.map((p) => `${p[0]},${p[1]}`).join("L")}`
}

function curve(a, b) {
  const x1 = a.x + a.width
  const y1 = a.y + a.height / 2
  const x2 = b.x
  const y2 = b.y + b.height / 2
  const dx = Math.max(40, Math.abs(x2 - x1) / 2)
  return `M${x1},${y1}C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`
}

function drawGraph() {
  const { layout } = state
  const titles = new Map(state.report.phases.map((p) => [p.phase, p.title]))
  $("bands").innerHTML = layout.phases
    .map((b) => `<g class="band"><rect x="${b.x - 10}" y="${b.y}" width="${b.width + 20}" height="${b.height}" rx="10"></rect><text x="${b.x + 4}" y="${b.y + 30}">${esc(titles.get(b.phase) ?? "No phase")}</text></g>`)
    .join("")
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
      edges.push(`<path class="edge validates" data-from="${esc(t.id)}" data-to="${esc(t.validation_task_id)}" d="${curve(to, layout.nodes[t.validation_task_id])}"></path>`)
    }
  }
  $("edges").innerHTML = edges.join("")
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
}

/** A status or title change: the same layout, new classes and texts on the existing nodes. */
function updateNodes() {
  for (const g of $("nodes").children) {
    const t = state.tasks.get(g.dataset.id)
    if (!t) continue
    const fresh = nodeMarkup(t, state.layout.nodes[t.id])
    if (state.drawn.get(t.id) === fresh) continue
    state.drawn.set(t.id, fresh)
    g.outerHTML = fresh
  }
}

function nodeEl(id) {
  return $("nodes").querySelector(`g[data-id="${CSS.escape(id)}"]`)
}

// ---------- highlights: selection chain, search, status filter ----------

function chainOf(id) {
  const on = new Set([id])
  const walk = (start, next) => {
    const stack = [start]
    while (stack.length) {
      for (const n of next(stack.pop()) ?? []) if (!on.has(n)) (on.add(n), stack.push(n))
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

function applyHighlights() {
  const chain = state.selected && state.tasks.has(state.selected) ? chainOf(state.selected) : null
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
  for (const e of $("edges").children) {
    e.classList.toggle("hot", chain ? chain.has(e.dataset.from) && chain.has(e.dataset.to) : false)
  }
  VIEWPORT.classList.toggle("dim", chain !== null)
  $("matches").textContent = q ? `${state.matches.length} match${state.matches.length === 1 ? "" : "es"}` : ""
}

function renderCounts() {
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]))
  for (const t of state.tasks.values()) counts[t.status] = (counts[t.status] ?? 0) + 1
  for (const s of STATUSES) {
    const el = $(`count-${s}`)
    if (el) el.textContent = String(counts[s])
  }
  $("counts").textContent = `${state.tasks.size} tasks`
}

function buildFilters() {
  $("filters").innerHTML = STATUSES.map((s) => `<label title="show ${s}"><input type="checkbox" data-status="${s}" checked><i class="dot ${s}"></i>${s} <span id="count-${s}">0</span></label>`).join("")
  $("filters").addEventListener("change", (e) => {
    const s = e.target.dataset.status
    if (e.target.checked) state.hidden.delete(s)
    else state.hidden.add(s)
    applyHighlights()
  })
}

// ---------- pan, zoom, fit ----------

function applyView() {
  const { x, y, k } = state.view
  VIEWPORT.setAttribute("transform", `translate(${x},${y}) scale(${k})`)
  // Far out, the texts are unreadable anyway; not drawing them keeps 2,000 tasks quick to paint.
  SVG.classList.toggle("far", k < 0.35)
}

function fit() {
  if (!state.layout) return
  const r = SVG.getBoundingClientRect()
  const w = Math.max(1, state.layout.width)
  const h = Math.max(1, state.layout.height)
  const k = Math.min(2, Math.max(0.02, Math.min((r.width - 40) / w, (r.height - 40) / h)))
  state.view = { k, x: (r.width - w * k) / 2, y: Math.max(20, (r.height - h * k) / 2) }
  applyView()
}

function centerOn(id) {
  const box = state.layout?.nodes[id]
  if (!box) return
  const r = SVG.getBoundingClientRect()
  const k = Math.max(state.view.k, 0.8)
  state.view = { k, x: r.width / 2 - (box.x + box.width / 2) * k, y: r.height / 2 - (box.y + box.height / 2) * k }
  applyView()
}

function setUpPanZoom() {
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
    select(target ? target.dataset.id : null)
  })
  SVG.addEventListener("wheel", (e) => {
    e.preventDefault()
    const r = SVG.getBoundingClientRect()
    const px = e.clientX - r.left
    const py = e.clientY - r.top
    const k = Math.min(4, Math.max(0.02, state.view.k * Math.exp(-e.deltaY * 0.0015)))
    const f = k / state.view.k
    state.view = { k, x: px - (px - state.view.x) * f, y: py - (py - state.view.y) * f }
    applyView()
  }, { passive: false })
  $("fit").addEventListener("click", fit)
}

// ---------- selection and details ----------

function select(id, center = false) {
  state.selected = id
  history.replaceState(null, "", id ? `#${encodeURIComponent(id)}` : location.pathname)
  applyHighlights()
  if (center && id) centerOn(id)
  if (id) void renderDetails(id, false)
  else $("details").innerHTML = '<p class="hint">Select a task to see its fields, instructions and the exact prompt its agent receives.</p>'
}

const SHOWN_KEYS = new Set(["id", "title", "status", "instructions", "acceptance_criteria", "ai_notes", "steps", "depends_on"])

function fieldRows(report) {
  const t = report.task
  const rows = [
    ["Phase", report.phase === null ? "none" : esc(report.phase_title ? `${report.phase}: ${report.phase_title}` : String(report.phase)) + (t.phase === undefined && report.phase !== null ? " (inherited)" : "")],
    ["Parent", report.parent ? taskLink(report.parent) : "none"],
    ["Agent", esc(t.agent_name ?? "none")],
  ]
  if (t.checkpoint !== undefined) rows.push(["Checkpoint", t.checkpoint ? "yes: waits for a person to accept it" : "no"])
  if (t.validation_task_id) rows.push(["Validated by", taskLink(t.validation_task_id)])
  if (report.validates.length) rows.push(["Validates", report.validates.map(taskLink).join(", ")])
  for (const [key, value] of Object.entries(t)) {
    if (SHOWN_KEYS.has(key) || ["phase", "agent_name", "checkpoint", "validation_task_id"].includes(key)) continue
    rows.push([esc(key), esc(typeof value === "string" ? value : JSON.stringify(value))])
  }
  return `<table class="fields">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>`
}

function list(items, render = (x) => inline(x)) {
  return items && items.length ? `<ul class="plain">${items.map((i) => `<li>${render(i)}</li>`).join("")}</ul>` : '<p class="hint">none</p>'
}

async function renderDetails(id, keepScroll) {
  const side = $("side")
  const scroll = side.scrollTop
  let report
  try {
    report = await api(`/api/tasks/${encodeURIComponent(id)}`)
  } catch (e) {
    $("details").innerHTML = `<p class="err">${esc(e.message)}</p>`
    return
  }
  if (state.selected !== id) return
  const t = report.task
  const graph = state.tasks.get(id)
  const steps = (t.steps ?? []).map((s) => `<div class="step"><span class="pill ${esc(s.status ?? "pending")}">${esc(s.status ?? "pending")}</span> <code>${esc(s.id)}</code>` +
    `${s.started_at ? ` <span class="when">started ${esc(s.started_at)}</span>` : ""}${s.completed_at ? ` <span class="when">done ${esc(s.completed_at)}</span>` : ""}` +
    `<div class="md">${markdown(s.instruction)}</div>${s.acceptance_criteria?.length ? `Done when:${list(s.acceptance_criteria)}` : ""}</div>`).join("")
  const html = [
    `<h2 id="detail-title">${esc(t.title)}</h2>`,
    `<p><code id="detail-id">${esc(t.id)}</code> <span class="pill ${esc(t.status)}" id="detail-status">${esc(t.status)}</span></p>`,
    graph?.review ? reviewCard(id) : "",
    fieldRows(report),
    `<h3>Instructions</h3><div class="md" id="detail-instructions">${t.instructions?.trim() ? markdown(t.instructions) : '<p class="hint">none</p>'}</div>`,
    `<h3>Acceptance criteria</h3>${list(t.acceptance_criteria)}`,
    t.steps?.length ? `<h3>Steps</h3>${steps}` : "",
    `<h3>Notes</h3>${list(t.ai_notes, (n) => `<span class="note">${esc(n)}</span>`)}`,
    `<h3>Depends on</h3>${list(report.dependencies, (d) => taskLink(d.id))}`,
    `<h3>Dependents</h3>${list(report.dependents, taskLink)}`,
    report.subtasks.length ? `<h3>Subtasks</h3>${list(report.subtasks, (s) => `${"&nbsp;&nbsp;".repeat(s.depth - graph.depth - 1)}${taskLink(s.id)} ${esc(s.title)}`)}` : "",
    `<h3>Prompt <button type="button" data-copy="prompt">Copy</button></h3><p class="hint">Exactly what an agent receives for this task.</p><pre class="prompt" id="prompt">${esc(report.prompt)}</pre>`,
    report.resume_prompt ? `<h3>Resume prompt <button type="button" data-copy="resume-prompt">Copy</button></h3><p class="hint">What the agent gets when the session resumes for the current step.</p><pre class="prompt" id="resume-prompt">${esc(report.resume_prompt)}</pre>` : "",
  ]
  $("details").innerHTML = html.join("\n")
  if (keepScroll) side.scrollTop = scroll
}

// ---------- questions and checkpoints ----------

function reviewCard(id) {
  return `<div class="card" data-review="${esc(id)}"><div class="meta">Checkpoint ${taskLink(id)} waits for your review</div>` +
    `<textarea placeholder="Reason (needed to block; kept as a note)"></textarea>` +
    `<button type="button" class="primary" data-decision="done">Accept (done)</button> <button type="button" class="danger" data-decision="block">Block</button> <span class="err"></span></div>`
}

function renderInbox() {
  const reviews = [...state.tasks.values()].filter((t) => t.review)
  const parts = []
  if (state.questions.length) {
    parts.push(`<h3>Questions (${state.questions.length})</h3>`)
    for (const q of state.questions) {
      parts.push(`<div class="card" data-question="${esc(q.id)}"><div class="meta"><b>${esc(q.id)}</b> · ${taskLink(q.task_id)}${q.agent ? ` · ${esc(q.agent)}` : ""} · asked ${esc(q.asked_at)}</div>` +
        `<div class="text">${esc(q.text)}</div><textarea placeholder="Your answer"></textarea><button type="button" class="primary" data-answer>Answer</button> <span class="err"></span></div>`)
    }
  }
  if (reviews.length) {
    parts.push(`<h3>Checkpoints to review (${reviews.length})</h3>`)
    for (const t of reviews) parts.push(reviewCard(t.id))
  }
  // Keep what a person is typing: the inbox is redrawn only when its items change.
  const html = parts.join("")
  if ($("inbox").dataset.html !== html) {
    const typed = new Map([...$("inbox").querySelectorAll(".card")].map((c) => [c.dataset.question ?? `r:${c.dataset.review}`, c.querySelector("textarea")?.value ?? ""]))
    $("inbox").innerHTML = html
    $("inbox").dataset.html = html
    for (const c of $("inbox").querySelectorAll(".card")) {
      const value = typed.get(c.dataset.question ?? `r:${c.dataset.review}`)
      if (value) c.querySelector("textarea").value = value
    }
  }
}

async function post(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json", "x-flow-token": TOKEN }, body: JSON.stringify(body) })
}

async function onCardClick(e) {
  const button = e.target.closest("button")
  const card = e.target.closest(".card")
  if (!button || !card) return
  const error = card.querySelector(".err")
  const text = card.querySelector("textarea")?.value ?? ""
  button.disabled = true
  try {
    if (card.dataset.question !== undefined && button.hasAttribute("data-answer")) {
      await post(`/api/questions/${encodeURIComponent(card.dataset.question)}/answer`, { answer: text })
    } else if (card.dataset.review !== undefined && button.dataset.decision) {
      await post(`/api/tasks/${encodeURIComponent(card.dataset.review)}/review`, { decision: button.dataset.decision, reason: text })
    } else return
    error.textContent = ""
    await refresh()
  } catch (err) {
    error.textContent = err.message
  } finally {
    button.disabled = false
  }
}

// ---------- banners ----------

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
    $("live").textContent = "live"
    $("live").classList.remove("off")
  })
  source.addEventListener("error", () => {
    $("live").textContent = "reconnecting"
    $("live").classList.add("off")
  })
  source.addEventListener("version", (e) => {
    const { version } = JSON.parse(e.data)
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

function start() {
  buildFilters()
  setUpPanZoom()
  applyView()
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
  const initial = decodeURIComponent(location.hash.slice(1))
  showProgress("Loading the tasks…")
  connect()
  void refresh().then(() => {
    if (initial && state.tasks.has(initial)) select(initial, true)
  })
}

start()
