package mcpserve

// Tests of what bounds a served MCP server: sessions (idle expiry, the cap), the context a tool call runs under
// (cancelled when its connection drops, its session is deleted or expires, or the server shuts down), HTTP timeouts
// and the connection cap. All over real sockets on loopback.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probe watches the "wait" tool: each call says when it started and how its context ended.
type probe struct {
	started chan string // the session ID
	ended   chan error  // the context's cause, or nil when the call ran its course
	bg      chan error  // "spawn": the session context's cause when it ends
}

type waitIn struct {
	// Ms is how long the call runs; 0 waits until its context ends.
	Ms int `json:"ms,omitempty"`
}

func newProbe() *probe {
	return &probe{started: make(chan string, 64), ended: make(chan error, 64), bg: make(chan error, 64)}
}

// newProbeServer has "wait" (runs ms milliseconds or until cancelled), "spawn" (leaves work running that lasts as
// long as the session) and "echo".
func newProbeServer(p *probe) *mcp.Server {
	srv := newEchoServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, echoOut, error) {
		p.started <- req.Session.ID()
		var timer <-chan time.Time
		if in.Ms > 0 {
			timer = time.After(time.Duration(in.Ms) * time.Millisecond)
		}
		select {
		case <-ctx.Done():
			p.ended <- context.Cause(ctx)
			return nil, echoOut{}, context.Cause(ctx)
		case <-timer:
			p.ended <- nil
			return nil, echoOut{Text: "waited"}, nil
		}
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "spawn"}, func(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, echoOut, error) {
		sctx := SessionContext(ctx)
		go func() {
			<-sctx.Done()
			p.bg <- context.Cause(sctx)
		}()
		return nil, echoOut{Text: "spawned"}, nil
	})
	return srv
}

// within waits for a value on ch, failing the test after d.
func within[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
	}
	var zero T
	return zero
}

// rawClient speaks MCP's streamable HTTP by hand, so a test controls every request and connection.
type rawClient struct {
	t    *testing.T
	url  string
	http *http.Client
}

func newRawClient(t *testing.T, url string) *rawClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{t: t, url: url, http: &http.Client{Transport: tr}}
}

func (c *rawClient) do(ctx context.Context, method, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return c.http.Do(req)
}

// initialize opens a session and returns its ID.
func (c *rawClient) initialize() string {
	c.t.Helper()
	resp, err := c.do(context.Background(), "POST", "", initBody)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		c.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	resp, err = c.do(context.Background(), "POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sid
}

// call sends a tools/call and returns the status and the body.
func (c *rawClient) call(ctx context.Context, sid, tool string, args any) (int, string, error) {
	a, _ := json.Marshal(args)
	resp, err := c.do(ctx, "POST", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, a))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// ping sends a ping on the session and returns the HTTP status.
func (c *rawClient) ping(sid string) int {
	c.t.Helper()
	resp, err := c.do(context.Background(), "POST", sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// stream opens the session's standalone SSE stream (GET) and returns it open.
func (c *rawClient) stream(sid string) *http.Response {
	c.t.Helper()
	resp, err := c.do(context.Background(), "GET", sid, "")
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("GET stream: %d %s", resp.StatusCode, b)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (c *rawClient) delete(sid string) (int, time.Duration) {
	c.t.Helper()
	start := time.Now()
	resp, err := c.do(context.Background(), "DELETE", sid, "")
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

func countSessions(srv *mcp.Server) int {
	n := 0
	for range srv.Sessions() {
		n++
	}
	return n
}

// eventually polls cond for up to d.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestManySessionsStayBounded: 10,000 initialize requests that never DELETE their session
// must not keep 10,000 sessions (about 230 MiB) alive. The default cap holds them to DefaultMaxSessions. Here the
// abandoned sessions count as idle at once (SessionKeepActive 1 ms), so each new one recycles one of the client's
// own; TestSessionFloodSparesSessionsInUse is the flood against sessions in use.
func TestManySessionsStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 sessions")
	}
	srv := newEchoServer()
	r := start(t, srv, Config{SessionKeepActive: time.Millisecond})
	c := newRawClient(t, r.URL)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 10000 {
		resp, err := c.do(context.Background(), "POST", "", initBody)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("initialize %d: status %d", i, resp.StatusCode)
		}
	}
	limit := DefaultMaxSessions
	if !eventually(5*time.Second, func() bool { return countSessions(srv) <= limit }) {
		t.Errorf("%d live sessions after 10,000 initialize requests, want at most %d", countSessions(srv), limit)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap %d -> %d KiB (%+d KiB) for 10,000 sessions opened, %d live", before.HeapAlloc>>10, after.HeapAlloc>>10, grew>>10, countSessions(srv))
	if grew > 32<<20 {
		t.Errorf("heap grew by %d MiB", grew>>20)
	}
}

func TestIdleSessionExpires(t *testing.T) { synctest.Test(t, testIdleSessionExpires) }

func testIdleSessionExpires(t *testing.T) {
	p := newProbe()
	srv := newProbeServer(p)
	_, c := startInMemory(t, srv, Config{SessionIdleTimeout: 300 * time.Millisecond})

	idle := c.initialize()
	// Work the session left running is owned by it, and ends when it expires.
	if st, body, err := c.call(context.Background(), idle, "spawn", waitIn{}); err != nil || st != 200 {
		t.Fatalf("spawn: %d %s %v", st, body, err)
	}
	// A session whose client keeps its GET stream open is in use, however long nothing is said on it.
	listening := c.initialize()
	c.stream(listening)

	cause := within(t, p.bg, 3*time.Second, "the idle session's context")
	if !errors.Is(cause, ErrSessionExpired) {
		t.Errorf("session context ended with %v, want ErrSessionExpired", cause)
	}
	if st := c.ping(idle); st != http.StatusNotFound {
		t.Errorf("ping on the expired session: %d, want 404", st)
	}
	time.Sleep(400 * time.Millisecond)
	if st := c.ping(listening); st != 200 {
		t.Errorf("ping on the session with an open stream: %d, want 200", st)
	}
	if n := countSessions(srv); n != 1 {
		t.Errorf("%d sessions live, want 1", n)
	}
}

func TestMaxSessions(t *testing.T) { synctest.Test(t, testMaxSessions) }

func testMaxSessions(t *testing.T) {
	srv := newEchoServer()
	_, c := startInMemory(t, srv, Config{MaxSessions: 2, MaxSessionsPerClient: 2, SessionKeepActive: time.Millisecond})
	a := c.initialize()
	time.Sleep(5 * time.Millisecond)
	b := c.initialize()
	if c.ping(a) != 200 || c.ping(b) != 200 {
		t.Fatal("sessions not usable")
	}
	// b was used last, so a is the least recently used idle session: a new session closes it.
	time.Sleep(5 * time.Millisecond)
	c.ping(b)
	d := c.initialize()
	if st := c.ping(a); st != http.StatusNotFound {
		t.Errorf("least recently used session: ping %d, want 404 (closed)", st)
	}
	if c.ping(b) != 200 || c.ping(d) != 200 {
		t.Errorf("the other sessions were closed")
	}
	// When every session is in use (here: GET streams open), a new one is refused with a clear 503.
	c.stream(b)
	c.stream(d)
	resp, err := c.do(context.Background(), "POST", "", initBody)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "max-sessions") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("session past the cap: %d %q (Retry-After %q), want 503 naming -max-sessions", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if n := countSessions(srv); n != 2 {
		t.Errorf("%d sessions live, want 2", n)
	}
}

// A dropped connection and a DELETE end a call in synctest bubbles over in-memory connections: "at once" and
// "within a second" are then the bubble's time, which passes only while every goroutine waits on a timer, so they
// say that nothing waited for a timer, whatever the machine's load (on loopback, under the race detector on a loaded
// CI machine, half a second of real time is no promise).

func TestDroppedConnectionCancelsCall(t *testing.T) {
	synctest.Test(t, testDroppedConnectionCancelsCall)
}

func testDroppedConnectionCancelsCall(t *testing.T) {
	p := newProbe()
	_, c := startInMemory(t, newProbeServer(p), Config{})
	sid := c.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	go c.call(ctx, sid, "wait", waitIn{})
	within(t, p.started, 2*time.Second, "call start")
	cancel() // the client goes away: its connection is closed
	cause := within(t, p.ended, time.Second, "the call's context after the connection dropped")
	if !errors.Is(cause, ErrClientGone) {
		t.Errorf("cause %v, want ErrClientGone", cause)
	}
	// The session itself lives on: the client may reconnect.
	if st := c.ping(sid); st != 200 {
		t.Errorf("ping after the drop: %d", st)
	}
}

func TestDeleteCancelsCallsAndAnswersAtOnce(t *testing.T) {
	synctest.Test(t, testDeleteCancelsCallsAndAnswersAtOnce)
}

func testDeleteCancelsCallsAndAnswersAtOnce(t *testing.T) {
	p := newProbe()
	srv := newProbeServer(p)
	_, c := startInMemory(t, srv, Config{})
	sid := c.initialize()
	if st, _, _ := c.call(context.Background(), sid, "spawn", waitIn{}); st != 200 {
		t.Fatal("spawn")
	}
	go c.call(context.Background(), sid, "wait", waitIn{})
	within(t, p.started, 2*time.Second, "call start")
	st, took := c.delete(sid)
	if st != http.StatusNoContent || took > 500*time.Millisecond {
		t.Errorf("DELETE: %d after %v, want 204 at once", st, took)
	}
	if cause := within(t, p.ended, time.Second, "the call's context after DELETE"); !errors.Is(cause, ErrSessionDeleted) {
		t.Errorf("call cause %v, want ErrSessionDeleted", cause)
	}
	if cause := within(t, p.bg, time.Second, "the session's context after DELETE"); !errors.Is(cause, ErrSessionDeleted) {
		t.Errorf("session cause %v, want ErrSessionDeleted", cause)
	}
	if !eventually(time.Second, func() bool { return countSessions(srv) == 0 }) {
		t.Errorf("session still live after DELETE")
	}
	if st := c.ping(sid); st != http.StatusNotFound {
		t.Errorf("ping after DELETE: %d, want 404", st)
	}
}

// TestShutdownCancelsCalls stays on loopback: over a pipe, which buffers nothing, the open GET stream nobody reads
// would hold the shutdown's last write.
func TestShutdownCancelsCalls(t *testing.T) {
	p := newProbe()
	r := start(t, newProbeServer(p), Config{})
	c := newRawClient(t, r.URL)
	sid := c.initialize()
	c.stream(sid) // an open GET stream must not hold the shutdown up either
	go c.call(context.Background(), sid, "wait", waitIn{})
	within(t, p.started, 2*time.Second, "call start")
	closed := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		r.Close()
		closed <- time.Since(start)
	}()
	if cause := within(t, p.ended, time.Second, "the call's context at shutdown"); !errors.Is(cause, ErrShutdown) {
		t.Errorf("cause %v, want ErrShutdown", cause)
	}
	if took := within(t, closed, 2*time.Second, "Close"); took > time.Second {
		t.Errorf("Close took %v", took)
	}
}

func TestStdioCallEndsWithTheServer(t *testing.T) {
	for _, how := range []string{"shutdown", "stdin closed"} {
		t.Run(how, func(t *testing.T) {
			p := newProbe()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- ServeStdio(ctx, newProbeServer(p), inR, outW, Config{}) }()
			go io.Copy(io.Discard, outR)
			for _, line := range []string{initBody,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{}}}`} {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			within(t, p.started, 2*time.Second, "call start")
			if how == "shutdown" {
				cancel()
			} else {
				inW.Close()
			}
			within(t, p.ended, time.Second, "the call's context")
			within(t, done, 2*time.Second, "ServeStdio to return")
		})
	}
}

// dialRaw opens a plain TCP connection to the server.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reports whether the server closes conn (or answers and closes) within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestSlowHeadersAreCut(t *testing.T) {
	r := start(t, newEchoServer(), Config{ReadHeaderTimeout: 300 * time.Millisecond})
	conn := dialRaw(t, r.Addr)
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
	if !closedWithin(conn, 2*time.Second) {
		t.Error("a client that never finishes its headers kept its connection past the header timeout")
	}
}

func TestSlowBodyIsCut(t *testing.T) {
	r := start(t, newEchoServer(), Config{ReadTimeout: 500 * time.Millisecond})
	conn := dialRaw(t, r.Addr)
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	start := time.Now()
	if !closedWithin(conn, 3*time.Second) {
		t.Error("a client that never finishes its body kept its connection past the read timeout")
	}
	t.Logf("cut after %v", time.Since(start))
}

// TestTimeoutsSpareLongResponses: the read and idle timeouts bound what the client sends, never how long the
// server takes to answer: a tool call and an SSE stream outlive both.
func TestTimeoutsSpareLongResponses(t *testing.T) {
	p := newProbe()
	r := start(t, newProbeServer(p), Config{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond,
		IdleTimeout: 200 * time.Millisecond, WriteStallTimeout: 200 * time.Millisecond})
	c := newRawClient(t, r.URL)
	sid := c.initialize()
	get := c.stream(sid)
	streamEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, get.Body)
		streamEnded <- err
	}()
	st, body, err := c.call(context.Background(), sid, "wait", waitIn{Ms: 1200})
	if err != nil || st != 200 || !strings.Contains(body, "waited") {
		t.Fatalf("a 1.2 s call under 0.2 s timeouts: %d %q %v", st, body, err)
	}
	select {
	case err := <-streamEnded:
		t.Errorf("the GET stream ended after 1.2 s: %v", err)
	default:
	}
}

func TestIdleKeepAliveIsClosed(t *testing.T) {
	r := start(t, newEchoServer(), Config{IdleTimeout: 300 * time.Millisecond})
	conn := dialRaw(t, r.Addr)
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle keep-alive connection: %v, want EOF", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("closed after %v", took)
	}
}

func TestHugeHeaderRefused(t *testing.T) {
	r := start(t, newEchoServer(), Config{MaxHeaderBytes: 16 << 10})
	req, _ := http.NewRequest("GET", "http://"+r.Addr+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("64 KiB header: %d, want 431", resp.StatusCode)
	}
}

// TestSlowClientsCannotFillTheServer: connections that have not got a request under way (slowloris: headers sent a
// byte at a time; idle keep-alives) are what gives way at the connection cap, so /healthz and a new client always
// get in, and a slow client costs one connection.
func TestSlowClientsCannotFillTheServer(t *testing.T) {
	const max = 4
	r := start(t, newEchoServer(), Config{MaxConnections: max})
	var slow []net.Conn
	for range 20 {
		conn := dialRaw(t, r.Addr)
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
		slow = append(slow, conn)
		time.Sleep(2 * time.Millisecond)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + r.Addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind 20 slow clients: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	// A new MCP client gets in too, and works.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("new client behind slow clients: %v", err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatalf("call: %v", err)
	}
	var cut int
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, conn := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if closedWithin(conn, 300*time.Millisecond) {
				mu.Lock()
				cut++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if cut < len(slow)-max {
		t.Errorf("%d of %d slow connections closed; with a cap of %d at least %d must be", cut, len(slow), max, len(slow)-max)
	}
}

// TestBusyConnectionsRefuseNewOnes: when every connection is serving a request, a new one is told so (503) instead
// of waiting unanswered.
func TestBusyConnectionsRefuseNewOnes(t *testing.T) {
	r := start(t, newEchoServer(), Config{MaxConnections: 2})
	c := newRawClient(t, r.URL)
	a, b := c.initialize(), c.initialize()
	c.stream(a)
	c.stream(b)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + r.Addr + "/healthz")
	if err != nil {
		t.Fatalf("new connection while all are busy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "max-connections") {
		t.Errorf("new connection while all are busy: %d %q, want 503 naming -max-connections", resp.StatusCode, body)
	}
}

// TestStalledReaderIsCut: a client that stops reading its response costs its connection until the write stall
// timeout, then the connection is closed. Over an in-memory pipe, which buffers nothing, in a synctest bubble: the
// stall is at once and the timeout in the bubble's time, whatever the machine's load (on loopback, with the
// kernel's buffers to fill first, it took 22 s at load average 40).
func TestStalledReaderIsCut(t *testing.T) { synctest.Test(t, testStalledReaderIsCut) }

func testStalledReaderIsCut(t *testing.T) {
	srv := newEchoServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, echoOut, error) {
		return nil, echoOut{Text: strings.Repeat("x", 8<<20)}, nil
	})
	r, c := startInMemory(t, srv, Config{WriteStallTimeout: 300 * time.Millisecond})
	ln := r.ln
	sid := c.initialize()
	c.http.CloseIdleConnections()
	conn, err := c.http.Transport.(*http.Transport).DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big","arguments":{}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s", sid, len(body), body)
	// Never read: the server's writes of 16 MiB stall, and it must give up on the connection.
	start := time.Now()
	if !eventually(20*time.Second, func() bool { return ln.open() == 0 }) {
		t.Errorf("%d connections still open to a client that stopped reading", ln.open())
	}
	t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
}

func TestLoadServingLimits(t *testing.T) {
	t.Setenv("GOALBOX_T_SESSION_IDLE_TIMEOUT", "5m")
	t.Setenv("GOALBOX_T_MAX_SESSIONS", "9")
	t.Setenv("GOALBOX_T_WRITE_STALL_TIMEOUT", "7s")
	var cfg Config
	if _, err := Load(&cfg, "GOALBOX_T_", []string{"srv", "-workspace", "w", "-max-sessions", "3", "-max-connections", "40", "-read-timeout", "2s"}, nil); err != nil {
		t.Fatal(err)
	}
	if cfg.SessionIdleTimeout != 5*time.Minute || cfg.MaxSessions != 3 || cfg.MaxConnections != 40 || cfg.ReadTimeout != 2*time.Second ||
		cfg.WriteStallTimeout != 7*time.Second || cfg.IdleTimeout != DefaultIdleTimeout || cfg.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Errorf("config %+v", cfg)
	}
	for _, bad := range [][]string{{"-max-sessions", "0"}, {"-max-connections", "-1"}, {"-session-idle-timeout", "0s"}, {"-read-header-timeout", "-1s"}} {
		if _, err := Load(&Config{}, "GOALBOX_NONE_", append([]string{"srv", "-workspace", "w"}, bad...), nil); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestIdleReleasesMemory: after a busy period and idleRelease without a request, the heap's free pages go back to
// the system (HeapReleased grows), once.
func TestIdleReleasesMemory(t *testing.T) { synctest.Test(t, testIdleReleasesMemory) }

// testIdleReleasesMemory waits out idleCheck's ticker (5 s) in the bubble's time.
func testIdleReleasesMemory(t *testing.T) {
	var a activity
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A burst that leaves freed heap behind.
	junk := make([][]byte, 0, 256)
	for range 256 {
		junk = append(junk, make([]byte, 64<<10))
	}
	junk = nil
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	a.last.Store(time.Now().Add(-idleRelease - time.Second).UnixNano())
	go a.releaseWhenIdle(ctx)
	deadline := time.Now().Add(idleCheck + 5*time.Second)
	for !a.released.Load() {
		if time.Now().After(deadline) {
			t.Fatal("an idle server did not release its memory")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// released is set before the release runs: wait until the releasing goroutine is back at its ticker.
	synctest.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.HeapReleased <= before.HeapReleased {
		t.Errorf("HeapReleased %d → %d: nothing was returned", before.HeapReleased, after.HeapReleased)
	}
	_ = junk
}
