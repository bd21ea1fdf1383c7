// Claude Code's whole end-to-end scenario (test/agent-e2e.ts: a chain with steps in one session, a forgotten
// 'flow done', questions with and without --wait, a rejected key, a stop and a resume) with flow.yaml's
// `sandbox: true` (issue 38, docs/SANDBOX.md): every flow command the model runs goes through the door.
import { agentE2E } from "./agent-e2e"
import { claude } from "./agent-e2e-claude-setup"

agentE2E(claude, { sandbox: true })
