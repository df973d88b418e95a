package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/sandbox"
	"github.com/goalbox/goalbox/agent/sandbox/sandboxtest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

func TestClientRoutesByDiscoveredTools(t *testing.T) {
	ctx := context.Background()
	sb, err := sandbox.Host(ctx, sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var names []string
	for _, tool := range sb.Tools() {
		names = append(names, tool.Name)
		if !json.Valid(tool.InputSchema) || tool.Description == "" {
			t.Errorf("tool %s: schema or description missing", tool.Name)
		}
	}
	if len(names) != 18 {
		t.Errorf("tools = %v, want the 11 file tools (checkpoints too), the command tool, the kept-output reader and the 5 process tools", names)
	}
	// A file tool goes to the filesystem server, the command tool to the executor: the write is seen by the command.
	if res, err := sb.Call(ctx, protocol.ToolWriteFile, json.RawMessage(`{"path":"x.txt","content":"routed"}`)); err != nil || res.IsError {
		t.Fatalf("write: %v %s", err, res.Text)
	}
	res, err := sb.Call(ctx, protocol.ToolRunCommand, json.RawMessage(`{"command":"cat x.txt"}`))
	if err != nil || !strings.Contains(string(res.Structured), `"stdout":"routed"`) {
		t.Fatalf("command: %v %s", err, res.Structured)
	}
	if _, err := sb.Call(ctx, "sandbox_nothing", json.RawMessage(`{}`)); !errors.Is(err, sandbox.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}

	// The in-process servers serve the one client Host connected.
	if _, err := sb.Local.Connect(ctx); err == nil || !strings.Contains(err.Error(), "one session") {
		t.Errorf("a second client of the in-process servers: %v", err)
	}
}

// Servers running elsewhere are reached over HTTP with their tokens: given them, the tools route as in process;
// without them, or with a wrong one, no way in, with an error that says 401 and where the token comes from. The
// same server twice would make every call ambiguous.
func TestConnectToRunningServers(t *testing.T) {
	ctx := context.Background()
	st := sandboxtest.Start(t, t.TempDir(), "")
	sb, err := sandbox.Connect(ctx, st.FS, st.Exec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if res, err := sb.Call(ctx, protocol.ToolWriteFile, json.RawMessage(`{"path":"x.txt","content":"routed"}`)); err != nil || res.IsError {
		t.Fatalf("write: %v %s", err, res.Text)
	}
	res, err := sb.Call(ctx, protocol.ToolRunCommand, json.RawMessage(`{"command":"cat x.txt"}`))
	if err != nil || !strings.Contains(string(res.Structured), `"stdout":"routed"`) {
		t.Fatalf("command: %v %s", err, res.Structured)
	}
	if _, err := sandbox.Connect(ctx, st.FS, st.FS); err == nil || !strings.Contains(err.Error(), "offered by two servers") {
		t.Errorf("duplicate tools: %v", err)
	}
	for _, tok := range []string{"", "wrong"} {
		_, err := sandbox.Connect(ctx, sandbox.Endpoint{URL: st.FS.URL, Token: tok})
		if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "token") {
			t.Errorf("token %q: %v; want a refusal that says 401 and names the token", tok, err)
		}
	}
}

// A server that goes away mid-session is the sandbox failing: Call returns an error, not a tool error the model
// would be shown, so the caller (the loop, the benchmark's pool) can tell.
func TestClientServerGoneIsAnError(t *testing.T) {
	local, err := sandbox.StartLocal(sandbox.LocalOptions{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb, err := local.Connect(ctx)
	if err != nil {
		local.Close()
		t.Fatal(err)
	}
	defer sb.Close()
	// A call the server answers with a JSON-RPC error is still about the call: a tool error.
	if res, err := sb.Call(ctx, protocol.ToolReadFile, json.RawMessage(`{"path":7}`)); err != nil || !res.IsError {
		t.Errorf("bad arguments: %v %+v", err, res)
	}
	local.Close()
	for _, tool := range []string{protocol.ToolWriteFile, protocol.ToolRunCommand} {
		res, err := sb.Call(ctx, tool, json.RawMessage(`{"path":"x.txt","content":"x","command":"true"}`))
		if err == nil {
			t.Errorf("%s on a stopped server: no error, result %+v", tool, res)
		}
	}
}
