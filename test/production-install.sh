#!/bin/sh
# A production install as an image would make it, checked end to end: the checkout's files and its
# dist/ (built here before) copied to a fresh folder, `npm ci --omit=dev` (no esbuild, no tsx, no
# pinned Node), then the service started there from the built entry on DATABASE_URL, until
# `npm run db:migrate` and /readyz answer on a database of its own. Run by .ci/run after the suite;
# needs DATABASE_URL (a server where it may create a database), psql and the npm registry.
set -eu
: "${DATABASE_URL:?production-install.sh needs DATABASE_URL}"
root=$(cd "$(dirname "$0")/.." && pwd)
target=$(mktemp -d)
# The runtime an image would bring: the pinned Node alone on PATH (not the dev tools beside it).
runtime=$(mktemp -d)
ln -s "$(readlink -f "$root/node_modules/.bin/node")" "$runtime/node"
PATH="$runtime:$PATH"
database="wi_production_install_$$"
trap 'kill "$pid" 2>/dev/null || true; psql -q "$DATABASE_URL" -c "drop database if exists $database with (force)"; rm -rf "$target" "$runtime"' EXIT
pid=
psql -q "$DATABASE_URL" -c "create database $database"
db_url=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.href)' "$DATABASE_URL" "$database")
cd "$root"
git ls-files -z | xargs -0 cp --parents -t "$target"
cp -r dist "$target/"
cd "$target"
npm ci --omit=dev --no-audit --no-fund --loglevel=error
for tool in esbuild tsx node; do
  if [ -e "node_modules/$tool" ]; then echo "production install has $tool" >&2; exit 1; fi
done
DATABASE_URL="$db_url" npm run --silent db:migrate
DATABASE_URL="$db_url" PORT=0 ACME_WEBHOOK_SECRET=production-install-check-secret RELAY_INTERVAL_MS=0 \
  node bin/start.js > "$target/service.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$target/service.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
if [ -z "${port:-}" ]; then cat "$target/service.log" >&2; exit 1; fi
curl -fsS "http://127.0.0.1:$port/readyz" > /dev/null
echo "production install: npm ci --omit=dev, db:migrate, and the built service answered /readyz"
