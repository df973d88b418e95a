// Package examples_test runs every example against the real servers built from this repository: the Go client over
// HTTP on loopback, the Claude Desktop and Cursor configs over stdio, the compose override with Docker Compose.
package examples_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildServers builds both server commands into dir, as `go build -o dir/ ./servers/...` does for a user: dir/filesystem
// and dir/executor.
func buildServers(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./servers/filesystem", "./servers/executor")
	cmd.Dir = ".." // the repository root, where go.work is
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the servers: %v\n%s", err, out)
	}
}

// serve starts the server binary bin over workspace on a loopback port of its choosing, as a user may (no token
// given: it generates one and writes it to the file -token-file names), waits until /healthz answers, and returns its
// MCP endpoint, read from its "serving" log line, and its token. (A port found free beforehand could be taken, by a
// test of another package running beside, before the server listened on it.) The server is killed when the test ends.
func serve(t *testing.T, bin, workspace string) (url, token string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-workspace", workspace, "-token-file", tokenFile)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if url = servingURL(stderr.String()); url != "" {
			var resp *http.Response
			if resp, err = http.Get(strings.TrimSuffix(url, "/mcp") + "/healthz"); err == nil {
				resp.Body.Close()
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					t.Fatalf("%s wrote no token file: %v\n%s", filepath.Base(bin), err, stderr.String())
				}
				return url, strings.TrimSpace(string(b))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up: %v\n%s", filepath.Base(bin), err, stderr.String())
		}
	}
}

// servingURL is the MCP endpoint a server's "serving" log line names ("" until it is logged, which is before it
// answers a request).
func servingURL(log string) string {
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" && strings.HasPrefix(l.URL, "http://") {
			return l.URL
		}
	}
	return ""
}

// syncBuffer is a process's stderr, read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// callTool calls tool and returns its structured result, failing the test on a protocol error or a tool error.
func callTool(t *testing.T, s *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s refused: %s", tool, res.Content[0].(*mcp.TextContent).Text)
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s: structured content %T, want an object", tool, res.StructuredContent)
	}
	return out
}
