package fsserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/mcpserve/mcptest"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw JSON-RPC body to the MCP endpoint with the given extra headers.
func post(t *testing.T, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// bearerTransport adds a bearer token to every request, as a configured client would.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPGuards attacks the HTTP endpoint: DNS rebinding (a foreign Host), a cross-origin browser request, and
// missing or wrong tokens are refused; the health endpoint stays open and says what is served.
func TestHTTPGuards(t *testing.T) {
	ws := t.TempDir()
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{Token: "s3cret-token"})
	auth := "Bearer s3cret-token"
	cases := []struct {
		name   string
		header map[string]string
		status int
		want   string
	}{
		{"foreign host", map[string]string{"Host": "evil.example:7101", "Authorization": auth}, 403, "Host"},
		{"rebinding to loopback port", map[string]string{"Host": "attacker.test", "Authorization": auth}, 403, "Host"},
		{"foreign origin", map[string]string{"Origin": "http://evil.example", "Authorization": auth}, 403, "cross-origin"},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example", "Authorization": auth}, 403, "cross-origin"},
		{"no token", nil, 401, "token"},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, 401, "token"},
		{"token without Bearer", map[string]string{"Authorization": "s3cret-token"}, 401, "token"},
		{"right token", map[string]string{"Authorization": auth}, 200, "goalbox-filesystem"},
		{"same origin", map[string]string{"Authorization": auth, "Origin": "http://" + run.Addr}, 200, "goalbox-filesystem"},
	}
	for _, c := range cases {
		status, body := post(t, run.URL, initBody, c.header)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: got %d %q, want %d containing %q", c.name, status, body, c.status, c.want)
		}
	}

	resp, err := http.Get("http://" + run.Addr + protocol.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// Whoever reaches the port may read /healthz: the workspace is shown as clients see it, never by its host path.
	if health["status"] != "ok" || health["server"] != "goalbox-filesystem" || health["workspace"] != "/workspace" || health["advertised_root"] != "/workspace" || health["limits"] == nil {
		t.Errorf("health: %v", health)
	}

	// A real client with the token works.
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: run.URL, HTTPClient: &http.Client{Transport: bearerTransport{"s3cret-token"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "x", "content": "y"})
}

// TestHTTPMalformed sends broken and oversized requests; each gets an error, and the server keeps serving a real
// client that was connected before and one that connects after.
func TestHTTPMalformed(t *testing.T) {
	ws := t.TempDir()
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{MaxRequestBytes: 256 << 10})
	before := connectURL(t, run.URL)
	ok[protocol.WriteFileOutput](t, before, protocol.ToolWriteFile, map[string]any{"path": "keep.txt", "content": "intact"})

	bad := []struct{ name, body string }{
		{"not json", `{"jsonrpc": "2.0", "id": 1, "method": `},
		{"binary garbage", "\x00\xff\xfe garbage"},
		{"empty", ``},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"initialize"}`},
		{"array of nonsense", `[1,2,3]`},
		{"tools/call without a session", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_read_file","arguments":{"path":"keep.txt"}}}`},
		{"deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000)},
		{"oversized", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_write_file","arguments":{"path":"big.txt","content":"` + strings.Repeat("A", 1<<20) + `"}}}`},
	}
	for _, c := range bad {
		// An error is an HTTP error status or a JSON-RPC error object.
		status, body := post(t, run.URL, c.body, nil)
		if status < 400 && !strings.Contains(body, `"error"`) {
			t.Errorf("%s: status %d, want an error; body %.200q", c.name, status, body)
		}
		if c.name == "oversized" && status != http.StatusRequestEntityTooLarge {
			t.Errorf("oversized: status %d, want 413; body %.200q", status, body)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "big.txt")); err == nil {
		t.Errorf("the oversized request was executed")
	}
	if got := ok[readOut](t, before, protocol.ToolReadFile, map[string]any{"path": "keep.txt"}); got.Content != "intact" {
		t.Errorf("after the attacks: %+v", got)
	}
	after := connectURL(t, run.URL)
	ok[readOut](t, after, protocol.ToolReadFile, map[string]any{"path": "keep.txt"})
}

// TestStdioMalformed writes garbage lines to the server's stdin between real requests: each gets a JSON-RPC error
// (or is ignored), and the session goes on answering.
func TestStdioMalformed(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644))
	cmd := exec.Command(serverBin(t), setup{}.flags(ws)...)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { stdin.Close(); cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	expect := func(id, want string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the server closed stdout waiting for id %s", id)
				}
				if strings.Contains(l, `"id":`+id+`,`) || strings.Contains(l, `"id":`+id+`}`) {
					if !strings.Contains(l, want) {
						t.Errorf("reply to %s: %s, want %q", id, l, want)
					}
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no reply to id %s", id)
			}
		}
	}
	send(initBody)
	expect("1", "goalbox-filesystem")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"no/such/method"}`)
	expect("2", `"error"`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_read_file","arguments":"not an object"}}`)
	expect("3", `"isError":true`)
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sandbox_read_file","arguments":{"path":"a.txt"}}}`)
	expect("4", `hello`)
	// A line that is not JSON at all: the go-sdk's own stdio transport would end the session on it; mcpserve's
	// answers it with a parse error and goes on.
	send(`{this is not json`)
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_read_file","arguments":{"path":"a.txt"}}}`)
	select {
	case l, open := <-lines:
		if !open {
			t.Fatal("the stdio session ended on a line that is not JSON")
		}
		if !strings.Contains(l, `"error"`) && !strings.Contains(l, "hello") {
			t.Errorf("after a garbage line: %s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply after a garbage line")
	}
	expect("5", `hello`)
}

// TestAudit checks that every tool call, success or refusal, leaves one JSON line in the audit log, in both
// protocol eras: a session's calls name their session, stateless ones their protocol version only.
func TestAudit(t *testing.T) {
	for _, era := range mcptest.Eras {
		t.Run(era, func(t *testing.T) { testAudit(t, era) })
	}
}

func testAudit(t *testing.T, era string) {
	ws := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{AuditLog: logPath})
	cs := connectURLVersion(t, run.URL, era)
	ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "a.txt", "content": "x"})
	fails(t, cs, protocol.ToolReadFile, map[string]any{"path": "../etc/passwd"})
	ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{})
	cs.Close()
	var recs []mcpserve.AuditRecord
	data, err := os.ReadFile(logPath)
	must(t, err)
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r mcpserve.AuditRecord
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	want := []struct{ tool, outcome string }{{protocol.ToolWriteFile, "ok"}, {protocol.ToolReadFile, "tool_error"}, {protocol.ToolListFiles, "ok"}}
	if len(recs) != len(want) {
		t.Fatalf("%d audit records, want %d: %s", len(recs), len(want), data)
	}
	for i, w := range want {
		if recs[i].Tool != w.tool || recs[i].Outcome != w.outcome || recs[i].Server != "goalbox-filesystem" || recs[i].Protocol != era ||
			(recs[i].Session == "") != (era == mcptest.StatelessEra) {
			t.Errorf("record %d: %+v, want %s %s", i, recs[i], w.tool, w.outcome)
		}
	}
	if !strings.Contains(recs[1].Error, "outside the workspace") || !strings.Contains(string(recs[1].Arguments), "../etc/passwd") {
		t.Errorf("the refusal's record lacks its reason or arguments: %+v", recs[1])
	}
}
