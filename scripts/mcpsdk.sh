#!/usr/bin/env bash
# mcpsdk.sh — installs what the OAuth end-to-end test runs: Node.js and npm
# from Debian when missing, then the official MCP TypeScript SDK at the
# version pinned in e2e/oauthclient/package-lock.json (npm ci). Uses sudo
# when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "mcpsdk: installing nodejs and npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq >&2
  as_root apt-get install -y -qq nodejs npm >&2
fi
npm ci --prefix e2e/oauthclient --no-audit --no-fund --loglevel=error >&2
