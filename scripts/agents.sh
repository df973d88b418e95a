#!/usr/bin/env bash
# The coding-agent matrix: Claude Code, Codex, Gemini CLI, Qwen Code, opencode and mcp-remote, as installed by
# scripts/setup-agents.sh, against both servers built from this checkout, over HTTP with a token and over stdio, each
# driven by the scripted model of tests/agents, with the official filesystem server as the control in each stdio
# session; what each step checks: docs/clients.md#coding-agents. go test runs
# it; CLIENT=codex (a test name pattern) runs one client.
#
# Without the CLIs it skips and says how to install them, except with CI=true, where it fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"
GOALBOX_AGENTS_DIR=$(agents_dir "$repo")
export GOALBOX_AGENTS_DIR
cd "$repo/tests/agents"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
go test -count=1 -timeout 30m -v -run "${CLIENT:-.}" . >"$log" 2>&1 || rc=$?
grep -vE '^=== (RUN|PAUSE|CONT)' "$log" | cut -c1-400
exit "$rc"
