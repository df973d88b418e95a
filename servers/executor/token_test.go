package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/executor/execserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOutsiderProbe is the outsider's side of TestMainTokenByDefault (mcptest.Outsider.Probe); skipped otherwise.
func TestOutsiderProbe(t *testing.T) { mcptest.OutsiderProbe(t) }

// startMain starts the executor's main with env and args on a port of its choosing (mcptest.AnyPort) and waits for its
// health endpoint; it returns the address it serves on and the process's stderr as it comes.
func startMain(t *testing.T, env []string, args ...string) (string, *syncLines) {
	t.Helper()
	cmd := executor(t, env, append(args, "-addr", mcptest.AnyPort)...)
	logs := &syncLines{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if addr := mcptest.ServingAddr(logs.String()); addr != "" {
			if resp, err := http.Get("http://" + addr + protocol.HealthPath); err == nil {
				resp.Body.Close()
				return addr, logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the executor did not start:\n%s", logs.String())
		}
	}
}

// TestMainTokenByDefault is the other-user attack on the executor's own binary, started as root with no token: it
// generates one, writes it to /run/goalbox (never $HOME) readable by root alone and prints it once; another user of
// the machine (made for the test) is refused without it and with a wrong one and cannot read the file, and gets in
// with it (positive control). The health endpoint answers only the Host names /mcp accepts and names the
// workspace as clients see it, never by its host path.
func TestMainTokenByDefault(t *testing.T) {
	out := mcptest.NewOutsider(t)
	// The workspace through a symlink: neither the path given nor the real one may show.
	real := filepath.Join(t.TempDir(), "real-ws-7c1e")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "given-ws-93ad")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	addr, logs := startMain(t, []string{"GOALBOX_EXEC_TOKEN="}, "-workspace", ws, "-cache-dir", t.TempDir())
	file, err := mcpserve.DefaultTokenFile(execserver.Name, addr)
	if err != nil || !strings.HasPrefix(file, "/run/goalbox/") {
		t.Fatalf("root's token file %q %v: want it under /run/goalbox", file, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("token file: %v\n%s", err, logs.String())
	}
	token := strings.TrimSpace(string(b))
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}
	url := "http://" + addr + protocol.EndpointPath
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "Authorization: Bearer "+token); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the start did not print the header with the token:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), url) || !strings.Contains(logs.String(), file) {
		t.Errorf("the start did not print the URL and the token file:\n%s", logs.String())
	}

	spec := mcptest.ProbeSpec{TokenFiles: []string{file}, URLs: []string{url}, RightToken: map[string]string{url: token}}
	mcptest.CheckRefused(t, out.Probe(t, "TestOutsiderProbe", spec), spec)

	// The owner, with the token, runs a command (positive control over the go-sdk).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: mcptest.Bearer(token, nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolRunCommand, Arguments: protocol.RunCommandInput{Command: "echo in"}})
	if err != nil || res.IsError {
		t.Errorf("with the token: %v %+v", err, res)
	}
	cs.Close()

	checkHealth(t, addr, ws, real)
}

// checkHealth: /healthz refuses a foreign Host as /mcp does (a page after a DNS rebinding must not read it), and its
// JSON holds no host path of the workspace, neither as given nor resolved.
func checkHealth(t *testing.T, addr, given, real string) {
	t.Helper()
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+protocol.HealthPath, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := get("evil.example:7102"); status != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Errorf("/healthz with a foreign Host: %d %s; want 403 naming the Host", status, body)
	}
	status, body := get("")
	if status != 200 {
		t.Fatalf("/healthz: %d %s", status, body)
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{given, real, filepath.Base(given), filepath.Base(real)} {
		if strings.Contains(body, p) {
			t.Errorf("/healthz shows the workspace's host path %s:\n%s", p, body)
		}
	}
	if h["workspace"] != protocol.DefaultRoot {
		t.Errorf("/healthz workspace %v, want the advertised root %s", h["workspace"], protocol.DefaultRoot)
	}
}

// TestMainTokenNone: -token none serves without a token, with a warning on stderr that says who gets in.
func TestMainTokenNone(t *testing.T) {
	addr, logs := startMain(t, nil, "-workspace", t.TempDir(), "-cache-dir", t.TempDir(), "-token", "none")
	resp, err := http.Post("http://"+addr+protocol.EndpointPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Error("-token none still asks for a token")
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "NO TOKEN"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("-token none without the warning:\n%s", logs.String())
		}
	}
}

// syncLines is a process's stderr, read while it runs.
type syncLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (s *syncLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncLines) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
