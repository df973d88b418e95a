package mcpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// holdServer has "hold", which leaves work running for the session as a background process does (HoldSession)
// and reports when the session's context ends, and "echo".
func holdServer(ended chan<- error) *mcp.Server {
	srv := newEchoServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
		release := HoldSession(ctx)
		sctx := SessionContext(ctx)
		go func() {
			<-sctx.Done()
			release()
			ended <- context.Cause(sctx)
		}()
		return nil, echoOut{Text: "holding"}, nil
	})
	return srv
}

// flood opens n sessions at once from c and returns how many were made and the refusals' statuses and bodies.
func flood(c *rawClient, n int) (made int, refused map[int]string) {
	var mu sync.Mutex
	refused = map[int]string{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := c.do(context.Background(), "POST", "", initBody)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == 200 {
				made++
			} else {
				refused[resp.StatusCode] = string(body)
			}
		})
	}
	wg.Wait()
	return made, refused
}

// TestSessionFloodSparesSessionsInUse: opening many sessions at once while another client's
// session runs a background process and has been idle past the keep-active time must not close that session (nor
// so kill its process); past the cap the flood is refused with 503 and a message that says why (positive control:
// the cap does refuse the flood). Then, once the flood's sessions are idle past the keep-active time, a new session
// closes one of them, still not the holder (TestSessionRecentlyActiveIsNotEvicted's control shows an idle session
// holding nothing is closed).
func TestSessionFloodSparesSessionsInUse(t *testing.T) {
	synctest.Test(t, testSessionFloodSparesSessionsInUse)
}

func testSessionFloodSparesSessionsInUse(t *testing.T) {
	ended := make(chan error, 64)
	const keep = 300 * time.Millisecond
	_, c := startInMemory(t, holdServer(ended), Config{MaxSessions: 8, MaxSessionsPerClient: 8, SessionKeepActive: keep})
	victim := c.initialize()
	if st, body, err := c.call(context.Background(), victim, "hold", map[string]any{"text": "x"}); err != nil || st != 200 || !strings.Contains(body, "holding") {
		t.Fatalf("hold: %d %s %v", st, body, err)
	}
	time.Sleep(2 * keep) // idle, as an agent's session waiting on its model, past the keep-active time

	made, refused := flood(c, 64)
	if made != 7 {
		t.Errorf("the flood made %d sessions, want the 7 free places", made)
	}
	if body := refused[http.StatusServiceUnavailable]; !strings.Contains(body, "-max-sessions") || !strings.Contains(body, "never closed to make room") {
		t.Errorf("past the cap the flood got %v; want 503 saying why no session was closed", refused)
	}
	select {
	case err := <-ended:
		t.Fatalf("the flood ended the session running a process: %v", err)
	default:
	}
	if st := c.ping(victim); st != 200 {
		t.Errorf("the session running a process after the flood: ping %d, want 200", st)
	}

	// Control: the flood's own sessions are now idle past the keep-active time and hold nothing: a new session
	// closes one of them, never the holder.
	time.Sleep(2 * keep)
	if made, refused := flood(c, 1); made != 1 {
		t.Errorf("a new session once the flood's are idle: refused %v", refused)
	}
	select {
	case err := <-ended:
		t.Errorf("the holder was closed instead of an idle flood session: %v", err)
	default:
	}
}

// TestSessionRecentlyActiveIsNotEvicted: a session with a request within the keep-active time is not closed to make
// room, even holding nothing; once past it, it is (the control).
func TestSessionRecentlyActiveIsNotEvicted(t *testing.T) {
	synctest.Test(t, testSessionRecentlyActiveIsNotEvicted)
}

func testSessionRecentlyActiveIsNotEvicted(t *testing.T) {
	_, c := startInMemory(t, newEchoServer(), Config{MaxSessions: 1, MaxSessionsPerClient: 1, SessionKeepActive: time.Second})
	a := c.initialize()
	resp, err := c.do(context.Background(), "POST", "", initBody)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "-session-keep-active") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a new session while the only one was just used: %d %s; want 503 naming -session-keep-active", resp.StatusCode, body)
	}
	if c.ping(a) != 200 {
		t.Fatal("the recently used session was closed")
	}
	time.Sleep(1100 * time.Millisecond)
	b := c.initialize() // control: now idle past the keep-active time, a is closed for b
	if c.ping(a) != http.StatusNotFound || c.ping(b) != 200 {
		t.Error("an idle session past the keep-active time was not closed to make room")
	}
}

// TestSessionCapPerClient: one client address holding its cap of sessions in use gets 429 for another, with a
// message naming -max-sessions-per-client, while a client from another address still gets one (positive control).
func TestSessionCapPerClient(t *testing.T) {
	r := start(t, newEchoServer(), Config{MaxSessions: 8, MaxSessionsPerClient: 3})
	// The flood comes from 127.0.0.2 (all of 127/8 is loopback on Linux), the other client from 127.0.0.1.
	other := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	t.Cleanup(other.CloseIdleConnections)
	fl := newRawClient(t, r.URL)
	fl.http = &http.Client{Transport: other}
	made, refused := flood(fl, 10)
	if made != 3 {
		t.Fatalf("one client address made %d sessions, want its cap of 3 (refused %v)", made, refused)
	}
	if body := refused[http.StatusTooManyRequests]; !strings.Contains(body, "-max-sessions-per-client") || !strings.Contains(body, "127.0.0.2") {
		t.Errorf("past its cap the client got %v; want 429 naming -max-sessions-per-client and its address", refused)
	}
	c := newRawClient(t, r.URL)
	if sid := c.initialize(); c.ping(sid) != 200 {
		t.Error("another client address was refused a session")
	}
}

// TestUnusedSessionExpiresSoon: a session that runs nothing is closed after -session-unused-timeout, long before the
// idle timeout, so a client that went away without a DELETE (the TypeScript SDK 1.x, LangChain) frees it in
// minutes. Controls: a session holding a background process stays, and so does one that keeps making requests.
func TestUnusedSessionExpiresSoon(t *testing.T) { synctest.Test(t, testUnusedSessionExpiresSoon) }

func testUnusedSessionExpiresSoon(t *testing.T) {
	ended := make(chan error, 4)
	_, c := startInMemory(t, holdServer(ended), Config{SessionIdleTimeout: time.Hour, SessionUnusedTimeout: 300 * time.Millisecond})
	unused, holding, busy := c.initialize(), c.initialize(), c.initialize()
	if st, body, err := c.call(context.Background(), holding, "hold", map[string]any{"text": "x"}); err != nil || st != 200 || !strings.Contains(body, "holding") {
		t.Fatalf("hold: %d %s %v", st, body, err)
	}
	for range 12 {
		time.Sleep(100 * time.Millisecond)
		if st := c.ping(busy); st != 200 {
			t.Fatalf("a session in use was closed: ping %d", st)
		}
	}
	if st := c.ping(unused); st != http.StatusNotFound {
		t.Errorf("a session that ran nothing, 1.2 s after its last request: ping %d, want 404", st)
	}
	if st := c.ping(holding); st != 200 {
		t.Errorf("a session holding a process: ping %d, want 200", st)
	}
}
