#!/usr/bin/env bash
# test.sh — the whole test suite: installs and starts PostgreSQL 15 + pgvector
# on loopback with a streaming replica (scripts/pgtest.sh), installs headless Chromium for the web
# app's browser tests (scripts/browser.sh) and the MCP TypeScript SDK for the
# OAuth end-to-end test (scripts/mcpsdk.sh), then vets and runs every test with
# the race detector. Needs Debian with Go; uses sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/pgtest.sh install
POSTGRAM_TEST_DATABASE_URL=$(scripts/pgtest.sh start)
export POSTGRAM_TEST_DATABASE_URL
POSTGRAM_TEST_REPLICA_URL=$(scripts/pgtest.sh replica)
export POSTGRAM_TEST_REPLICA_URL
POSTGRAM_TEST_CHROMIUM=$(scripts/browser.sh)
export POSTGRAM_TEST_CHROMIUM
scripts/mcpsdk.sh

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 20m "$@" ./...
