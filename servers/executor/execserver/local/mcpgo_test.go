//go:build linux

package local

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoClient drives the executor with a second, independent MCP implementation (mark3labs/mcp-go) over
// streamable HTTP: tool, annotations and output schema, a structured result, progress and a tool error.
func TestMCPGoClient(t *testing.T) {
	srv, _ := localServer(t, execserver.Config{}, nil)
	ctx := context.Background()
	c, err := mcpgoclient.NewStreamableHttpClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int64
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	init, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: "2025-06-18",
		ClientInfo:      mcpgo.Implementation{Name: "mcp-go-test", Version: "1"},
	}})
	if err != nil || init.ServerInfo.Name != execserver.Name {
		t.Fatalf("initialize: %v %+v", err, init)
	}
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools: %v, want sandbox_run_command, the five process tools and sandbox_read_output: %+v", err, tools)
	}
	i := slices.IndexFunc(tools.Tools, func(t mcpgo.Tool) bool { return t.Name == protocol.ToolRunCommand })
	if i < 0 {
		t.Fatalf("no %s in %+v", protocol.ToolRunCommand, tools)
	}
	tool := tools.Tools[i]
	a := tool.Annotations
	if tool.Name != protocol.ToolRunCommand || a.ReadOnlyHint == nil || *a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint ||
		a.IdempotentHint == nil || *a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint || len(tool.OutputSchema.Properties) != 13 {
		t.Errorf("tool: %+v", tool)
	}

	var req mcpgo.CallToolRequest
	req.Params.Name = protocol.ToolRunCommand
	req.Params.Arguments = map[string]any{"command": "echo from mcp-go; sleep 1.5; exit 7"}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: "p1"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var out protocol.RunCommandOutput
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil || res.IsError || out.ExitCode != 7 || out.Stdout != "from mcp-go\n" {
		t.Errorf("call: %v %+v %s", err, res, raw)
	}
	if progress.Load() == 0 {
		t.Errorf("no progress notification reached the mcp-go client")
	}

	req.Params.Arguments = map[string]any{"command": "true", "cwd": "../.."}
	req.Params.Meta = nil
	res, err = c.CallTool(ctx, req)
	if err != nil || !res.IsError {
		t.Fatalf("escape: %v %+v", err, res)
	}
	if text, ok := mcpgo.AsTextContent(res.Content[0]); !ok || !strings.Contains(text.Text, "outside the workspace") {
		t.Errorf("escape message: %+v", res.Content)
	}
}
