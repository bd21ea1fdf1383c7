// The side panel: the selected task's details (every field, Markdown instructions, steps, notes, links, the
// exact prompt) and the questions and checkpoints waiting for a person, answered from here.
import { applyHighlights, centerOn } from "./graph.js"
import { $, actions, api, state, taskLink, TOKEN } from "./state.js"
import { budgetText, clockTime, esc, inline, markdown, queueDetail, usageText, workedByText } from "./text.js"

export function select(id, center = false) {
  state.selected = id
  history.replaceState(null, "", id ? `#${encodeURIComponent(id)}` : location.pathname)
  applyHighlights()
  if (center && id) centerOn(id)
  if (id) void renderDetails(id, false)
  else $("details").innerHTML = '<p class="hint">Select a task to see its fields, instructions and the exact prompt its agent receives.</p>'
}

export const SHOWN_KEYS = new Set(["id", "title", "status", "instructions", "acceptance_criteria", "ai_notes", "steps", "depends_on"])

export function fieldRows(report) {
  const t = report.task
  const rows = [
    [
      "Phase",
      report.phase === null
        ? "none"
        : esc(report.phase_title ? `${report.phase}: ${report.phase_title}` : String(report.phase)) +
          (t.phase === undefined && report.phase !== null ? " (inherited)" : ""),
    ],
    ["Parent", report.parent ? taskLink(report.parent) : "none"],
    // agent_name restricts who may take the task; who works on it is the next row.
    ["Agent", esc(t.agent_name ?? "none (any agent may take it)")],
  ]
  if (report.worked_by) rows.push(["Worked by", esc(workedByText(report.worked_by))])
  if (t.checkpoint !== undefined) rows.push(["Checkpoint", t.checkpoint ? "yes: waits for a person to accept it" : "no"])
  if (t.validation_task_id) rows.push(["Validated by", taskLink(t.validation_task_id)])
  if (report.validates.length) rows.push(["Validates", report.validates.map(taskLink).join(", ")])
  if (report.parked_until) rows.push(["Parked", esc(`until ${clockTime(report.parked_until)}: its agent's usage limit; then it goes on in the same session`)])
  if (usageText(report.usage)) rows.push(["Usage", esc(usageText(report.usage))])
  if (budgetText(report.budget)) rows.push(["Budget", esc(budgetText(report.budget))])
  for (const [key, value] of Object.entries(t)) {
    if (SHOWN_KEYS.has(key) || ["phase", "agent_name", "checkpoint", "validation_task_id"].includes(key)) continue
    rows.push([esc(key), esc(typeof value === "string" ? value : JSON.stringify(value))])
  }
  return `<table class="fields">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>`
}

export function list(items, render = (x) => inline(x)) {
  return items?.length ? `<ul class="plain">${items.map((i) => `<li>${render(i)}</li>`).join("")}</ul>` : '<p class="hint">none</p>'
}

export async function renderDetails(id, keepScroll) {
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
  const steps = (t.steps ?? [])
    .map(
      (s) =>
        `<div class="step"><span class="pill ${esc(s.status ?? "pending")}">${esc(s.status ?? "pending")}</span> <code>${esc(s.id)}</code>` +
        `${s.started_at ? ` <span class="when">started ${esc(s.started_at)}</span>` : ""}${s.completed_at ? ` <span class="when">done ${esc(s.completed_at)}</span>` : ""}` +
        `<div class="md">${markdown(s.instruction)}</div>${s.acceptance_criteria?.length ? `Done when:${list(s.acceptance_criteria)}` : ""}</div>`,
    )
    .join("")
  const html = [
    `<h2 id="detail-title">${esc(t.title)}</h2>`,
    `<p><code id="detail-id">${esc(t.id)}</code> <span class="pill ${esc(t.status)}" id="detail-status">${esc(t.status)}</span></p>`,
    // The review itself is in the list at the top of the panel, which keeps what is typed across updates.
    graph?.review ? '<p class="waiting">⚑ This checkpoint waits for your review: accept or block it at the top of this panel.</p>' : "",
    // Its merge passed, but something of the person's is in the way of their checkout (docs/RUN.md, "Landing").
    report.landing_wait ? `<p class="waiting" id="detail-landing">⏸ Landing waits: ${esc(report.landing_wait.reason)}</p>` : "",
    fieldRows(report),
    evidenceHtml(report.evidence),
    `<h3>Instructions</h3><div class="md" id="detail-instructions">${t.instructions?.trim() ? markdown(t.instructions) : '<p class="hint">none</p>'}</div>`,
    `<h3>Acceptance criteria</h3>${list(t.acceptance_criteria)}`,
    t.steps?.length ? `<h3>Steps</h3>${steps}` : "",
    `<h3>Notes</h3>${list(t.ai_notes, (n) => `<span class="note">${esc(n)}</span>`)}`,
    `<h3>Depends on</h3>${list(report.dependencies, (d) => taskLink(d.id))}`,
    `<h3>Dependents</h3>${list(report.dependents, taskLink)}`,
    report.subtasks.length
      ? `<h3>Subtasks</h3>${list(report.subtasks, (s) => `${"&nbsp;&nbsp;".repeat(s.depth - graph.depth - 1)}${taskLink(s.id)} ${esc(s.title)}`)}`
      : "",
    `<h3>Prompt <button type="button" data-copy="prompt">Copy</button></h3><p class="hint">Exactly what an agent receives for this task.</p><pre class="prompt" id="prompt">${esc(report.prompt)}</pre>`,
    report.resume_prompt
      ? `<h3>Resume prompt <button type="button" data-copy="resume-prompt">Copy</button></h3><p class="hint">What the agent gets when the session resumes for the current step.</p><pre class="prompt" id="resume-prompt">${esc(report.resume_prompt)}</pre>`
      : "",
  ]
  $("details").innerHTML = html.join("\n")
  if (keepScroll) side.scrollTop = scroll
}

/**
 * A task's evidence (docs/REVIEW.md, "Evidence"; the record is TaskEvidence in lib/model/json-shapes.ts): the
 * diff's files, the checks that ran with their output's tail, who did it and what it cost, the queue's wait.
 */
export function evidenceHtml(e) {
  if (!e) return ""
  const state = e.state === "landed" ? `landed into ${e.target}${e.commit ? ` as ${e.commit.slice(0, 12)}` : " (in the target already)"}` : e.state
  const files = e.diff.files.map(
    (f) => `<tr><td>${f.insertions === null ? "binary" : `+${f.insertions} −${f.deletions}`}</td><td><code>${esc(f.path)}</code></td></tr>`,
  )
  const checks = e.checks.map(
    (c) =>
      `<div class="check ${c.passed ? "passed" : "failed"}">${c.passed ? "✓ passed" : c.timed_out ? "✗ timed out" : `✗ failed (exit ${c.exit_code})`} after ${c.seconds.toFixed(1)} s: <code>${esc(c.command)}</code>` +
      `${c.output_tail ? `<pre class="prompt">${esc(c.output_tail)}</pre>` : ""}</div>`,
  )
  const cost = [usageText(e.usage), e.agent_seconds === null ? "" : `${e.agent_seconds} s of agent turns`].filter(Boolean).join(", ") || "none reported"
  const rows = [
    ["State", esc(`${state}, from ${e.branch} at ${e.head.slice(0, 12)}`)],
    ["Diff", esc(`${e.diff.files.length} file${e.diff.files.length === 1 ? "" : "s"}, +${e.diff.insertions} −${e.diff.deletions}`)],
    ["Agent", esc(`${e.agent ?? "none"} (attempts ${e.attempts}, fix rounds ${e.fix_rounds})`)],
    ["Cost", esc(cost)],
  ]
  if (e.queue)
    rows.push([
      "Queue",
      esc(`${e.queue.seconds.toFixed(1)} s from done to verdict, ${e.queue.checks} check${e.queue.checks === 1 ? "" : "s"}, ${e.queue.thrown} thrown away`),
    ])
  return (
    `<h3>Evidence</h3><div id="detail-evidence"><table class="fields">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>` +
    `${files.length ? `<table class="fields diffstat">${files.join("")}</table>` : ""}` +
    `${checks.length ? checks.join("") : `<p class="hint">${e.check === null ? "no check configured" : `${esc(e.check)}: none finished yet`}</p>`}</div>`
  )
}

// ---------- questions and checkpoints ----------

export function reviewCard(id) {
  return (
    `<div class="card" data-review="${esc(id)}"><div class="meta">Checkpoint ${taskLink(id)} waits for your review</div>` +
    `<textarea placeholder="Reason (needed to block; kept as a note)"></textarea>` +
    `<button type="button" class="primary" data-decision="done">Accept (done)</button> <button type="button" class="danger" data-decision="block">Block</button> <span class="err"></span></div>`
  )
}

export function renderInbox() {
  const reviews = [...state.tasks.values()].filter((t) => t.review)
  const parts = []
  if (state.questions.length) {
    parts.push(`<h3>Questions (${state.questions.length})</h3>`)
    for (const q of state.questions) {
      parts.push(
        `<div class="card" data-question="${esc(q.id)}"><div class="meta"><b>${esc(q.id)}</b> · ${taskLink(q.task_id)}${q.agent ? ` · ${esc(q.agent)}` : ""} · asked ${esc(q.asked_at)}</div>` +
          `<div class="text">${esc(q.text)}</div><textarea placeholder="Your answer"></textarea><button type="button" class="primary" data-answer>Answer</button> <span class="err"></span></div>`,
      )
    }
  }
  if (reviews.length) {
    parts.push(`<h3>Checkpoints to review (${reviews.length})</h3>`)
    for (const t of reviews) parts.push(reviewCard(t.id))
  }
  // Keep what a person is typing: the inbox is redrawn only when its items change.
  const html = parts.join("")
  if ($("inbox").dataset.html !== html) {
    const typed = new Map(
      [...$("inbox").querySelectorAll(".card")].map((c) => [c.dataset.question ?? `r:${c.dataset.review}`, c.querySelector("textarea")?.value ?? ""]),
    )
    $("inbox").innerHTML = html
    $("inbox").dataset.html = html
    for (const c of $("inbox").querySelectorAll(".card")) {
      const value = typed.get(c.dataset.question ?? `r:${c.dataset.review}`)
      if (value) c.querySelector("textarea").value = value
    }
  }
}

/** Each target's merge queue of the live or last run, a candidate a line (docs/VIEW.md); nothing without one. */
export function renderQueue() {
  const html = state.queue
    .map(
      (q) =>
        `<h3>Merge queue into ${esc(q.target)} (${q.candidates.length})</h3>` +
        q.candidates
          .map(
            (c) =>
              `<div class="qrow q-${esc(c.state)}" data-queued="${esc(c.task)}">${taskLink(c.task)} <b>${esc(c.state)}</b> <span class="meta">${esc(queueDetail(c, q.target, Date.now()))}</span></div>`,
          )
          .join(""),
    )
    .join("")
  if ($("queue").dataset.html !== html) {
    $("queue").innerHTML = html
    $("queue").dataset.html = html
  }
}

export async function post(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json", "x-flow-token": TOKEN }, body: JSON.stringify(body) })
}

export async function onCardClick(e) {
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
    await actions.refresh()
  } catch (err) {
    error.textContent = err.message
  } finally {
    button.disabled = false
  }
}
