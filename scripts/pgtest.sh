#!/usr/bin/env bash
# pgtest.sh — install and start a throwaway PostgreSQL 15 + pgvector cluster on loopback for tests.
#
#   scripts/pgtest.sh install   install server, dev headers and pgvector (built from Debian's source package)
#   scripts/pgtest.sh start     initialise (if needed) and start the cluster; prints the DSN on stdout
#   scripts/pgtest.sh replica   make (if needed) and start a streaming replica of the running
#                               cluster (pg_basebackup); prints its DSN on stdout
#   scripts/pgtest.sh stop      stop the cluster (and its replica)
#   scripts/pgtest.sh dsn       print the DSN
#
# Environment: PGTEST_DIR (default /tmp/postgram-pgtest), PGTEST_PORT (default 55432),
# PGTEST_REPLICA_PORT (default PGTEST_PORT+2, clear of scripts/run.sh's 55433; the replica lives in
# PGTEST_DIR-replica),
# PGTEST_DURABLE=1 keeps fsync on (scripts/run.sh uses it for real data).
# The cluster trusts local connections and listens only on 127.0.0.1.
set -euo pipefail

PGVER=15
PGBIN=/usr/lib/postgresql/$PGVER/bin
DIR=${PGTEST_DIR:-/tmp/postgram-pgtest}
PORT=${PGTEST_PORT:-55432}
DSN="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
RDIR=$DIR-replica
RPORT=${PGTEST_REPLICA_PORT:-$((PORT + 2))}
RDSN="postgres://postgres@127.0.0.1:$RPORT/postgres?sslmode=disable"

log() { echo "pgtest: $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install() {
  export DEBIAN_FRONTEND=noninteractive
  local need=()
  for p in postgresql-$PGVER postgresql-server-dev-$PGVER build-essential dpkg-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    as_root apt-get update -qq >&2
    as_root apt-get install -y -qq "${need[@]}" >&2
  fi
  if [ -f /usr/share/postgresql/$PGVER/extension/vector.control ]; then
    log "pgvector already installed"
    return
  fi
  # Debian bookworm has no pgvector binary for 15; build it from trixie's source package.
  local src=/etc/apt/sources.list.d/postgram-trixie-src.sources
  if [ ! -f "$src" ]; then
    as_root tee "$src" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  as_root apt-get update -qq >&2
  local build
  build=$(mktemp -d)
  (cd "$build" && apt-get source -qq pgvector >&2)
  local d
  d=$(find "$build" -maxdepth 1 -mindepth 1 -type d -name 'pgvector-*' | head -n1)
  [ -n "$d" ] || { log "apt-get source pgvector produced no source tree"; exit 1; }
  log "building $(basename "$d")"
  make -C "$d" -s PG_CONFIG=$PGBIN/pg_config >&2
  as_root make -C "$d" -s PG_CONFIG=$PGBIN/pg_config install >&2
  rm -rf "$build"
}

run_pg() {
  # initdb and postgres refuse to run as root; use the postgres system user then.
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  if [ ! -f "$DIR/PG_VERSION" ]; then
    mkdir -p "$DIR"
    chmod 700 "$DIR"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
    run_pg "$PGBIN/initdb" -D "$DIR" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
    cat >>"$DIR/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 300
shared_buffers = 2GB
work_mem = 16MB
maintenance_work_mem = 512MB
max_wal_size = 4GB
logging_collector = off
CONF
    if [ "${PGTEST_DURABLE:-0}" != 1 ]; then
      # A throwaway test cluster: trade durability for speed.
      printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$DIR/postgresql.conf"
    fi
  fi
  if ! run_pg "$PGBIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
    run_pg "$PGBIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 start >&2
  fi
  psql "$DSN" -qAtc "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
  echo "$DSN"
}

replica() {
  # A replica left stopped while the primary recycled its WAL cannot catch
  # up: make it anew.
  if [ -f "$RDIR/PG_VERSION" ] && ! replica_streams; then
    log "the replica in $RDIR is not streaming: making it anew"
    if run_pg "$PGBIN/pg_ctl" -D "$RDIR" status >/dev/null 2>&1; then
      run_pg "$PGBIN/pg_ctl" -D "$RDIR" -m immediate stop >&2
    fi
    rm -rf "$RDIR"
  fi
  if [ ! -f "$RDIR/PG_VERSION" ]; then
    mkdir -p "$RDIR"
    chmod 700 "$RDIR"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$RDIR"
    # A streaming standby of the whole cluster (every test schema), with
    # its own port and socket directory, and a replication slot so that the
    # primary keeps the WAL it has not received yet. The standby reports
    # its oldest snapshot every second rather than every ten (the default):
    # with hot_standby_feedback the primary cannot prune rows newer than the
    # last report, and ten seconds of a busy queue's dead index entries made
    # each queue claim and event numbering read ~1,800 buffers instead of ~200.
    psql "$DSN" -qAtc "SELECT pg_drop_replication_slot('postgram_test_replica') FROM pg_replication_slots WHERE slot_name = 'postgram_test_replica'" >/dev/null
    run_pg "$PGBIN/pg_basebackup" -D "$RDIR" -R -C -S postgram_test_replica -X stream -c fast -h 127.0.0.1 -p "$PORT" -U postgres >&2
    cat >>"$RDIR/postgresql.conf" <<CONF
port = $RPORT
unix_socket_directories = '$RDIR'
hot_standby = on
hot_standby_feedback = on
wal_receiver_status_interval = 1s
CONF
  fi
  if ! run_pg "$PGBIN/pg_ctl" -D "$RDIR" status >/dev/null 2>&1; then
    run_pg "$PGBIN/pg_ctl" -D "$RDIR" -l "$RDIR/server.log" -w -t 60 start >&2
  fi
  # Replaying, not paused by an earlier test run, and streaming.
  psql "$RDSN" -qAtc "SELECT pg_wal_replay_resume()" >/dev/null
  [ "$(psql "$RDSN" -qAtc "SELECT pg_is_in_recovery()")" = t ] || { log "the replica at $RPORT is not a standby"; exit 1; }
  replica_streams || { log "the replica at $RPORT does not stream from the primary (see $RDIR/server.log)"; exit 1; }
  echo "$RDSN"
}

# replica_streams reports whether the replica runs and streams WAL from the
# primary (waiting up to 10 s for it to connect).
replica_streams() {
  run_pg "$PGBIN/pg_ctl" -D "$RDIR" status >/dev/null 2>&1 || run_pg "$PGBIN/pg_ctl" -D "$RDIR" -l "$RDIR/server.log" -w -t 60 start >&2 || return 1
  for _ in $(seq 1 20); do
    [ "$(psql "$RDSN" -qAtc "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'" 2>/dev/null)" = 1 ] && return 0
    sleep 0.5
  done
  return 1
}

# stop_one stops the cluster in $1 when it runs; a pid file left by a crash or a reboot is not
# an error (pg_ctl status tells a live server from a stale pid file).
stop_one() {
  [ -f "$1/PG_VERSION" ] || return 0
  if run_pg "$PGBIN/pg_ctl" -D "$1" status >/dev/null 2>&1; then
    run_pg "$PGBIN/pg_ctl" -D "$1" -m fast stop >&2
  fi
}

stop() {
  stop_one "$RDIR"
  stop_one "$DIR"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  replica) replica ;;
  stop) stop ;;
  dsn) echo "$DSN" ;;
  *) echo "usage: $0 install|start|replica|stop|dsn" >&2; exit 2 ;;
esac
