// Text for the page: HTML escaping and a small, safe Markdown renderer (docs/VIEW.md). Every text from the
// project reaches the DOM through esc() (or textContent); no HTML from the project ever passes.

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }
export function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ESC[c])
}

/** Inline Markdown on one line: `code`, **bold**, *italic*, [text](http…). Escapes everything else. */
export function inline(text) {
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
export function markdown(text) {
  const lines = String(text ?? "")
    .replace(/\r\n?/g, "\n")
    .split("\n")
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

/** What a merge queue candidate is about, as `flow dashboard` words it (lib/landing/queue-report.ts queueDetail; the page imports nothing from lib/). */
export function queueDetail(c, target, now) {
  const built = c.state === "checking" || c.state === "passed" || (c.state === "failed" && c.on_top_of.length > 0)
  const base = built ? (c.on_top_of.length ? `on top of ${c.on_top_of.join(", ")}` : `on ${target}`) : ""
  const by = c.machine ? `by ${c.machine}` : ""
  const took = c.seconds === null ? "" : `after ${c.seconds.toFixed(1)} s`
  const waited = now !== undefined && c.since ? Math.max(0, (now - Date.parse(c.since)) / 1000) : undefined
  // Said once it is a wait worth telling (a minute): a short one is the queue's normal pace.
  const inLine = waited === undefined || Number.isNaN(waited) || waited < 60 ? "" : `in line ${Math.round(waited / 60)} min`
  return [base, by, took, c.reason ?? "", inLine].filter(Boolean).join("; ")
}

/** Tokens and cost as `flow show` prints them (lib/budget/usage.ts usageText): only what was reported; "" for none. */
export function usageText(u) {
  if (!u) return ""
  const n = (x) => String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  const tokens = [u.input_tokens !== undefined ? `${n(u.input_tokens)} in` : "", u.output_tokens !== undefined ? `${n(u.output_tokens)} out` : ""].filter(
    Boolean,
  )
  const cost = u.cost_usd !== undefined ? `$${u.cost_usd.toFixed(4)}${u.cost_estimated ? " (estimated)" : ""}` : ""
  return [tokens.length ? `tokens ${tokens.join(", ")}` : "", cost].filter(Boolean).join(", ")
}

/** Spend beside the caps, as `flow show` prints it (lib/budget/budget-report.ts budgetText): `$0.46 of $5.01, 3m of 45m`; "" for none. */
export function budgetText(b) {
  if (!b) return ""
  const n = (x) => String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  const minutes = (m) => {
    const s = Math.floor(m * 60)
    const [d, h, mi, se] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60]
    const parts = [
      [d, "d"],
      [h, "h"],
      [mi, "m"],
      [se, "s"],
    ]
    const first = parts.findIndex(([x]) => x > 0)
    if (first < 0) return "0s"
    return parts
      .slice(first, first + 2)
      .filter(([x], i) => i === 0 || x > 0)
      .map(([x, u]) => `${x}${u}`)
      .join(" ")
  }
  const parts = []
  if (b.usd) parts.push(`$${b.usd.spent.toFixed(2)} of $${b.usd.cap.toFixed(2)}`)
  if (b.tokens) parts.push(`${n(b.tokens.spent)} of ${n(b.tokens.cap)} tokens`)
  if (b.minutes) parts.push(`${minutes(b.minutes.spent)} of ${minutes(b.minutes.cap)}`)
  return parts.join(", ")
}

/** `14:05`, or `Nov 26 14:05` when not today (lib/run/log.ts clockTime). */
export function clockTime(iso) {
  const at = new Date(iso)
  const hm = `${String(at.getHours()).padStart(2, "0")}:${String(at.getMinutes()).padStart(2, "0")}`
  return at.toDateString() === new Date().toDateString() ? hm : `${at.toLocaleString("en-US", { month: "short" })} ${at.getDate()} ${hm}`
}

/** Who works or worked on a task, as `flow show` words it (lib/run/worked-by.ts workedByText). */
export function workedByText(w) {
  const agent = w.machine ? `${w.agent} on ${w.machine}` : w.agent
  if (w.state === "working") return `${agent} (working on it now)`
  if (w.state === "stopped") return `${agent} (stopped with its run; the next 'flow run' resumes it)`
  return `${agent} (until ${w.ended_at}, leaving it ${w.ended_status})`
}
