#!/usr/bin/env bash
# Installs the coding-agent CLIs tests/agents runs (Claude Code, Codex, Gemini CLI, Qwen Code, opencode, mcp-remote,
# and the official filesystem server as the control), pinned in tests/agents/package-lock.json, with npm install into
# the cache (agents_dir in lib.sh). Some ship their native binary inside the npm package (Claude Code, Codex,
# opencode): nothing else is downloaded, no login, no network at run time. No root needed; scripts/setup.sh runs
# it. Idempotent: instant when done.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"

dir=$(agents_dir "$repo")
if [ -f "$dir/.installed" ]; then
	echo "setup-agents: the coding-agent CLIs are present in $dir"
	exit 0
fi
t0=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir"
cp "$repo/tests/agents/package.json" "$repo/tests/agents/package-lock.json" "$dir/"
echo "setup-agents: npm ci the coding-agent CLIs into $dir"
# npm install, not npm ci: npm 11 refuses this lock file in ci for the platform packages of other systems it
# lists without versions (opencode-darwin-arm64...); install still takes every locked version.
(cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null)
for b in claude codex gemini qwen opencode mcp-remote mcp-server-filesystem; do
	[ -x "$dir/node_modules/.bin/$b" ] || { echo "setup-agents: $b did not install" >&2; exit 1; }
done
for b in claude codex gemini qwen opencode; do
	v=$(HOME="$dir/home" "$dir/node_modules/.bin/$b" --version 2>/dev/null | tail -1) ||
		{ echo "setup-agents: $b --version failed" >&2; exit 1; }
	echo "setup-agents: $b $v"
done
rm -rf "$dir/home"
touch "$dir/.installed"
echo "setup-agents: done in $(( $(date +%s) - t0 ))s"
