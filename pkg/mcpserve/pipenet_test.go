package mcpserve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session tests are about timers (keep-active, unused expiry). They run in a testing/synctest bubble, where time
// is fake and jumps ahead once every goroutine is blocked: a test waits 1.2 s of the server's time in no time. A
// goroutine blocked on a real socket never counts as blocked (data may come from outside the bubble), so in the
// bubble the server and its client talk over a network of in-memory pipes instead of loopback.

// pipeListener is a net.Listener whose connections are net.Pipes made by dial.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr is a loopback address, so the endpoint's URL passes the server's Host check as a real one does.
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7} }

// dial is the client's DialContext: a new pipe, whose other end the server accepts.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("the in-memory server is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startInMemory is start on a listener of pipes, with a raw client that dials it; call it inside synctest.Test.
func startInMemory(t *testing.T, srv *mcp.Server, cfg Config) (*Running, *rawClient) {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = NoToken // as start: these tests are about what lies behind the token check
	}
	ln := newPipeListener()
	r := startOn(ln, srv, cfg.withDefaults(), asHealthObject(NoHealth), slog.New(slog.DiscardHandler))
	t.Cleanup(func() { r.Close() })
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DialContext: ln.dial}
	t.Cleanup(tr.CloseIdleConnections)
	return r, &rawClient{t: t, url: r.URL, http: &http.Client{Transport: tr}}
}
