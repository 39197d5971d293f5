#!/usr/bin/env bash
# Try a fleet on one machine: three gateways on 127.0.0.1:8787-8789 sharing the local
# PostgreSQL (database gw, created when missing) and Redis, each with its own state dir
# under ./fleet-state. Needs gw on PATH (the venv's, pipx's or gw.pyz as `gw`), psql and
# createdb for PostgreSQL 15+, and Redis.
#
#   ./start-local.sh          start the three and wait until each is ready
#   ./start-local.sh stop     stop them (SIGTERM: each drains, then exits)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
state="$here/fleet-state"
ports=(8787 8788 8789)
export GW_STATE_URL="${GW_STATE_URL:-postgresql://${PGUSER:-postgres}@127.0.0.1:5432/gw}"
export GW_REDIS_URL="${GW_REDIS_URL:-redis://127.0.0.1:6379/0}"

if [ "${1:-}" = stop ]; then
  for port in "${ports[@]}"; do
    pidfile="$state/$port/serve.pid"
    [ -f "$pidfile" ] && kill -TERM "$(cat "$pidfile")" 2>/dev/null && echo "stopping gw on :$port"
    rm -f "$pidfile"
  done
  exit 0
fi

psql "${GW_STATE_URL%/*}/postgres" -Atqc "select 1 from pg_database where datname = 'gw'" | grep -q 1 \
  || createdb -h 127.0.0.1 -U "${PGUSER:-postgres}" gw
if [ -z "${GW_ADMIN_KEY:-}" ]; then
  GW_ADMIN_KEY="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
  echo "GW_ADMIN_KEY=$GW_ADMIN_KEY   (export it to use the admin commands)"
fi
export GW_ADMIN_KEY

for port in "${ports[@]}"; do
  mkdir -p "$state/$port"
  gw serve --config "$here/gw.yaml" --host 127.0.0.1 --port "$port" --state-dir "$state/$port" \
    >"$state/$port/serve.log" 2>&1 &
  echo $! >"$state/$port/serve.pid"
done
for port in "${ports[@]}"; do
  ready=""
  for _ in $(seq 1 60); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && { ready=1; break; }
    kill -0 "$(cat "$state/$port/serve.pid")" 2>/dev/null || { echo "gw on :$port exited:"; tail -5 "$state/$port/serve.log"; exit 1; }
    sleep 0.5
  done
  [ -n "$ready" ] || { echo "gw on :$port not ready after 30 s; see $state/$port/serve.log"; exit 1; }
  echo "gw on :$port ready (pid $(cat "$state/$port/serve.pid"), log $state/$port/serve.log)"
done
