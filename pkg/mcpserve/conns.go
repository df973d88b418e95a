package mcpserve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConnections: each live go-sdk client holds two or three connections (its GET stream, a POST per call
// in flight); an idle connection costs the server about 10 KiB (two 4 KiB buffers and a goroutine), so 1024 bound
// them to about 10 MiB and stay under the usual 1024-descriptor soft limit's double that Go raises it to.
const DefaultMaxConnections = 1024

// maxRefusing bounds the goroutines that tell refused connections why (a flood of connections must not pile them up).
const maxRefusing = 64

// connLimiter is a net.Listener that holds at most max connections open. At the cap, a new connection closes the
// connection that has gone longest without sending a byte among those not serving a request (a client trickling
// its headers, an idle keep-alive); when every connection is serving a request, the new one is answered 503 and
// closed. So a slow client costs one connection, for no longer than it takes the next client to arrive, and never
// keeps /healthz or a new client out.
type connLimiter struct {
	net.Listener
	max    int
	logger *slog.Logger

	mu    sync.Mutex
	conns map[*trackedConn]struct{}

	refusing  atomic.Int32
	closeOnce sync.Once
}

func newConnLimiter(ln net.Listener, max int, logger *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, logger: logger, conns: map[*trackedConn]struct{}{}}
}

// trackedConn is a connection the limiter counts. busy says a request on it has its body read and is being served
// (the handler marks it), lastRead when it last sent a byte.
type trackedConn struct {
	net.Conn
	l        *connLimiter
	busy     atomic.Int32
	lastRead atomic.Int64
	closed   atomic.Bool
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lastRead.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	}
	return c.Conn.Close()
}

// Close closes the listener once; later calls (http.Server.Shutdown after Running.shutdown) do nothing.
func (l *connLimiter) Close() error {
	var err error
	l.closeOnce.Do(func() { err = l.Listener.Close() })
	return err
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &trackedConn{Conn: raw, l: l}
		c.lastRead.Store(time.Now().UnixNano())
		l.mu.Lock()
		var victim *trackedConn
		if len(l.conns) >= l.max {
			for o := range l.conns {
				if o.busy.Load() == 0 && (victim == nil || o.lastRead.Load() < victim.lastRead.Load()) {
					victim = o
				}
			}
			if victim == nil {
				l.mu.Unlock()
				l.refuse(raw)
				continue
			}
			delete(l.conns, victim)
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			l.logger.Debug("connection closed to make room (max connections)", "remote", victim.RemoteAddr().String(),
				"quiet_for", time.Since(time.Unix(0, victim.lastRead.Load())).Round(time.Millisecond).String())
			victim.Close()
		}
		return c, nil
	}
}

// refuse answers a connection past the cap with a 503 and closes it, in the background.
func (l *connLimiter) refuse(c net.Conn) {
	l.logger.Warn("connection refused: every connection is serving a request", "max_connections", l.max)
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		// Take the request's head first: a client that gets an answer before it has sent its request takes the
		// connection for broken and says nothing useful.
		head := make([]byte, 0, 4096)
		buf := make([]byte, 1024)
		for len(head) < 16<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
			n, err := c.Read(buf)
			head = append(head, buf[:n]...)
			if err != nil {
				break
			}
		}
		body := fmt.Sprintf(`{"error":"too many connections: all %d are serving requests (-max-connections); retry later"}`+"\n", l.max)
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		// Close our side for writing and take what the client sent, so that the close does not reset the
		// connection before the client has read the answer.
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

// open is the number of connections open.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

type connKey struct{}

// connContext puts the tracked connection in each of its requests' context (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// markBusy makes r's connection count as serving a request once r's body is read (at once when it has none),
// until the returned function is called. A client still sending its body can be closed at the cap; one being
// answered is not.
func markBusy(r *http.Request) (done func()) {
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	if tc == nil {
		return func() {}
	}
	if r.Body == nil || r.Body == http.NoBody {
		tc.busy.Add(1)
		return func() { tc.busy.Add(-1) }
	}
	b := &busyBody{ReadCloser: r.Body, tc: tc}
	r.Body = b
	return func() {
		if b.marked.Load() {
			tc.busy.Add(-1)
		}
	}
}

type busyBody struct {
	io.ReadCloser
	tc     *trackedConn
	marked atomic.Bool
}

func (b *busyBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.marked.CompareAndSwap(false, true) {
		b.tc.busy.Add(1)
	}
	return n, err
}

// stallWriter gives every write to the client WriteStallTimeout to go through: a client that stops reading its
// response loses its connection then, instead of holding it and a goroutine for ever. A response that takes long
// to begin (a long command) is not affected: the deadline is set just before each write.
type stallWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func newStallWriter(w http.ResponseWriter, d time.Duration) *stallWriter {
	sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
	sw.arm()
	return sw
}

func (w *stallWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *stallWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

func (w *stallWriter) Flush() { _ = w.FlushError() }

func (w *stallWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
