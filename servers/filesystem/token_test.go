package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asMainEnv makes the test binary run the server's main with the arguments after "--" (no go build per test).
const asMainEnv = "FILESYSTEM_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		args := []string{"filesystem"}
		for i, a := range os.Args {
			if a == "--" {
				args = append(args, os.Args[i+1:]...)
				break
			}
		}
		os.Exit(mcpserve.ExitCode("filesystem", run(args), os.Stderr))
	}
	os.Exit(m.Run())
}

// TestOutsiderProbe is the outsider's side of TestMainTokenByDefault (mcptest.Outsider.Probe); skipped otherwise.
func TestOutsiderProbe(t *testing.T) { mcptest.OutsiderProbe(t) }

// startMain starts the server's main with args on a port of its choosing (mcptest.AnyPort) and waits for its health
// endpoint; it returns the address it serves on and the process's stderr as it comes.
func startMain(t *testing.T, args ...string) (string, *syncLines) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "-addr", mcptest.AnyPort}, args...)...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
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
			t.Fatalf("the server did not start:\n%s", logs.String())
		}
	}
}

// TestMainTokenByDefault is the other-user attack on the filesystem server's binary, started as root with no token: it
// generates one, writes it under /run/goalbox readable by root alone, prints it once; another user (made for the
// test) is refused without it and with a wrong one and cannot read the file, and gets in with it (positive
// control). /healthz answers only the Host names /mcp accepts and shows no host path of the workspace.
func TestMainTokenByDefault(t *testing.T) {
	out := mcptest.NewOutsider(t)
	real := filepath.Join(t.TempDir(), "real-ws-5b2f")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "given-ws-e41c")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	addr, logs := startMain(t, "-workspace", ws)
	file, err := mcpserve.DefaultTokenFile(fsserver.Name, addr)
	if err != nil || !strings.HasPrefix(file, "/run/goalbox/") {
		t.Fatalf("root's token file %q %v: want it under /run/goalbox", file, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("token file: %v\n%s", err, logs.String())
	}
	token := strings.TrimSpace(string(b))
	url := "http://" + addr + protocol.EndpointPath
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "Authorization: Bearer "+token); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the start did not print the header with the token:\n%s", logs.String())
		}
	}
	spec := mcptest.ProbeSpec{TokenFiles: []string{file}, URLs: []string{url}, RightToken: map[string]string{url: token}}
	mcptest.CheckRefused(t, out.Probe(t, "TestOutsiderProbe", spec), spec)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: mcptest.Bearer(token, nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: protocol.ToolListFiles, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("with the token: %v %+v", err, res)
	}
	cs.Close()

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
	if status, body := get("evil.example:7101"); status != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Errorf("/healthz with a foreign Host: %d %s; want 403 naming the Host", status, body)
	}
	status, body := get("")
	var h map[string]any
	if status != 200 || json.Unmarshal([]byte(body), &h) != nil {
		t.Fatalf("/healthz: %d %s", status, body)
	}
	for _, p := range []string{ws, real, filepath.Base(ws), filepath.Base(real)} {
		if strings.Contains(body, p) {
			t.Errorf("/healthz shows the workspace's host path %s:\n%s", p, body)
		}
	}
	if h["workspace"] != protocol.DefaultRoot {
		t.Errorf("/healthz workspace %v, want %s", h["workspace"], protocol.DefaultRoot)
	}
}

// TestMainTokenNone: -token none serves without a token and warns.
func TestMainTokenNone(t *testing.T) {
	addr, logs := startMain(t, "-workspace", t.TempDir(), "-token", "none")
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
