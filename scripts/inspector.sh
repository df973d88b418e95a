#!/usr/bin/env bash
# Calls every tool of both servers through the MCP Inspector CLI (@modelcontextprotocol/inspector, a real
# third-party client) over streamable HTTP, and checks each structured result; a PNG written as base64 is read
# back as image content and as base64; a truncated command output (and a process's output past its buffer) is read
# back as a resource (the CLI, and full-outputs.mjs with the TypeScript SDK and the Inspector's client functions).
# The Inspector needs Node 22, installed beside it as conformance.sh does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
. "$here/lib.sh"

version=0.17.2
dir="$CACHE_DIR/inspector-$version"
if [ ! -x "$dir/node_modules/.bin/mcp-inspector" ] || [ ! -x "$dir/node_modules/.bin/node" ]; then
  echo "inspector: installing Node 22 and @modelcontextprotocol/inspector@$version into $dir"
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error node@22 "@modelcontextprotocol/inspector@$version")
fi
export PATH="$dir/node_modules/.bin:$PATH"
inspector="$dir/node_modules/.bin/mcp-inspector"

work=$(mktemp -d)
cleanup() { for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export GOALBOX_FS_CHECKPOINT_DIR="$work/checkpoints" # beside the workspace, gone with it
start_servers "$repo" "$work" 17201 17202
# The Inspector sends each server the token it generated (start_servers read them from the token files).
auth() { if [ "$1" = 17201 ]; then echo "Authorization: Bearer $FS_TOKEN"; else echo "Authorization: Bearer $EXEC_TOKEN"; fi; }

fails=0
# call PORT EXPECT TOOL ARGS... : EXPECT is a Python expression over the structured result r (and the whole result d).
# An image read carries no structuredContent (Codex would show it instead of the pixels): its text is the same JSON.
call() {
  local port=$1 expect=$2 tool=$3; shift 3
  local args=()
  for a in "$@"; do args+=(--tool-arg "$a"); done
  local out
  if ! out=$("$inspector" --cli "http://127.0.0.1:$port/mcp" --transport http --header "$(auth "$port")" --method tools/call --tool-name "$tool" "${args[@]}" 2>&1); then
    echo "inspector: FAIL $tool: $out"; fails=$((fails+1)); return
  fi
  if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); r=d.get("structuredContent") or json.loads(d["content"][0]["text"]); sys.exit(0 if (not d.get("isError") and ('"$expect"')) else 1)' "$out"; then
    echo "inspector: ok   $tool"
  else
    echo "inspector: FAIL $tool: $out"; fails=$((fails+1))
  fi
}
# refused PORT TEXT TOOL ARGS... : the call must be a tool error whose text holds TEXT.
refused() {
  local port=$1 want=$2 tool=$3; shift 3
  local args=()
  for a in "$@"; do args+=(--tool-arg "$a"); done
  local out
  out=$("$inspector" --cli "http://127.0.0.1:$port/mcp" --transport http --header "$(auth "$port")" --method tools/call --tool-name "$tool" "${args[@]}" 2>&1) || true
  if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d.get("isError") and sys.argv[2] in d["content"][0]["text"] else 1)' "$out" "$want"; then
    echo "inspector: ok   $tool (refused)"
  else
    echo "inspector: FAIL $tool: want a tool error saying $want: $out"; fails=$((fails+1))
  fi
}
call 17201 'r["created"] and r["bytes_written"]==12' sandbox_write_file path=src/hello.py 'content=print("hi")
'
call 17201 'r["content"]=="print(\"hi\")\n" and r["total_lines"]==1' sandbox_read_file path=src/hello.py
call 17201 'r["replacements"]==1 and "+print(\"hello\")" in r["diff"]' sandbox_edit_file path=src/hello.py 'old_text="hi"' 'new_text="hello"'
call 17201 'any(e["path"]=="src/hello.py" for e in r["entries"])' sandbox_list_files path=. depth=3
call 17201 'r["matches"][0]["line"]==1' sandbox_search_files pattern=hello include=*.py
call 17202 'r["exit_code"]==0 and r["stdout"]=="hello\n"' sandbox_run_command 'command=python3 src/hello.py'
# Processes belong to the session that started them, and each Inspector CLI call is a session of its own: a start
# answers, the next call's session lists none and finds no process of another session to read, write or stop.
call 17202 'r["process_id"]=="p1" and r["started_at"]' sandbox_start_process 'command=sleep 30'
call 17202 'r["processes"]==[]' sandbox_list_processes
refused 17202 'no process "p1" in this session' sandbox_read_process_output process_id=p1
refused 17202 'no process "p1" in this session' sandbox_write_process_input process_id=p1 data=x
refused 17202 'no process "p1" in this session' sandbox_stop_process process_id=p1
call 17201 'r["destination"]=="lib/hello.py"' sandbox_move_path source=src/hello.py destination=lib/hello.py
call 17201 'r["deleted"]' sandbox_delete_path path=lib recursive=true
# A 2x1 PNG (a red and a blue pixel): written from base64, read back as image content (after the JSON text) and as
# base64, byte for byte.
png=iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAE0lEQVR4nGL6z8DAwPAfEAAA//8HDgIB5wu+FwAAAABJRU5ErkJggg==
call 17201 'r["created"] and r["bytes_written"]==76' sandbox_write_file path=plot.png encoding=base64 "content=$png"
call 17201 'r=={"path":"plot.png","mime_type":"image/png","size":76,"width":2,"height":1} and d["content"][0]["type"]=="text" and d["content"][1]=={"type":"image","mimeType":"image/png","data":"'"$png"'"}' sandbox_read_file path=plot.png
call 17201 'r["encoding"]=="base64" and r["content"]=="'"$png"'" and r["size"]==76' sandbox_read_file path=plot.png encoding=base64
call 17201 'r["deleted"]' sandbox_delete_path path=plot.png
# Checkpoints: one taken, a file added since, the diff shows it, a restore removes it and saves what it replaced.
call 17201 'r["id"]=="cp-1" and r["label"]=="inspector"' sandbox_checkpoint label=inspector
call 17201 'r["created"]' sandbox_write_file path=notes.txt 'content=one
'
call 17201 'r["files"]==[{"path":"notes.txt","change":"added"}] and "+one" in r["diff"]' sandbox_diff from=cp-1
call 17201 'r["id"]=="cp-1" and r["deleted"]==1 and r["saved_as"]=="cp-2"' sandbox_restore id=cp-1
call 17201 '[c["id"] for c in r["checkpoints"]]==["cp-1","cp-2"]' sandbox_list_checkpoints

# Full outputs: a truncated stream is named in the result (stdout_resource; no resource_link item by default, so
# the content is the one JSON text every client library carries to a model as it is), the template is
# listed, and the resource is refused to another session: each CLI invocation is a session of its own. Reading it
# back whole takes one session that runs the command and then reads: full-outputs.mjs does that with the TypeScript
# SDK and with the Inspector's own client functions.
big='command=seq 1 100000'
out=$("$inspector" --cli http://127.0.0.1:17202/mcp --transport http --header "$(auth 17202)" --method tools/call --tool-name sandbox_run_command --tool-arg "$big" 2>&1) || true
# (The result is larger than one exec argument may be: python reads it on stdin.)
uri=$(python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["structuredContent"]; links=[c["uri"] for c in d["content"] if c["type"]=="resource_link"]
ok=r["stdout_truncated"] and r["stdout_resource"].startswith("goalbox-output://") and links==[] and len(d["content"])==1
print(r["stdout_resource"] if ok else "")' <<<"$out" || true)
if [ -n "$uri" ]; then echo "inspector: ok   sandbox_run_command names its full output $uri"; else echo "inspector: FAIL full output not named: ${out:0:2000}"; fails=$((fails+1)); fi
out=$("$inspector" --cli http://127.0.0.1:17202/mcp --transport http --header "$(auth 17202)" --method resources/templates/list 2>&1) || true
if grep -q '"uriTemplate": "goalbox-output://' <<<"$out"; then echo "inspector: ok   resources/templates/list"; else echo "inspector: FAIL resources/templates/list: $out"; fails=$((fails+1)); fi
if out=$("$inspector" --cli http://127.0.0.1:17202/mcp --transport http --header "$(auth 17202)" --method resources/read --uri "${uri:-goalbox-output://none/stdout}" 2>&1); then
  echo "inspector: FAIL another session read $uri: $out"; fails=$((fails+1))
elif grep -q "only by the MCP session whose command made it" <<<"$out"; then
  echo "inspector: ok   resources/read of another session's output is refused"
else
  echo "inspector: FAIL resources/read from another session failed without the refusal: $out"; fails=$((fails+1))
fi
# The tool that reads the same pages (sandbox_read_output) keeps the same owner rule.
refused 17202 'only by the MCP session whose command made it' sandbox_read_output "uri=${uri:-goalbox-output://none/stdout}"
GOALBOX_EXEC_TOKEN=$EXEC_TOKEN node "$here/full-outputs.mjs" http://127.0.0.1:17202/mcp "$work/ws" "$dir" || fails=$((fails+1))

if [ "$fails" != 0 ]; then echo "inspector: $fails checks failed"; exit 1; fi
echo "inspector: every tool of both servers answered the MCP Inspector CLI, and full outputs were read back whole"
