#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22) against both servers over
# streamable HTTP, in both protocol eras: the 0.1 suite's active scenarios (2025-11-25, sessions) and the 0.2 suite's
# requirements of 2026-07-28 (stateless). Scenarios that call the suite's own fixture tools, prompts and resources are
# listed in conformance-expected-failures.yaml and conformance-expected-failures-2026-07-28.yaml; every other scenario
# must pass, and a listed one that starts passing fails the run too (the suite calls that a stale baseline).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"

suite_version=0.1.16
dir="$CACHE_DIR/conformance"
if [ ! -x "$dir/node_modules/.bin/conformance" ] || [ ! -x "$dir/node_modules/.bin/node" ]; then
  echo "conformance: installing Node 22 and @modelcontextprotocol/conformance@$suite_version into $dir"
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error node@22 "@modelcontextprotocol/conformance@$suite_version")
fi
# The 0.2 suite (alpha: the first with 2026-07-28's requirements) beside it, run on the same Node.
suite26_version=0.2.0-alpha.12
dir26="$CACHE_DIR/conformance-$suite26_version"
if [ ! -x "$dir26/node_modules/.bin/conformance" ]; then
  echo "conformance: installing @modelcontextprotocol/conformance@$suite26_version into $dir26"
  mkdir -p "$dir26"
  (cd "$dir26" && npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$suite26_version")
fi
export PATH="$dir/node_modules/.bin:$PATH"

work=$(mktemp -d)
cleanup() { for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
# The suite's server command sends no Authorization header (we found no option for one in $suite_version): both
# servers run with -token none, on loopback, for this run only.
SERVER_TOKEN=none start_servers "$repo" "$work" 17101 17102

status=0
for target in filesystem:17101 executor:17102; do
  name=${target%%:*} port=${target##*:}
  echo "conformance: $name server"
  if ! conformance server --url "http://127.0.0.1:$port/mcp" --expected-failures "$here/conformance-expected-failures.yaml" \
      >"$work/$name.out" 2>&1; then
    status=1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$work/$name.out"
  echo "conformance: $name server, the requirements of 2026-07-28"
  if ! node "$dir26/node_modules/.bin/conformance" server --url "http://127.0.0.1:$port/mcp" --requirements 2026-07-28 \
      --expected-failures "$here/conformance-expected-failures-2026-07-28.yaml" >"$work/$name-2026.out" 2>&1; then
    status=1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$work/$name-2026.out"
done
[ "$status" = 0 ] && echo "conformance: both servers pass in both eras (expected failures: the suite's own fixtures)"
exit "$status"
