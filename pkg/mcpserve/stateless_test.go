package mcpserve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraOut is what the era tool reports about the call it serves.
type eraOut struct {
	Stateless bool   `json:"stateless"`
	Session   string `json:"session"`
	Version   string `json:"version"`
}

// newEraServer has a tool that says which era its call came in: what the executor's tools decide their scope by.
func newEraServer() *mcp.Server {
	srv := newEchoServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "era", Annotations: Annotations(Hints{Title: "Era", ReadOnly: true, Idempotent: true})},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, eraOut, error) {
			out := eraOut{Stateless: Stateless(ctx), Session: req.Session.ID()}
			if p := req.Session.InitializeParams(); p != nil {
				out.Version = p.ProtocolVersion
			}
			return nil, out, nil
		})
	return srv
}

// connectVersion connects a go-sdk client asking for version ("" is the SDK's newest).
func connectVersion(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callEra(t *testing.T, cs *mcp.ClientSession) eraOut {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "era", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("era: %v %+v", err, res)
	}
	var out eraOut
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestErasShareOneEndpoint: a 2025-11-25 client and a 2026-07-28 client use one /mcp at once; the first gets a
// session as before, the second is served without one, and each call's context says which it is.
func TestErasShareOneEndpoint(t *testing.T) {
	r := start(t, newEraServer(), Config{})
	old := connectVersion(t, r.URL, "2025-11-25")
	modern := connectVersion(t, r.URL, "2026-07-28")
	if v := old.InitializeResult().ProtocolVersion; v != "2025-11-25" || old.ID() == "" {
		t.Fatalf("2025-11-25 client: negotiated %q, session %q; want 2025-11-25 with a session", v, old.ID())
	}
	if v := modern.InitializeResult().ProtocolVersion; v != "2026-07-28" || modern.ID() != "" {
		t.Fatalf("2026-07-28 client: negotiated %q, session %q; want 2026-07-28 without a session", v, modern.ID())
	}
	for range 3 { // interleaved: neither era's requests disturb the other's
		if got := callEra(t, old); got.Stateless || got.Session != old.ID() || got.Version != "2025-11-25" {
			t.Errorf("2025-11-25 call: %+v, want its session %s", got, old.ID())
		}
		if got := callEra(t, modern); !got.Stateless || got.Session != "" || got.Version != "2026-07-28" {
			t.Errorf("2026-07-28 call: %+v, want stateless", got)
		}
	}
	// The SDK's newest (the default of a go-sdk client) is the stateless era now; before, its server/discover was
	// refused and it fell back to initialize.
	if v := connectVersion(t, r.URL, "").InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("a default go-sdk client negotiated %s, want 2026-07-28", v)
	}
	var health struct {
		Sessions struct{ Live int } `json:"sessions"`
	}
	resp, err := http.Get(strings.TrimSuffix(r.URL, "/mcp") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&health)
	if health.Sessions.Live != 1 {
		t.Errorf("live sessions %d, want 1: the stateless clients made none", health.Sessions.Live)
	}
}

// rawStateless posts body as a 2026-07-28 request without a session and returns the status and body.
func rawStateless(t *testing.T, url, method, body string, mutate func(*http.Request)) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	// 2026-07-28 repeats the method (and a tool call's name) in headers, for routing by proxies.
	var msg struct {
		Method string
		Params struct{ Name string }
	}
	if json.Unmarshal([]byte(body), &msg) == nil && msg.Method != "" {
		req.Header.Set("Mcp-Method", msg.Method)
		if msg.Params.Name != "" {
			req.Header.Set("Mcp-Name", msg.Params.Name)
		}
	}
	if mutate != nil {
		mutate(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestStatelessOnTheWire speaks 2026-07-28 by hand: server/discover lists it, a tools/call needs no initialize
// and makes no session, the era's removed methods and verbs are refused, and the checks in front of /mcp (Host,
// token) hold for it as for sessions.
func TestStatelessOnTheWire(t *testing.T) {
	r := start(t, newEraServer(), Config{Token: "s3cret"})
	auth := func(req *http.Request) { req.Header.Set("Authorization", "Bearer s3cret") }

	code, body := rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+statelessMeta+`}}`, auth)
	if code != 200 || !strings.Contains(body, `"2026-07-28"`) || !strings.Contains(body, `"2025-11-25"`) {
		t.Errorf("server/discover: %d %s; want both eras listed", code, body)
	}
	code, body = rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+statelessMeta+`}}`, auth)
	if code != 200 || !strings.Contains(body, `\"text\":\"hi\"`) {
		t.Errorf("stateless tools/call: %d %s", code, body)
	}
	code, body = rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"},`+statelessMeta+`}}`, auth)
	if !strings.Contains(body, "-32601") {
		t.Errorf("initialize under 2026-07-28: %d %s; want method not found", code, body)
	}
	for _, verb := range []string{"GET", "DELETE"} {
		if code, body := rawStateless(t, r.URL, verb, "", auth); code != http.StatusMethodNotAllowed {
			t.Errorf("%s under 2026-07-28: %d %s, want 405", verb, code, body)
		}
	}
	// The header and the _meta must agree (the SDK's check, which only the stateless handler makes).
	code, body = rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, auth)
	if code != http.StatusBadRequest {
		t.Errorf("header 2026-07-28, _meta 2025-11-25: %d %s, want 400", code, body)
	}
	// JSON-RPC ids stay exact without a session too (the go-sdk would make this one 9007199254740992).
	code, body = rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list","params":{`+statelessMeta+`}}`, auth)
	if code != 200 || !strings.Contains(body, `"id":9007199254740993`) {
		t.Errorf("a stateless request with an id above 2^53: %d %.200s", code, body)
	}
	// Positive control above; now the guards.
	if code, body := rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{`+statelessMeta+`}}`, nil); code != http.StatusUnauthorized {
		t.Errorf("stateless request without the token: %d %s, want 401", code, body)
	}
	if code, body := rawStateless(t, r.URL, "POST", `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{`+statelessMeta+`}}`, func(req *http.Request) {
		auth(req)
		req.Host = "evil.example"
	}); code != http.StatusForbidden {
		t.Errorf("stateless request with a foreign Host: %d %s, want 403", code, body)
	}
	if n := r.s.sessions.count(); n != 0 {
		t.Errorf("%d sessions after stateless requests, want 0", n)
	}
}

// TestStatelessCallEndsWithItsConnection: a stateless call's context ends when its POST's connection closes, as a
// session's call does (the executor kills the command then).
func TestStatelessCallEndsWithItsConnection(t *testing.T) {
	srv := newEchoServer()
	ended := make(chan error, 1)
	started := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "block", Annotations: Annotations(Hints{Title: "Block", ReadOnly: true, Idempotent: true})},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, echoOut, error) {
			close(started)
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil, echoOut{}, nil
		})
	r := start(t, srv, Config{})
	cs := connectVersion(t, r.URL, "2026-07-28")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}}) }()
	<-started
	cancel()
	select {
	case err := <-ended:
		t.Logf("cause: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stateless call's context did not end when its client gave up")
	}
}

// TestManyStatelessRequestsLeaveNothing: 10,000 stateless calls over one keep-alive connection leave no session
// behind, in this package's table or the go-sdk's (each is served in a throwaway session closed with its POST), no
// goroutines, and a heap about where it was.
func TestManyStatelessRequestsLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	srv := newEchoServer()
	r := start(t, srv, Config{})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + statelessMeta + `}}`
	call := func() {
		code, got := rawStateless(t, r.URL, "POST", body, nil)
		if code != 200 || !strings.Contains(got, `\"text\":\"x\"`) {
			t.Fatalf("stateless call: %d %s", code, got)
		}
	}
	call()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	start := time.Now()
	const n = 10000
	for range n {
		call()
	}
	took := time.Since(start)
	if !eventually(5*time.Second, func() bool { return countSessions(srv) == 0 && runtime.NumGoroutine() <= goroutines+5 }) {
		t.Errorf("after %d stateless calls: %d go-sdk sessions, %d goroutines (%d before)", n, countSessions(srv), runtime.NumGoroutine(), goroutines)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d stateless calls in %v (%v each); heap %d -> %d KiB (%+d KiB); sessions %d", n, took.Round(time.Millisecond),
		(took / n).Round(time.Microsecond), before.HeapAlloc>>10, after.HeapAlloc>>10, grew>>10, r.s.sessions.count())
	if grew > 8<<20 || r.s.sessions.count() != 0 {
		t.Errorf("heap grew by %d KiB, %d sessions in the table", grew>>10, r.s.sessions.count())
	}
}

// BenchmarkToolCallByEra is one echo tools/call through a go-sdk client, in a session and statelessly (a
// throwaway session per request on the server).
func BenchmarkToolCallByEra(b *testing.B) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(era, func(b *testing.B) {
			r, err := Start(newEchoServer(), Config{Addr: "127.0.0.1:0", Token: NoToken}, NoHealth, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "0"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: r.URL, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			args := map[string]any{"text": "x"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
