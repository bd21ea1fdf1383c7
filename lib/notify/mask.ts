// No secret in a message (docs/NOTIFY.md, "Secrets"): a message quotes what agents and checks wrote (a
// question, a block's reason), which may hold a database URL with its password, an inspector's address with
// its token or an API key. Everything sent is masked here first.
import { redact } from "../git/publish"

const SHOWN = "***"

// Query parameters that carry credentials (the inspector's ?token=, signed URLs' keys).
const SECRET_PARAM = /([?&#](?:token|access_token|auth|key|api_key|apikey|password|secret|sig|signature)=)[A-Za-z0-9._~%+/=-]+/gi
// The shapes of well-known providers' keys: Anthropic and OpenAI, GitHub, Slack, AWS, Google, GitLab.
const KEY_SHAPES =
  /\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|glpat-[A-Za-z0-9_-]{16,})/g
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi
// Environment variables whose values are secrets by their names: their values are masked wherever they appear.
const SECRET_NAME = /(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL)/i

/** The values of `env` that are secrets by their variables' names, longest first (a value inside another stays masked). */
export function secretValues(env: Record<string, string | undefined>): string[] {
  return Object.entries(env)
    .filter(([name, value]) => SECRET_NAME.test(name) && value !== undefined && value.length >= 6)
    .map(([, value]) => value as string)
    .sort((a, b) => b.length - a.length)
}

/** `text` with every secret flow can recognise masked: credentials in URLs, tokens in addresses, keys, `secrets`. */
export function mask(text: string, secrets: readonly string[] = []): string {
  let out = text
  for (const value of secrets) out = out.split(value).join(SHOWN)
  return redact(out).replace(SECRET_PARAM, `$1${SHOWN}`).replace(KEY_SHAPES, SHOWN).replace(BEARER, `$1${SHOWN}`)
}
