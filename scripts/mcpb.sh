#!/usr/bin/env bash
# Builds the MCP Bundles that install each server into Claude Desktop with one click: goalbox-filesystem.mcpb and
# goalbox-executor.mcpb, each holding the server for linux/amd64, linux/arm64, darwin/arm64, darwin/amd64 and
# windows/amd64 (cross-compiled, CGO off) and the manifest from deploy/mcpb/<server>/manifest.json, which asks for
# the workspace as a folder (user_config, type directory). Anthropic's mcpb tool (npm @anthropic-ai/mcpb) validates
# each manifest and packs the bundle; then each bundle is unpacked again and its server started the way the
# manifest says, over stdio, and must answer initialize and list exactly the tools the manifest names.
#
#   scripts/mcpb.sh            # bundles into ./dist/
#   scripts/mcpb.sh OUTDIR
#
# On macOS and Linux the bundle's command is a small sh launcher that runs this machine's build (uname); on Windows
# the .exe. GOALBOX_VERSION sets the bundles' version (default 0.1.0). Beside each bundle goes its server.json for the
# MCP registry (OUTDIR/goalbox-<server>.server.json: the bundle's release URL and SHA-256, and the OCI image), checked
# against the registry's published schema. scripts/test.sh runs this.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"
out=$(cd "$repo" && mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
version=${GOALBOX_VERSION:-0.1.0}

mcpb_version=2.1.2
tooldir="$CACHE_DIR/mcpb"
if [ ! -x "$tooldir/node_modules/.bin/mcpb" ]; then
	echo "mcpb: installing @anthropic-ai/mcpb@$mcpb_version into $tooldir"
	mkdir -p "$tooldir"
	(cd "$tooldir" && npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/mcpb@$mcpb_version")
fi
mcpb="$tooldir/node_modules/.bin/mcpb"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for server in filesystem executor; do
	name=goalbox-$server
	stage="$work/$server"
	mkdir -p "$stage/server"
	for p in linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64; do
		goos=${p%/*} goarch=${p#*/}
		bin="$stage/server/$name-$goos-$goarch"
		[ "$goos" = windows ] && bin="$stage/server/$name.exe"
		(cd "$repo" && GOOS=$goos GOARCH=$goarch CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin" "./servers/$server")
	done
	cat >"$stage/server/$name" <<EOF
#!/bin/sh
# Runs this machine's build of $name from the bundle.
dir=\$(cd "\$(dirname "\$0")" && pwd)
case "\$(uname -s)-\$(uname -m)" in
Linux-x86_64) build=linux-amd64 ;;
Linux-aarch64 | Linux-arm64) build=linux-arm64 ;;
Darwin-arm64) build=darwin-arm64 ;;
Darwin-x86_64) build=darwin-amd64 ;;
*) echo "$name: this bundle has no build for \$(uname -s) \$(uname -m)" >&2; exit 1 ;;
esac
exec "\$dir/$name-\$build" "\$@"
EOF
	chmod 755 "$stage/server/"*
	sed "s/\"version\": \"0.0.0\"/\"version\": \"$version\"/" "$repo/deploy/mcpb/$server/manifest.json" >"$stage/manifest.json"
	"$mcpb" validate "$stage/manifest.json"
	"$mcpb" pack "$stage" "$out/$name.mcpb" >/dev/null
	# A release signs its bundles with the project's code-signing certificate (PEM, chaining to a CA the user's
	# system trusts, so that mcpb verify and Claude Desktop show the bundle as signed): GOALBOX_MCPB_CERT and
	# GOALBOX_MCPB_KEY, GOALBOX_MCPB_INTERMEDIATE for the chain. Without them the bundles stay unsigned, and say so:
	# a self-signed signature would only be reported as not signed.
	if [ -n "${GOALBOX_MCPB_CERT:-}" ]; then
		"$mcpb" sign --cert "$GOALBOX_MCPB_CERT" --key "${GOALBOX_MCPB_KEY:?GOALBOX_MCPB_KEY: the private key of GOALBOX_MCPB_CERT}" \
			${GOALBOX_MCPB_INTERMEDIATE:+--intermediate "$GOALBOX_MCPB_INTERMEDIATE"} "$out/$name.mcpb"
		"$mcpb" verify "$out/$name.mcpb"
	else
		echo "mcpb: $name.mcpb is unsigned (set GOALBOX_MCPB_CERT and GOALBOX_MCPB_KEY to sign a release)"
	fi
	echo "mcpb: $out/$name.mcpb ($(du -h "$out/$name.mcpb" | cut -f1))"
	# The executor's container package names its seccomp profile by path (server.json, seccomp_profile): the
	# release carries it beside the bundles.
	if [ "$server" = executor ]; then cp "$repo/deploy/seccomp-executor.json" "$out/seccomp-executor.json"; fi

	# Its server.json for the MCP registry, from deploy/mcpb/<server>/server.json: this version in the version, the
	# release URL of the bundle and the image tag, and the SHA-256 of the bundle just packed.
	python3 - "$repo/deploy/mcpb/$server/server.json" "$out/$name.mcpb" "$version" >"$out/$name.server.json" <<'PY'
import hashlib, json, sys
src, bundle, version = sys.argv[1:]
doc = json.load(open(src))
doc["version"] = version
for p in doc["packages"]:
    p["identifier"] = p["identifier"].replace("/v0.0.0/", "/v%s/" % version).replace(":0.0.0", ":" + version)
    for a in p.get("runtimeArguments", []):
        for v in a.get("variables", {}).values():
            v["description"] = v["description"].replace("/v0.0.0/", "/v%s/" % version)
    if p["registryType"] == "mcpb":
        p["fileSha256"] = hashlib.sha256(open(bundle, "rb").read()).hexdigest()
print(json.dumps(doc, indent=2, ensure_ascii=False))
PY

	# The bundle as a client installs it: unpacked, its server started as the manifest says, the workspace a folder.
	check="$work/check-$server"
	"$mcpb" unpack "$out/$name.mcpb" "$check" >/dev/null
	mkdir -p "$work/ws-$server"
	python3 - "$check" "$work/ws-$server" <<'PY'
import json, os, subprocess, sys
root, ws = sys.argv[1], sys.argv[2]
m = json.load(open(root + "/manifest.json"))
cfg = m["server"]["mcp_config"]
def argv(workspace, allow):
    sub = lambda s: s.replace("${__dirname}", root).replace("${user_config.workspace}", workspace).replace(
        "${user_config.allow_personal_workspace}", allow).replace(
        "${user_config.require_namespaces}", str(m["user_config"].get("require_namespaces", {}).get("default", False)).lower())
    return [sub(cfg["command"])] + [sub(a) for a in cfg["args"]]
# A workspace holding start-up files and keys is refused with a message, as the bundle's default; allowed, it serves.
home = ws + "-home"
os.makedirs(home + "/.ssh")
open(home + "/.bashrc", "w").close()
r = subprocess.run(argv(home, str(m["user_config"]["allow_personal_workspace"]["default"]).lower()), stdin=subprocess.DEVNULL,
                   capture_output=True, text=True, timeout=60)
if r.returncode == 0 or "-allow-personal-workspace" not in r.stderr:
    sys.exit("mcpb: %s from its bundle took a workspace holding .bashrc and .ssh (exit %d): %s" % (m["name"], r.returncode, r.stderr))
print("mcpb: %s from its bundle refuses a workspace holding .bashrc and .ssh" % m["name"])
p = subprocess.Popen(argv(ws, "false"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    if "id" in msg:
        return json.loads(p.stdout.readline())
init = call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcpb-check", "version": "0"}}})
call({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools = call({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
p.stdin.close(); p.wait(timeout=30)
got = sorted(t["name"] for t in tools["result"]["tools"])
want = sorted(t["name"] for t in m["tools"])
if init["result"]["serverInfo"]["name"] != m["name"] or got != want:
    sys.exit("mcpb: %s from its bundle answered as %s with tools %s; the manifest names %s" % (m["name"], init["result"]["serverInfo"]["name"], got, want))
print("mcpb: %s from its bundle serves the %d tools its manifest names" % (m["name"], len(got)))
PY
done

# The server.json files against the MCP registry's published schema (ajv) and its rules for MCPB and OCI packages
# (tests/clients/registry.mjs), with the client matrix's packages: skipped without them, except with CI=true.
if clients_ready "$repo" mcpb; then
	clients_stage "$repo" "$work/registry"
	"$(clients_dir "$repo")/node_modules/.bin/node" "$work/registry/registry.mjs" "$(clients_dir "$repo")/server.schema.json" "$repo" \
		"$out/goalbox-filesystem.server.json" "$out/goalbox-executor.server.json"
fi
