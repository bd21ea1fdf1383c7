// The page's files, embedded as strings: dist/flow serves them with nothing beside it.
import appJs from "../../web/app.js" with { type: "text" }
import graphJs from "../../web/graph.js" with { type: "text" }
import indexHtml from "../../web/index.html" with { type: "text" }
import minimapJs from "../../web/minimap.js" with { type: "text" }
import panelJs from "../../web/panel.js" with { type: "text" }
import stateJs from "../../web/state.js" with { type: "text" }
import styleCss from "../../web/style.css" with { type: "text" }
import textJs from "../../web/text.js" with { type: "text" }

const JS = "text/javascript; charset=utf-8"

/** The page (bun-types declares .html imports as HTMLBundle for Bun.serve routes; `type: "text"` makes it a string). */
export const INDEX_HTML = indexHtml as unknown as string

/** Every other file of the page by its path; nothing else is served by path. */
export const FILES: ReadonlyMap<string, { body: string; type: string }> = new Map([
  ["/app.js", { body: appJs, type: JS }],
  ["/graph.js", { body: graphJs, type: JS }],
  ["/minimap.js", { body: minimapJs, type: JS }],
  ["/panel.js", { body: panelJs, type: JS }],
  ["/state.js", { body: stateJs, type: JS }],
  ["/text.js", { body: textJs, type: JS }],
  ["/style.css", { body: styleCss, type: "text/css; charset=utf-8" }],
])
