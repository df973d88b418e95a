package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text"`
}
type echoOut struct {
	Text string `json:"text"`
}

// newEchoServer is a one-tool server: the tools themselves are the servers' business; this package is tested on
// what surrounds them.
func newEchoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "test"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Annotations: Annotations(Hints{Title: "Echo", ReadOnly: true, Idempotent: true})},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			if in.Text == "fail" {
				return nil, echoOut{}, errString("asked to fail")
			}
			return nil, echoOut{Text: in.Text}, nil
		})
	return srv
}

type errString string

func (e errString) Error() string { return string(e) }

func start(t *testing.T, srv *mcp.Server, cfg Config) *Running {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.Token == "" {
		// These tests are about what lies behind the token check; token_test.go tests the token by default.
		cfg.Token = NoToken
	}
	r, err := Start(srv, cfg, func() map[string]any { return map[string]any{"server": "echo"} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, url string, mutate func(*http.Request)) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if mutate != nil {
		mutate(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPGuards(t *testing.T) {
	r := start(t, newEchoServer(), Config{Token: "s3cret", AllowedHosts: []string{"sandbox.internal"}})
	auth := func(req *http.Request) { req.Header.Set("Authorization", "Bearer s3cret") }
	cases := []struct {
		name   string
		mutate func(*http.Request)
		status int
		says   string
	}{
		{"token ok", auth, 200, ""},
		{"no token", nil, 401, "Send the header Authorization"},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401, "Send the header Authorization"},
		{"lower-case scheme (RFC 9110: case-insensitive)", func(r *http.Request) { r.Header.Set("Authorization", "bearer s3cret") }, 200, ""},
		{"upper-case scheme, two spaces", func(r *http.Request) { r.Header.Set("Authorization", "BEARER  s3cret") }, 200, ""},
		{"other scheme", func(r *http.Request) { r.Header.Set("Authorization", "Basic s3cret") }, 401, "Send the header Authorization"},
		{"token as a prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cretX") }, 401, "Send the header Authorization"},
		{"foreign host (DNS rebinding)", func(r *http.Request) { auth(r); r.Host = "evil.example:7101" }, 403, "Host"},
		{"allowed extra host", func(r *http.Request) { auth(r); r.Host = "sandbox.internal:7101" }, 200, ""},
		{"foreign origin", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://evil.example") }, 403, "origin"},
		{"cross-site fetch", func(r *http.Request) { auth(r); r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403, "origin"},
		{"same origin", func(r *http.Request) { auth(r); r.Header.Set("Origin", "http://"+r.Host) }, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, r.URL, c.mutate)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.says != "" && !strings.Contains(string(body), c.says) {
				t.Errorf("body %q does not say %q", body, c.says)
			}
		})
	}
}

func TestHealthIsOpenAndReportsServer(t *testing.T) {
	r := start(t, newEchoServer(), Config{Token: "s3cret"})
	resp, err := http.Get("http://" + r.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %d %v", resp.StatusCode, err)
	}
	if body["status"] != "ok" || body["server"] != "echo" || body["sessions"] == nil || body["connections"] == nil {
		t.Errorf("health body %v", body)
	}
	resp2, err := http.Get("http://" + r.Addr + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp2.StatusCode)
	}
}

func TestAuditLogsEveryCall(t *testing.T) {
	srv := newEchoServer()
	var buf syncBuffer
	Audit(srv, "echo", &buf)
	r := start(t, srv, Config{})
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, text := range []string{"hi", "fail"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}}); err != nil {
			t.Fatal(err)
		}
	}
	var recs []AuditRecord
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var rec AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d audit records, want 2:\n%s", len(recs), buf.String())
	}
	if recs[0].Tool != "echo" || recs[0].Outcome != "ok" || !strings.Contains(string(recs[0].Arguments), "hi") {
		t.Errorf("first record %+v", recs[0])
	}
	if recs[1].Outcome != "tool_error" || !strings.Contains(recs[1].Error, "asked to fail") {
		t.Errorf("second record %+v", recs[1])
	}
}

func TestLoadFlagsWinOverEnv(t *testing.T) {
	t.Setenv("GOALBOX_T_ADDR", "127.0.0.1:9999")
	t.Setenv("GOALBOX_T_WORKSPACE", "/from/env")
	t.Setenv("GOALBOX_T_ALLOWED_HOSTS", "a.example,b.example")
	cfg := Config{Addr: "127.0.0.1:7101"}
	if _, err := Load(&cfg, "GOALBOX_T_", []string{"srv", "-workspace", "/from/flag"}, nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:9999" || cfg.Workspace != "/from/flag" || len(cfg.AllowedHosts) != 2 {
		t.Errorf("config %+v", cfg)
	}
	if _, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv"}, nil); err == nil || !strings.Contains(err.Error(), "-workspace") {
		t.Errorf("missing workspace: %v", err)
	}
	if _, err := Load(&Config{}, "GOALBOX_NONE_", []string{"srv", "-workspace", "w", "stray"}, nil); err == nil {
		t.Error("stray argument accepted")
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }
