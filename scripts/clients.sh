#!/usr/bin/env bash
# The client matrix: the MCP client libraries agent builders use, installed from npm at pinned versions
# (tests/clients/package-lock.json, by scripts/setup-clients.sh), each against both servers built from this checkout,
# over streamable HTTP (with the generated bearer token) and over stdio (the client spawns the server): the TypeScript
# SDK 1.x, its v2 client in both protocol eras, the OpenAI Agents SDK, LangChain's MCP adapters with ChatOpenAI and
# ChatAnthropic, and the AI SDK's MCP client. What each checks: tests/clients/*.mjs and docs/clients.md.
#
# Without the packages it skips and says how to install them, except with CI=true, where it fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"
clients_ready "$repo" clients || exit 0
dir=$(clients_dir "$repo")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/fs" ./servers/filesystem && go build -o "$work/exec" ./servers/executor)
clients_stage "$repo" "$work/clients"
export GOALBOX_FS_BIN="$work/fs" GOALBOX_EXEC_BIN="$work/exec"

fails=0
for lib in ts-sdk ts-client-v2 openai-agents langchain ai-sdk; do
	t0=$(date +%s)
	if "$dir/node_modules/.bin/node" "$work/clients/$lib.mjs"; then
		echo "clients: $lib passed in $(( $(date +%s) - t0 ))s"
	else
		fails=$((fails + 1))
	fi
done
if [ "$fails" != 0 ]; then echo "clients: $fails libraries failed"; exit 1; fi
echo "clients: every library passed against both servers over both transports"
