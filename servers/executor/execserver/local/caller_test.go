//go:build linux

package local

// Commands end with their caller: a dropped connection, a DELETE of the session, an expired session and a server
// shutdown each kill the session's commands, whole tree, within a second, seen from the host's /proc. The
// executor's /healthz shows the advertised root, not the workspace's host path.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callerServer is an executor on the local backend, served with cfg, for raw HTTP clients.
type callerServer struct {
	run *mcpserve.Running
	ex  *execserver.Executor
	b   backend.Backend
	ws  string
}

func startCallerServer(t *testing.T, cfg mcpserve.Config) *callerServer {
	t.Helper()
	b, ws := newLocalTestBackend(t, nil)
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	ex, err := execserver.New(execserver.Config{}, b, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.Token = mcpserve.NoToken // these tests are about calls and sessions; pkg/mcpserve tests the token
	run, err := mcpserve.Start(ex.Server(), cfg, ex.Health, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Close() })
	return &callerServer{run: run, ex: ex, b: b, ws: ws}
}

// post sends one JSON-RPC message on the session sid ("" to initialize) and returns the response, unread.
func (s *callerServer) post(ctx context.Context, sid, body string) (*http.Response, error) {
	return s.request(ctx, "POST", sid, body)
}

func (s *callerServer) request(ctx context.Context, method, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.run.URL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	// A connection of its own per request, so that dropping one drops nothing else.
	return (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
}

func (s *callerServer) initialize(t *testing.T) string {
	t.Helper()
	resp, err := s.post(context.Background(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	resp, err = s.post(context.Background(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return sid
}

// runAsync starts sandbox_run_command of command on the session; the call's connection lives until ctx ends.
func (s *callerServer) runAsync(ctx context.Context, sid, command string) <-chan string {
	args, _ := json.Marshal(protocol.RunCommandInput{Command: command, TimeoutSeconds: 900})
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, protocol.ToolRunCommand, args)
	out := make(chan string, 1)
	go func() {
		resp, err := s.post(ctx, sid, body)
		if err != nil {
			out <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- string(b)
	}()
	return out
}

// sleepTree is a command that leaves two sleeps running (one in the background, one in the foreground), each with
// a duration no other process on the host has, so the host's /proc finds them.
func sleepTree() (command, marker string) {
	marker = fmt.Sprintf("601.%06d", rand.IntN(1000000))
	return fmt.Sprintf("sleep %s & sleep %s; wait", marker, marker), marker
}

// hostPIDs lists the processes on the host whose command line holds marker (zombies have none).
func hostPIDs(marker string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// treeRunning reports whether both sleeps of the tree run (sh's command line holds the marker too, after "sleep ").
func treeRunning(marker string) func() bool {
	return func() bool { return len(hostPIDs("sleep\x00"+marker)) == 2 }
}

// requireRunning waits for both sleeps of the tree to be running.
func requireRunning(t *testing.T, marker string) {
	t.Helper()
	if !waitFor(time.Minute, treeRunning(marker)) {
		t.Fatalf("the command's processes never appeared (found %v)", hostPIDs(marker))
	}
}

// requireGone checks that every process of the tree is gone within a second of since.
func requireGone(t *testing.T, marker string, since time.Time, what string) {
	t.Helper()
	if !waitFor(time.Second-time.Since(since), func() bool { return len(hostPIDs(marker)) == 0 }) {
		t.Errorf("%s: processes %v still running after %v", what, hostPIDs(marker), time.Since(since).Round(time.Millisecond))
		return
	}
	t.Logf("%s: the tree was gone %v after", what, time.Since(since).Round(time.Millisecond))
}

func TestCommandsEndWithTheirCaller(t *testing.T) {
	t.Run("dropped connection", func(t *testing.T) {
		s := startCallerServer(t, mcpserve.Config{})
		sid := s.initialize(t)
		cmd, marker := sleepTree()
		ctx, drop := context.WithCancel(context.Background())
		s.runAsync(ctx, sid, cmd)
		requireRunning(t, marker)
		start := time.Now()
		drop()
		requireGone(t, marker, start, "connection dropped")
	})

	t.Run("session deleted", func(t *testing.T) {
		s := startCallerServer(t, mcpserve.Config{})
		sid := s.initialize(t)
		cmd, marker := sleepTree()
		s.runAsync(context.Background(), sid, cmd)
		requireRunning(t, marker)
		start := time.Now()
		resp, err := s.request(context.Background(), "DELETE", sid, "")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != http.StatusNoContent || took > 500*time.Millisecond {
			t.Errorf("DELETE answered %d after %v, want 204 at once", resp.StatusCode, took)
		}
		requireGone(t, marker, start, "DELETE")
	})

	t.Run("server shutdown", func(t *testing.T) {
		s := startCallerServer(t, mcpserve.Config{})
		sid := s.initialize(t)
		cmd, marker := sleepTree()
		result := s.runAsync(context.Background(), sid, cmd)
		requireRunning(t, marker)
		start := time.Now()
		go s.run.Close()
		requireGone(t, marker, start, "shutdown")
		// The caller is told: the command was killed.
		select {
		case body := <-result:
			if !strings.Contains(body, `"exit_code":-1`) {
				t.Errorf("result after shutdown: %.300s", body)
			}
		case <-time.After(2 * time.Second):
			t.Error("no result after shutdown")
		}
	})

	t.Run("session expired", func(t *testing.T) {
		// A session with a call in flight is in use, so it cannot expire under sandbox_run_command; what expiry
		// ends is work the session owns beyond its calls (a background process). bg_run starts a command on the
		// real backend under the session's context, as such a tool does, and returns once the command's tree
		// runs: the session's idle time starts at the answer, and a tool that answered before the sandbox had
		// started (it takes more than the 0.5 s idle timeout on a loaded machine) let the session expire before
		// there was a tree to kill.
		s := startCallerServer(t, mcpserve.Config{SessionIdleTimeout: 500 * time.Millisecond})
		cmd, marker := sleepTree()
		mcp.AddTool(s.ex.Server(), &mcp.Tool{Name: "bg_run"}, func(ctx context.Context, req *mcp.CallToolRequest, in protocol.RunCommandInput) (*mcp.CallToolResult, struct{}, error) {
			r := backend.Request{Command: in.Command, Dir: ".", Timeout: time.Duration(in.TimeoutSeconds) * time.Second, Stdout: io.Discard, Stderr: io.Discard}
			go s.b.Run(mcpserve.SessionContext(ctx), r)
			if !waitFor(time.Minute, treeRunning(marker)) {
				return nil, struct{}{}, fmt.Errorf("the command's processes never appeared (found %v)", hostPIDs(marker))
			}
			return nil, struct{}{}, nil
		})
		sid := s.initialize(t)
		args, _ := json.Marshal(protocol.RunCommandInput{Command: cmd, TimeoutSeconds: 900})
		resp, err := s.post(context.Background(), sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bg_run","arguments":%s}}`, args))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastRequest := time.Now()
		if resp.StatusCode != 200 || strings.Contains(string(body), `"isError":true`) {
			t.Fatalf("bg_run: %d %s", resp.StatusCode, body)
		}
		// No requireRunning here: bg_run saw the tree run, and the session may expire while this looks.
		// The session is idle from its last request on (no request may be sent now: it would be a use); it expires
		// 0.5 s later, and the reaper looks every eighth of a second, all within the second allowed.
		requireGone(t, marker, lastRequest.Add(500*time.Millisecond), "session expired")
		resp, err = s.post(context.Background(), sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("ping on the expired session: %d, want 404", resp.StatusCode)
		}
	})
}

// TestHealthShowsAdvertisedRoot: /healthz is open to whoever reaches the port, so it names the workspace as clients
// see it (/workspace), never by its host path.
func TestHealthShowsAdvertisedRoot(t *testing.T) {
	s := startCallerServer(t, mcpserve.Config{})
	resp, err := http.Get("http://" + s.run.Addr + protocol.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), s.ws) {
		t.Errorf("/healthz shows the workspace's host path %s: %s", s.ws, b)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	if h["workspace"] != protocol.DefaultRoot {
		t.Errorf("/healthz workspace %v, want %s", h["workspace"], protocol.DefaultRoot)
	}
}
