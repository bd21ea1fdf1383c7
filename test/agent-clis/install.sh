#!/usr/bin/env bash
# Installs the real agent CLIs whose --help test/agent-flags.test.ts checks the adapters' flags against.
# Test-only: about 1.4 GB on disk (the CLIs ship native binaries); flow itself never depends on them.
set -euo pipefail
cd "$(dirname "$0")"
# Not `npm ci`: opencode-ai lists a dozen per-platform optional packages, and the registry this runs
# against does not serve them all, so the lock file holds only the ones that resolve and `npm ci` calls
# it out of sync. `npm install --no-save` follows the same lock file and never rewrites it.
npm install --no-save --no-audit --no-fund
