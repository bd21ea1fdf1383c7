#!/usr/bin/env bash
# Runs Biome (`npm run lint` → `biome check .`), installing it into tools/biome on first use.
# Its own folder, like test/agent-clis: @biomejs/biome lists one optional package per platform, the registry
# this project installs from does not serve them all, so the lock file holds only those that resolve and
# `npm ci` at the top would call it out of sync. `npm install --no-save` here follows the same lock and never rewrites it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/node_modules/.bin/biome" ]; then
  (cd "$here" && npm install --no-save --no-audit --no-fund --silent)
fi
cd "$here/../.."
exec "$here/node_modules/.bin/biome" "$@"
