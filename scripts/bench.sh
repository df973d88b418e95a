#!/usr/bin/env bash
# Measures the filesystem server beside the official one (@modelcontextprotocol/server-filesystem on Node 22, "the
# anchor", installed with npm into the cache folder on first use) in one run, and prints the figures, their ratios
# and the targets docs/BENCHMARKS.md sets: 16 KiB reads over stdio (one caller) and streamable HTTP (8 callers), 4 KiB durable
# writes beside the kernel alone, the servers' CPU time per call from /proc, and the agent's CPU per tool call.
# Writes results.json, chart.svg and table.md into OUT (default docs/bench), and with perf installed the profiles of
# goalbox's server, profile-stdio-read.txt, profile-stdio-write.txt and profile-http-read.txt. See docs/BENCHMARKS.md.
#
#	scripts/bench.sh [OUT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"
out=${1:-$repo/docs/bench}

anchor_version=2026.8.31
anchor_dir="$CACHE_DIR/anchor-filesystem"
if [ ! -x "$anchor_dir/node_modules/.bin/mcp-server-filesystem" ] || [ ! -x "$anchor_dir/node_modules/.bin/node" ]; then
	echo "bench: installing Node 22 and @modelcontextprotocol/server-filesystem@$anchor_version into $anchor_dir" >&2
	mkdir -p "$anchor_dir"
	(cd "$anchor_dir" && npm install --no-audit --no-fund --loglevel=error node@22 "@modelcontextprotocol/server-filesystem@$anchor_version")
fi
# The anchor's launcher runs "node" from PATH: Node 22 from the cache folder, whatever the machine has.
export PATH="$anchor_dir/node_modules/.bin:$PATH"

work=$(mktemp -d)
fs_pid=
cleanup() { [ -n "$fs_pid" ] && kill "$fs_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
(cd "$repo" && go build -o "$work/filesystem" ./servers/filesystem && go build -o "$work/mcpbench" ./tests/load/cmd/mcpbench)

# The agent's side, with the server in a process of its own so that the benchmark's CPU time is the client's.
port=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$work/ws"
"$work/filesystem" -addr "127.0.0.1:$port" -workspace "$work/ws" -log-level warn -token-file "$work/fs.token" 2>"$work/fs.log" &
fs_pid=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
echo "bench: the agent's CPU per tool call (go test -bench CallRead16K in agent/sandbox)" >&2
(cd "$repo/agent" && GOALBOX_BENCH_FS_URL="http://127.0.0.1:$port/mcp" GOALBOX_BENCH_FS_TOKEN="$(cat "$work/fs.token")" \
	go test ./sandbox -run '^$' -bench CallRead16K -benchtime 2000x -count 1) | tee "$work/agent.txt" >&2
kill "$fs_pid"
wait "$fs_pid" 2>/dev/null || true
fs_pid=

echo "bench: the servers, side by side (about a minute)" >&2
"$work/mcpbench" -fs "$work/filesystem" -anchor "$anchor_dir/node_modules/.bin/mcp-server-filesystem" \
	-agent "$work/agent.txt" -out "$out" | tee "$work/table.md"
mkdir -p "$out"
cp "$work/table.md" "$out/table.md"
echo "bench: wrote $out/results.json, $out/table.md and $out/chart.svg" >&2

# Where the server's CPU goes: goalbox alone, one round, under perf (BENCH_PROFILE=0 skips it). The server is started
# through a wrapper that records each run into perf-N.data: 0 is the 16 KiB stdio reads, 1 the 1-byte ones, 2 the
# stdio writes, 3 the HTTP reads.
if [ "${BENCH_PROFILE:-1}" != 0 ] && command -v perf >/dev/null; then
	echo "bench: profiling goalbox's server under perf" >&2
	printf '#!/bin/sh\nn=$(ls %s/perf-*.data 2>/dev/null | wc -l)\nexec perf record -q -g -F 1999 -o %s/perf-$n.data -- %s/filesystem "$@"\n' \
		"$work" "$work" "$work" >"$work/fs-perf"
	chmod +x "$work/fs-perf"
	"$work/mcpbench" -fs "$work/fs-perf" -rounds 1 -http-calls 8000 -out "$work/profiled" >/dev/null
	top() {
		echo "# self time by symbol (perf report --no-children)"
		perf report -i "$1" --no-children --sort sym --stdio -g none 2>/dev/null | awk '/%/ && n++ < 25'
		echo
		echo "# time with callees, by symbol (perf report --children): total, then self"
		perf report -i "$1" --children --sort sym --stdio -g none 2>/dev/null | awk '/%/ && n++ < 60'
	}
	top "$work/perf-0.data" >"$out/profile-stdio-read.txt"
	top "$work/perf-2.data" >"$out/profile-stdio-write.txt"
	top "$work/perf-3.data" >"$out/profile-http-read.txt"
	echo "bench: wrote $out/profile-stdio-read.txt, $out/profile-stdio-write.txt and $out/profile-http-read.txt" >&2
fi
