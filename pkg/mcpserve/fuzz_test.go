package mcpserve_test

// Fuzz targets of the entry points every goalbox server shares: the HTTP endpoint and the stdio line transport,
// here in front of a one-tool server. The filesystem and executor servers run the same targets in front of their
// own tools (servers/*/fuzz_test.go).
//
//	go test ./pkg/mcpserve -run '^$' -fuzz '^FuzzHTTPEntry$' -fuzztime 60s
//	go test ./pkg/mcpserve -run '^$' -fuzz '^FuzzStdioEntry$' -fuzztime 60s

import (
	"context"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type text struct {
	Text string `json:"text"`
}

func echoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "fuzz"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in text) (*mcp.CallToolResult, text, error) {
		return nil, in, nil
	})
	return srv
}

var echoProbe = mcptest.Probe{Tool: "echo", Arguments: map[string]any{"text": "still here"}}

func FuzzHTTPEntry(f *testing.F) {
	mcptest.FuzzHTTP(f, echoServer(), mcpserve.Config{}, echoProbe)
}

func FuzzStdioEntry(f *testing.F) {
	mcptest.FuzzStdio(f, echoServer(), mcpserve.Config{}, echoProbe)
}
