#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22) against both servers over
# streamable HTTP. Scenarios that call the suite's own fixture tools, prompts and resources are listed in
# conformance-expected-failures.yaml; every other scenario must pass, and a listed one that starts passing fails the
# run too (the suite calls that a stale baseline).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib-cache.sh"

suite_version=0.1.16
dir="$GOALBOX_CACHE/conformance"
if [ ! -x "$dir/node_modules/.bin/conformance" ] || [ ! -x "$dir/node_modules/.bin/node" ]; then
  echo "conformance: installing Node 22 and @modelcontextprotocol/conformance@$suite_version into $dir"
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error node@22 "@modelcontextprotocol/conformance@$suite_version")
fi
export PATH="$dir/node_modules/.bin:$PATH"

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

(cd "$repo" && go build -o "$work/fs" ./servers/filesystem && go build -o "$work/exec" ./servers/executor)

start() { # name binary port
  "$work/$2" -addr "127.0.0.1:$3" -workspace "$work/ws-$1" >"$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$3/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "conformance: $1 server did not become healthy"; cat "$work/$1.log"; return 1
}
start filesystem fs 17101
start executor exec 17102

status=0
for target in filesystem:17101 executor:17102; do
  name=${target%%:*} port=${target##*:}
  echo "conformance: $name server"
  if ! conformance server --url "http://127.0.0.1:$port/mcp" --expected-failures "$here/conformance-expected-failures.yaml" \
      >"$work/$name.out" 2>&1; then
    status=1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$work/$name.out"
done
[ "$status" = 0 ] && echo "conformance: both servers pass (expected failures: the suite's own fixtures)"
exit "$status"
