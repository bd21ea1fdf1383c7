#!/usr/bin/env bash
# Installs the real agent CLIs whose --help test/agent-flags.test.ts checks the adapters' flags against.
# Test-only: about 1.4 GB on disk (the CLIs ship native binaries); flow itself never depends on them.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
