#!/usr/bin/env bash
# Installs what scripts/clients.sh and the server.json check in scripts/mcpb.sh need, once, into the cache
# (clients_dir in lib.sh): the npm packages pinned in tests/clients/package-lock.json with npm ci (the MCP client
# libraries, ajv, and Node 22, which the AI SDK and @langchain/openai need), and the MCP registry's published
# server.json schema, taken from the registry's Go module through the Go module proxy (the schema the registry's
# own validator embeds). No root needed; scripts/setup.sh runs it. Idempotent: instant when done.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"

registry_module=github.com/modelcontextprotocol/registry
registry_version=v1.8.9
schema_version=2025-12-11

dir=$(clients_dir "$repo")
if [ -f "$dir/.installed" ]; then
	echo "setup-clients: client packages present in $dir"
	exit 0
fi
t0=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir"
cp "$repo/tests/clients/package.json" "$repo/tests/clients/package-lock.json" "$dir/"
echo "setup-clients: npm ci the client matrix's packages into $dir"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
"$dir/node_modules/.bin/node" --version | grep -q '^v22\.' || { echo "setup-clients: Node 22 did not install" >&2; exit 1; }

echo "setup-clients: the MCP registry's schema $schema_version from $registry_module@$registry_version"
mod=$(cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$registry_module@$registry_version" |
	"$dir/node_modules/.bin/node" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).Dir))')
cp "$mod/internal/validators/schemas/$schema_version.json" "$dir/server.schema.json"
chmod 644 "$dir/server.schema.json"
grep -q "\"https://static.modelcontextprotocol.io/schemas/$schema_version/server.schema.json\"" "$dir/server.schema.json" ||
	{ echo "setup-clients: $mod has no schema $schema_version" >&2; exit 1; }
touch "$dir/.installed"
echo "setup-clients: done in $(( $(date +%s) - t0 ))s"
