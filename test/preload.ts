// Deterministic output for every test: no colour; UTC times unless a zone is given (`TZ=Pacific/Kiritimati
// npm test`: CI runs the suite once in a zone 14 hours off, so that no test holds only in UTC).
import { afterAll } from "bun:test"
import { ensureAgentClis } from "./agent-clis/installed"
import { killStarted } from "./helpers"

process.env.NO_COLOR = "1"
process.env.TZ ||= "Etc/UTC"
// The real agent CLIs, installed (first run only) before any test file loads: a file that decides at load
// time what it drives would otherwise find them missing on a fresh clone and skip.
ensureAgentClis()
// A flow a test left running (it timed out, or threw before it stopped its server) ends with the tests.
afterAll(killStarted)
