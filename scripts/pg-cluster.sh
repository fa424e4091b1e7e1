#!/usr/bin/env bash
# A throw-away PostgreSQL 15 + PostGIS cluster for tests and benchmarks: a fresh
# initdb in a temp dir, trust auth, listening on 127.0.0.1 on a free port with its
# unix socket in the same temp dir, database "wm" with the postgis extension.
# Nothing outside the temp dir is touched, so several can run side by side.
#
# Sourced (the way tests use it):
#   source scripts/pg-cluster.sh
#   wm_pg_start            # sets PGHOST PGPORT PGUSER PGDATABASE WM_PG_DIR WM_PG_DSN,
#                          # installs an EXIT trap that stops and removes the cluster
#                          # (it REPLACES any EXIT trap: set a combined one after it,
#                          # e.g. trap 'wm_pg_stop; rm -rf "$mine"' EXIT; WM_PG_NO_TRAP=1 skips it)
#   psql -c 'select postgis_full_version()'
#   wm_pg_load_world ../shared/data/world/monaco.geojson   # table "world", see below
#   wm_pg_stop             # optional: the trap does it
#
# As a command (for a shell session by hand; stop it yourself):
#   eval "$(scripts/pg-cluster.sh start)"   # prints export lines, cluster keeps running
#   scripts/pg-cluster.sh stop "$WM_PG_DIR"
#
# PostgreSQL refuses to run as root, so when we are root the server runs as the
# "postgres" system user (runuser); the client stays whoever we are, over TCP with
# trust auth. Every wait is bounded (WM_PG_TIMEOUT seconds, default 60).

WM_PG_BIN=${WM_PG_BIN:-/usr/lib/postgresql/15/bin}
WM_PG_TIMEOUT=${WM_PG_TIMEOUT:-60}

_wm_pg_as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

_wm_pg_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wm_pg_start: create, start, create db + postgis. Returns non-zero with the server
# log on stderr if anything fails (and leaves nothing behind).
wm_pg_start() {
  local dir port try
  dir=$(mktemp -d "${TMPDIR:-/tmp}/wm-pg.XXXXXX") || return 1
  chmod 755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  WM_PG_DIR=$dir
  if [ "${WM_PG_NO_TRAP:-0}" != 1 ]; then trap 'wm_pg_stop' EXIT; trap 'exit 130' INT TERM; fi
  if ! _wm_pg_as_server timeout "$WM_PG_TIMEOUT" "$WM_PG_BIN/initdb" -D "$dir/data" -A trust -U postgres \
        -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
    echo "pg-cluster: initdb failed:" >&2; cat "$dir/initdb.log" >&2; wm_pg_stop; return 1
  fi
  # A port found free can be taken before the server binds it: retry a few times.
  for try in 1 2 3 4 5; do
    port=$(_wm_pg_free_port)
    if _wm_pg_as_server "$WM_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t "$WM_PG_TIMEOUT" \
         -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
         start >/dev/null 2>&1; then
      break
    fi
    port=""
  done
  if [ -z "$port" ]; then
    echo "pg-cluster: server did not start:" >&2; tail -20 "$dir/server.log" >&2; wm_pg_stop; return 1
  fi
  export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=wm WM_PG_DIR=$dir
  export WM_PG_DSN="PG:host=127.0.0.1 port=$port user=postgres dbname=wm"
  if ! timeout "$WM_PG_TIMEOUT" psql -X -q -d postgres -v ON_ERROR_STOP=1 -c 'CREATE DATABASE wm' >/dev/null ||
     ! timeout "$WM_PG_TIMEOUT" psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION postgis' >/dev/null; then
    echo "pg-cluster: could not create database wm with postgis" >&2; wm_pg_stop; return 1
  fi
}

# wm_pg_stop [DIR]: stop the server (fast, then immediate, then by its own pid) and
# remove the temp dir. Safe to call twice.
wm_pg_stop() {
  local dir=${1:-${WM_PG_DIR:-}} pid
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    _wm_pg_as_server "$WM_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 15 stop >/dev/null 2>&1 ||
      _wm_pg_as_server "$WM_PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || {
        pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null)
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; sleep 1; }
  fi
  rm -rf "$dir"
  [ "$dir" = "${WM_PG_DIR:-}" ] && unset WM_PG_DIR
  return 0
}

# wm_pg_load_world FILE [TABLE]: load a world GeoJSON (FeatureCollection with a
# projected "crs" member, string ids, properties.cats a list) with ogr2ogr into
# TABLE (default "world"): peid text primary key, cats text[], geom geometry with
# the file's SRID and a GiST index. ogr2ogr keeps the doubles of the file exactly
# (binary COPY of WKB), so predicates see the same coordinates as our resolver.
wm_pg_load_world() {
  local file=$1 table=${2:-world} raw=${2:-world}_ogr
  timeout "$WM_PG_TIMEOUT" ogr2ogr -f PostgreSQL "$WM_PG_DSN" "$file" -nln "$raw" -nlt GEOMETRY \
    -lco GEOMETRY_NAME=geom -lco FID=ogc_fid -lco SPATIAL_INDEX=NONE -lco PRECISION=NO \
    -oo ARRAY_AS_STRING=NO -overwrite || { echo "pg-cluster: ogr2ogr failed on $file" >&2; return 1; }
  timeout "$WM_PG_TIMEOUT" psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL || return 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS $table;
CREATE TABLE $table AS SELECT id::text AS peid, cats::text[] AS cats, geom FROM $raw ORDER BY ogc_fid;
ALTER TABLE $table ADD PRIMARY KEY (peid);
CREATE INDEX ${table}_geom_gist ON $table USING gist (geom);
DROP TABLE $raw;
ANALYZE $table;
SQL
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  case "${1:-}" in
    start)
      WM_PG_NO_TRAP=1 wm_pg_start || exit 1
      echo "export PGHOST=$PGHOST PGPORT=$PGPORT PGUSER=$PGUSER PGDATABASE=$PGDATABASE WM_PG_DIR=$WM_PG_DIR"
      echo "export WM_PG_DSN='$WM_PG_DSN'" ;;
    stop)
      [ -n "${2:-${WM_PG_DIR:-}}" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
      wm_pg_stop "${2:-$WM_PG_DIR}" ;;
    *) echo "usage: $0 start | stop DIR   (or source it and call wm_pg_start)" >&2; exit 2 ;;
  esac
fi
