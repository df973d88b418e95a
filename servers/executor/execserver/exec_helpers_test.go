package execserver

// Test helpers shared by the local backend's tests, the containment suite and the benchmarks: a real executor over
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

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newLocalTestBackend builds a local backend over a fresh workspace, with its caches in a test folder. mutate may
// change the configuration first.
func newLocalTestBackend(t testing.TB, mutate func(*LocalConfig)) (Backend, string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's folders are 0700; commands run as an unprivileged user, and in the fallback mode (no mount
	// namespace to bridge closed folders) that user must be able to pass through the test's folder.
	if err := os.Chmod(filepath.Dir(ws), 0o711); err != nil {
		t.Fatal(err)
	}
	cfg := LocalConfig{Workspace: ws, CacheDir: filepath.Join(filepath.Dir(ws), "cache")}
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := NewLocalBackend(cfg, nil)
	if err != nil {
		t.Fatalf("NewLocalBackend: %v", err)
	}
	if !cfg.NoNamespaces && userNamespacesWork() {
		// Where user namespaces work, the namespace mode must be what a backend gets, not a quiet fallback.
		if mode := b.Confinement()["mode"]; mode != "pid-namespace" {
			t.Fatalf("the backend fell back to %v where user namespaces work", mode)
		}
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, ws
}

// execTestServer is an executor served on loopback HTTP.
type execTestServer struct {
	URL     string
	Addr    string
	Exec    *Executor
	Session *mcp.ClientSession
}

// startExecTestServer serves an executor over b and the workspace ws on 127.0.0.1:0 and connects a go-sdk client
// over streamable HTTP. opts may carry client handlers (progress).
func startExecTestServer(t testing.TB, b Backend, ws string, cfg Config, opts *mcp.ClientOptions) *execTestServer {
	t.Helper()
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	ex, err := New(cfg, b, g, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run, err := mcpserve.Start(ex.Server(), mcpserve.Config{Addr: "127.0.0.1:0"}, ex.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "execserver-test", Version: "0"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: run.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return &execTestServer{URL: run.URL, Addr: run.Addr, Exec: ex, Session: cs}
}

// callRun calls sandbox_run_command. It fails the test on a protocol error, and returns the raw result for tool
// errors (IsError) with the zero output.
func callRun(t testing.TB, ctx context.Context, cs *mcp.ClientSession, in protocol.RunCommandInput) (protocol.RunCommandOutput, *mcp.CallToolResult) {
	t.Helper()
	res, err := callRunErr(ctx, cs, in)
	if err != nil {
		t.Fatalf("call %q: %v", in.Command, err)
	}
	return decodeRun(t, res), res
}

func callRunErr(ctx context.Context, cs *mcp.ClientSession, in protocol.RunCommandInput) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: in})
}

func decodeRun(t testing.TB, res *mcp.CallToolResult) protocol.RunCommandOutput {
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

// mustRun runs a command that must succeed as a call (any exit code) and returns its output.
func mustRun(t testing.TB, cs *mcp.ClientSession, in protocol.RunCommandInput) protocol.RunCommandOutput {
	t.Helper()
	out, res := callRun(t, context.Background(), cs, in)
	if res.IsError {
		t.Fatalf("%q: tool error: %s", in.Command, mcpserve.ToolErrorText(res))
	}
	return out
}

// toolError runs a call that must be refused and returns the message.
func toolError(t testing.TB, cs *mcp.ClientSession, in protocol.RunCommandInput) string {
	t.Helper()
	_, res := callRun(t, context.Background(), cs, in)
	if !res.IsError {
		t.Fatalf("%+v: want a tool error, got %+v", in, decodeRun(t, res))
	}
	return mcpserve.ToolErrorText(res)
}

// pidAlive reports whether a process with this pid exists (and is not a zombie).
func pidAlive(pid int) bool {
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

// requireNamespaceMode skips a test of the namespace mode where this machine cannot create user namespaces (some
// container runtimes forbid them). Where it can, the mode must work, as root and as any other user.
func requireNamespaceMode(t testing.TB) {
	t.Helper()
	if !userNamespacesWork() {
		t.Skip("this machine cannot create a user namespace: the fallback tests cover it")
	}
}

// userNamespacesWork reports whether this process may create a user namespace.
func userNamespacesWork() bool {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	return cmd.Run() == nil
}

// requireLandlock skips a containment test on a kernel without Landlock: the backend runs there, and says loudly
// that commands are not confined.
func requireLandlock(t testing.TB) {
	t.Helper()
	if v, err := ll.LandlockGetABIVersion(); err != nil || v < 1 {
		t.Skip("the kernel has no Landlock: the local backend cannot confine files there (it warns at start)")
	}
}
