#!/usr/bin/env bash
# The Debian packages that tests drive for real, installed when missing so that `npm test` is complete on a
# fresh machine: tmux (flow refine's prompts and flow plan's spinner, in a real terminal) and chromium (the
# inspector's page, driven headless by playwright-core; about 30 s to install), zsh and fish (flow completion's
# scripts, loaded into the real shells), postgresql (the shared store's server: test/postgres.ts starts one in
# a temp folder; CI never skips those tests), notify-send with dbus-daemon and Python's dbus bindings (the
# desktop notification's test starts a session bus and a notification server of its own), bubblewrap (the
# agents' sandbox, test/sandbox*.test.ts: flow.yaml `sandbox` runs them in bwrap).
# Runs as npm's pretest; needs root or sudo when something is missing (as on CI or a dev container).
set -euo pipefail
missing=()
command -v tmux >/dev/null || missing+=(tmux)
command -v chromium >/dev/null || missing+=(chromium)
command -v zsh >/dev/null || missing+=(zsh)
command -v fish >/dev/null || missing+=(fish)
command -v notify-send >/dev/null || missing+=(libnotify-bin)
command -v dbus-daemon >/dev/null || missing+=(dbus-daemon)
/usr/bin/python3 -c "import dbus, gi" 2>/dev/null || missing+=(python3-dbus python3-gi)
command -v bwrap >/dev/null || missing+=(bubblewrap)
# The server's binaries are not on PATH in Debian: test/postgres.ts looks in /usr/lib/postgresql/<n>/bin.
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || [ -n "${PG_BIN:-}" ] || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "the tests need ${missing[*]}: install them with your package manager, then run npm test again" >&2
  exit 1
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing ${missing[*]} for the tests (apt-get, once)..." >&2
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
