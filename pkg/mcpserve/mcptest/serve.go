package mcptest

import (
	"context"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves srv over streamable HTTP on a free loopback port, as mcpserve.Start does for the agent, and connects
// a go-sdk client to it. health is the server's report for /healthz (mcpserve.NoHealth for none). Both end with the
// test.
func Serve[H any](t testing.TB, srv *mcp.Server, health func() H) *mcp.ClientSession {
	t.Helper()
	r, err := mcpserve.Start(srv, mcpserve.Config{Addr: "127.0.0.1:0"}, health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: r.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
