package execserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// panickyBackend panics on the command "panic" and answers exit 0 to any other, running nothing: a bug in a
// backend, which no real backend can be made to have on purpose.
type panickyBackend struct{}

func (panickyBackend) Name() string { return "panicky" }
func (panickyBackend) Run(_ context.Context, req backend.Request) (backend.Result, error) {
	if req.Command == "panic" {
		panic("a backend bug")
	}
	return backend.Result{}, nil
}
func (panickyBackend) Confinement() protocol.Confinement {
	return protocol.Confinement{LocalConfinement: &protocol.LocalConfinement{}} // runs nothing: every value unknown
}
func (panickyBackend) Close() error { return nil }

// TestPanicInARunIsAToolError: a panic while running a command costs that call, which the client gets as a tool
// error; the server goes on serving, and the command slot the call held is given back.
func TestPanicInARunIsAToolError(t *testing.T) {
	g, err := pathguard.Open(t.TempDir(), pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ex, err := execserver.New(execserver.Config{MaxConcurrent: 1}, panickyBackend{}, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := mcptest.Serve(t, ex.Server(), mcpserve.NoHealth)
	call := func(command string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand,
			Arguments: map[string]any{"command": command, "timeout_seconds": 2}})
		if err != nil {
			t.Fatalf("%s: protocol error %v", command, err)
		}
		return res
	}
	res := call("panic")
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "internal error") {
		t.Fatalf("panicking call: error %v, text %q", res.IsError, text)
	}
	for range 2 { // with one slot, a slot the panic kept would make the second call wait and be refused
		if res := call("true"); res.IsError {
			t.Fatalf("a call after the panic: %s", res.Content[0].(*mcp.TextContent).Text)
		}
	}
}
