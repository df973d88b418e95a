package fsserver_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// inspectorVersion pins the MCP Inspector used as a real peer.
const inspectorVersion = "0.15.0"

// TestInspectorCLI calls every tool through the official MCP Inspector's CLI over streamable HTTP, as a user would
// (npx @modelcontextprotocol/inspector --cli URL --method tools/call ...). It needs npx and, the first time, npm.
func TestInspectorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Inspector CLI starts a Node process per call")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: the MCP Inspector CLI cannot run")
	}
	ws := t.TempDir()
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{})
	inspect := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npx, append([]string{"-y", "@modelcontextprotocol/inspector@" + inspectorVersion, "--cli", run.URL}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("inspector %v: %v\n%s%s", args, err, out, ee.Stderr)
			}
			t.Fatalf("inspector %v: %v", args, err)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out)
		}
		return res
	}
	list := inspect("--method", "tools/list")
	if tools, _ := list["tools"].([]any); len(tools) != 7 {
		t.Fatalf("tools/list through the inspector: %v", list)
	}
	calls := [][]string{
		{protocol.ToolWriteFile, "path=src/a.txt", "content=hello"},
		{protocol.ToolReadFile, "path=src/a.txt"},
		{protocol.ToolEditFile, "path=src/a.txt", "old_text=hello", "new_text=goodbye"},
		{protocol.ToolListFiles, "depth=2"},
		{protocol.ToolSearchFiles, "pattern=good"},
		{protocol.ToolMovePath, "source=src/a.txt", "destination=dst/b.txt"},
		{protocol.ToolDeletePath, "path=dst", "recursive=true"},
	}
	for _, c := range calls {
		args := []string{"--method", "tools/call", "--tool-name", c[0]}
		for _, a := range c[1:] {
			args = append(args, "--tool-arg", a)
		}
		res := inspect(args...)
		if res["isError"] == true || res["structuredContent"] == nil {
			t.Errorf("%s through the inspector: %v", c[0], res)
		}
	}
	if got := call(t, connectURL(t, run.URL), protocol.ToolListFiles, map[string]any{"depth": 3}); string(got.raw) != `{"entries":[{"path":"src","size":0,"type":"dir"}],"path":".","truncated":false}` {
		t.Errorf("workspace after the inspector's calls: %s", got.raw)
	}
}
