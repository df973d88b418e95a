package fsserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoClient drives the server with a second, independent MCP implementation (mark3labs/mcp-go) over
// streamable HTTP: it must see the eleven tools with their schemas and get structured results and tool errors.
func TestMCPGoClient(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\nworld\n"), 0o644))
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{})
	ctx := context.Background()
	c, err := mcpgoclient.NewStreamableHttpClient(run.URL)
	must(t, err)
	defer c.Close()
	must(t, c.Start(ctx))
	init, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: "2025-06-18",
		ClientInfo:      mcpgo.Implementation{Name: "mcp-go-test", Version: "1"},
	}})
	must(t, err)
	if init.ServerInfo.Name != "goalbox-filesystem" {
		t.Errorf("server name %q", init.ServerInfo.Name)
	}
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	must(t, err)
	seen := map[string]bool{}
	for _, tool := range tools.Tools {
		seen[tool.Name] = true
		if tool.Annotations.ReadOnlyHint == nil || tool.Annotations.OpenWorldHint == nil || *tool.Annotations.OpenWorldHint {
			t.Errorf("%s: annotations %+v", tool.Name, tool.Annotations)
		}
		if len(tool.OutputSchema.Properties) == 0 && tool.Name != protocol.ToolReadFile {
			t.Errorf("%s: no output schema", tool.Name)
		}
	}
	if len(seen) != 11 || !seen[protocol.ToolSearchFiles] || !seen[protocol.ToolMovePath] || !seen[protocol.ToolRestore] {
		t.Errorf("tools: %v", seen)
	}

	callTool := func(name string, args map[string]any) *mcpgo.CallToolResult {
		t.Helper()
		var req mcpgo.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		must(t, err)
		return res
	}
	res := callTool(protocol.ToolReadFile, map[string]any{"path": "hello.txt", "offset": 2})
	var read protocol.ReadFileOutput
	raw, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(raw, &read))
	if res.IsError || read.Content != "world\n" || read.StartLine != 2 || read.TotalLines != 2 {
		t.Errorf("read: %+v %s", res, raw)
	}
	text, isText := mcpgo.AsTextContent(res.Content[0])
	if !isText || !json.Valid([]byte(text.Text)) {
		t.Errorf("read: the text content is not the JSON result: %+v", res.Content)
	}
	res = callTool(protocol.ToolEditFile, map[string]any{"path": "hello.txt", "old_text": "world", "new_text": "there"})
	if res.IsError || !strings.Contains(mustText(t, res), `-world\n+there`) {
		t.Errorf("edit: %+v", res)
	}
	// A checkpoint, and a restore that undoes the edit.
	res = callTool(protocol.ToolCheckpoint, map[string]any{"label": "after the edit"})
	if res.IsError || !strings.Contains(mustText(t, res), `"id":"cp-1"`) {
		t.Errorf("checkpoint: %+v", res)
	}
	callTool(protocol.ToolWriteFile, map[string]any{"path": "hello.txt", "content": "gone\n"})
	res = callTool(protocol.ToolRestore, map[string]any{"id": "cp-1"})
	if res.IsError || !strings.Contains(mustText(t, res), `"written":1`) || readHost(t, filepath.Join(ws, "hello.txt")) != "hello\nthere\n" {
		t.Errorf("restore: %+v", res)
	}
	res = callTool(protocol.ToolReadFile, map[string]any{"path": "/etc/shadow"})
	if !res.IsError || !strings.Contains(mustText(t, res), "outside the workspace") {
		t.Errorf("escape: %+v", res)
	}
}

func mustText(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	text, isText := mcpgo.AsTextContent(res.Content[0])
	if !isText {
		t.Fatalf("content %T is not text", res.Content[0])
	}
	return text.Text
}
