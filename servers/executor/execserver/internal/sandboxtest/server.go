//go:build linux

package sandboxtest

// Test helpers shared by both backends' tests, the containment suite and the benchmarks: a real executor over
// a real backend, served by mcpserve.Start on loopback HTTP, driven by the go-sdk client.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is an executor served on loopback HTTP.
type Server struct {
	URL     string
	Addr    string
	Exec    *execserver.Executor
	Session *mcp.ClientSession
}

// StartServer serves an executor over b and the workspace ws on 127.0.0.1:0 and connects a go-sdk client
// over streamable HTTP. opts may carry client handlers (progress).
func StartServer(t testing.TB, b backend.Backend, ws string, cfg execserver.Config, opts *mcp.ClientOptions) *Server {
	t.Helper()
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	ex, err := execserver.New(cfg, b, g, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run, err := mcpserve.Start(ex.Server(), mcpserve.Config{Addr: "127.0.0.1:0", Token: mcpserve.NoToken}, ex.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "execserver-test", Version: "0"}, opts)
	// A 2025-11-25 session: these suites test what a session scopes (its processes, their caps and end); the
	// stateless era's scope is tested in execserver's stateless_test.go.
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: run.URL, MaxRetries: -1}, mcptest.ClientOptions(mcptest.SessionEra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &Server{URL: run.URL, Addr: run.Addr, Exec: ex, Session: cs}
}

// CallRun calls sandbox_run_command. It fails the test on a protocol error, and returns the raw result for tool
// errors (IsError) with the zero output.
func CallRun(t testing.TB, ctx context.Context, cs *mcp.ClientSession, in protocol.RunCommandInput) (protocol.RunCommandOutput, *mcp.CallToolResult) {
	t.Helper()
	res, err := CallRunErr(ctx, cs, in)
	if err != nil {
		t.Fatalf("call %q: %v", in.Command, err)
	}
	return DecodeRun(t, res), res
}

func CallRunErr(ctx context.Context, cs *mcp.ClientSession, in protocol.RunCommandInput) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: in})
}

func DecodeRun(t testing.TB, res *mcp.CallToolResult) protocol.RunCommandOutput {
	t.Helper()
	var out protocol.RunCommandOutput
	if res.IsError {
		return out
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

// MustRun runs a command that must succeed as a call (any exit code) and returns its output.
func MustRun(t testing.TB, cs *mcp.ClientSession, in protocol.RunCommandInput) protocol.RunCommandOutput {
	t.Helper()
	out, res := CallRun(t, context.Background(), cs, in)
	if res.IsError {
		t.Fatalf("%q: tool error: %s", in.Command, mcpserve.ToolErrorText(res))
	}
	return out
}

// ToolError runs a call that must be refused and returns the message.
func ToolError(t testing.TB, cs *mcp.ClientSession, in protocol.RunCommandInput) string {
	t.Helper()
	_, res := CallRun(t, context.Background(), cs, in)
	if !res.IsError {
		t.Fatalf("%+v: want a tool error, got %+v", in, DecodeRun(t, res))
	}
	return mcpserve.ToolErrorText(res)
}

// PidAlive reports whether a process with this pid exists (and is not a zombie).
func PidAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ')' {
			return len(s) > i+2 && s[i+2] != 'Z'
		}
	}
	return true
}

// RequireNamespaceMode skips a test of the namespace mode where this machine cannot create user namespaces (some
// container runtimes forbid them), and fails it under CI=true. Where it can, the mode must work, as root and as any
// other user.
func RequireNamespaceMode(t testing.TB) {
	t.Helper()
	if !UserNamespacesWork() {
		ciskip.Skip(t, "this machine cannot create a user namespace: the fallback tests cover it")
	}
}

// UserNamespacesWork reports whether this process may create a user namespace.
func UserNamespacesWork() bool {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	return cmd.Run() == nil
}

// RequireLandlock skips a containment test on a kernel without Landlock (the backend runs there, and says loudly
// that commands are not confined), and fails it under CI=true.
func RequireLandlock(t testing.TB) {
	t.Helper()
	if v, err := ll.LandlockGetABIVersion(); err != nil || v < 1 {
		ciskip.Skip(t, "the kernel has no Landlock: the local backend cannot confine files there (it warns at start)")
	}
}
