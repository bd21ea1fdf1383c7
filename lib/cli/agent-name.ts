// Agent names end up in prompts, logs, the state database and flow.yaml: one rule for all of them.
// A module of its own so that `flow assign` checks a name without loading flow.yaml's schema (arktype).
export const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
export const AGENT_NAME_HINT = "use up to 64 letters, digits, '.', '_' and '-', starting with a letter or digit (for example claude or codex-2)"
