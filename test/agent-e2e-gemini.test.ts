// Gemini CLI (the real CLI) end to end under `flow run`, against the scripted model server.
import { agentE2E } from "./agent-e2e"
import { gemini } from "./agent-e2e-gemini-setup"

agentE2E(gemini)
