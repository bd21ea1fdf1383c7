// The page's files, embedded as strings: dist/flow serves them with nothing beside it.
import appJs from "../../web/app.js" with { type: "text" }
import indexHtml from "../../web/index.html" with { type: "text" }
import styleCss from "../../web/style.css" with { type: "text" }

// bun-types declares every .html import as an HTMLBundle (for Bun.serve routes); `type: "text"` makes it a string.
export const ASSETS = { appJs, indexHtml: indexHtml as unknown as string, styleCss }
