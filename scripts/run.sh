#!/usr/bin/env bash
# run.sh — run postgram-server on this machine with a local PostgreSQL +
# pgvector (installed and started on loopback when DATABASE_URL is unset).
# The cluster's data lives in ~/.local/share/postgram/pg (/var/lib/postgram/pg
# when run as root), with durable settings.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  scripts/pgtest.sh install
  default_dir="$HOME/.local/share/postgram/pg"
  [ "$(id -u)" = 0 ] && default_dir=/var/lib/postgram/pg
  export PGTEST_DIR="${POSTGRAM_PG_DIR:-$default_dir}"
  export PGTEST_PORT="${POSTGRAM_PG_PORT:-55433}"
  export PGTEST_DURABLE=1
  DATABASE_URL=$(scripts/pgtest.sh start)
  export DATABASE_URL
fi
exec go run ./cmd/postgram-server "$@"
