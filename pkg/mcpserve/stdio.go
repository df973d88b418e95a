package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// runStdio is srv.Run on a stdio transport, with the tool results of its one session encoded once.
func runStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out io.Writer, maxLine int64) error {
	// The session's requests are known by a mark on the context they are handled in, which the SDK derives from the
	// one given to Connect. A session kept after Connect returns would not do: the SDK reads and handles messages
	// before Connect returns, and a call handled then left its result to the SDK's encoder.
	mark := new(stdioMark)
	srv.AddReceivingMiddleware(encodeOnce(func(ctx context.Context, _ mcp.Request) bool {
		return ctx.Value(stdioMarkKey{}) == mark
	}))
	ss, err := srv.Connect(context.WithValue(ctx, stdioMarkKey{}, mark), stdioTransport{in: in, out: out, maxLine: maxLine}, nil)
	if err != nil {
		return err
	}
	if stdioConnected != nil {
		stdioConnected()
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		return ctx.Err()
	case err := <-ended:
		return err
	}
}

// stdioConnected, when set (by a test), runs as soon as Connect returns: the moment from which the SDK may already
// be handling the session's first messages.
var stdioConnected func()

// stdioMarkKey is the context key under which runStdio marks the requests of its session.
type stdioMarkKey struct{}

// stdioMark is one runStdio's mark: a pointer, so that each run's differs.
type stdioMark struct{ _ byte }

// stdioTransport serves one client on in and out, newline-delimited, as mcp.StdioTransport does, except that an
// input line the go-sdk would end the session on is answered with a JSON-RPC error and dropped: a line longer than
// maxLine, one that is not a JSON-RPC message (as the go-sdk decodes it), and a batch. The go-sdk ends the session
// on each of these — a batch under the protocol versions it negotiates (2025-06-18 on dropped batching), or with a
// repeated ID — and with the session a stdio server. Each line is decoded once, here, and handed to the SDK as a
// message (no pipe to the SDK's own decoder); each message is written with its tool result encoded once (once.go).
type stdioTransport struct {
	in      io.Reader
	out     io.Writer
	maxLine int64
}

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{out: &lockedWriter{w: t.out}, incoming: make(chan stdioRead), closed: make(chan struct{}),
		ids: newIDStandIns(), pending: map[string]pendingID{}}
	go c.readLines(t.in, t.maxLine)
	return c, nil
}

// stdioConn is the mcp.Connection of a stdio session.
type stdioConn struct {
	out       *lockedWriter
	incoming  chan stdioRead
	closed    chan struct{}
	closeOnce sync.Once

	// ids gives an id the go-sdk would not keep exact a stand-in (ids.go); pending holds the stand-ins whose reply
	// is not yet written, by quoted stand-in.
	ids       *idStandIns
	pendingMu sync.Mutex
	pending   map[string]pendingID
}

type pendingID struct {
	raw     json.RawMessage
	release func()
}

// stdioRead is a message read, or the error that ended the input.
type stdioRead struct {
	msg jsonrpc.Message
	err error
}

// readLines reads the input a line at a time, answers the lines the SDK must not see, and hands on the messages,
// until the input ends or the connection is closed.
func (c *stdioConn) readLines(in io.Reader, maxLine int64) {
	reply := func(code int, msg string) { c.out.Write(append(errorLine(code, msg), '\n')) }
	hand := func(r stdioRead) bool {
		select {
		case c.incoming <- r:
			return true
		case <-c.closed:
			return false
		}
	}
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if int64(len(line)) > maxLine {
				tooLong, line = true, line[:0]
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		switch t := bytes.TrimSpace(line); {
		case tooLong:
			reply(-32600, fmt.Sprintf("message longer than %d bytes: refused", maxLine))
		case len(t) == 0:
		case t[0] == '[':
			if b := refuseBatch(t); b != nil {
				c.out.Write(append(b, '\n'))
			}
		default:
			if rw, _ := c.ids.prepare(t, "stdio", ""); rw.restore != nil {
				t = rw.body
				c.pendingMu.Lock()
				for q, raw := range rw.restore {
					c.pending[q] = pendingID{raw: raw, release: rw.release}
				}
				c.pendingMu.Unlock()
			}
			msg := decodeMessage(t)
			if msg == nil {
				reply(-32700, "parse error: each line must be one JSON-RPC 2.0 message")
				break
			}
			if !hand(stdioRead{msg: msg}) {
				return
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			hand(stdioRead{err: err})
			return
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write writes msg as one line, with a tool result the SDK was handed as a token in its place.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	data = c.restoreIDs(data)
	buf := encodeBufs.Get().(*bytes.Buffer)
	defer encodeBufs.Put(buf)
	buf.Reset()
	encodedOnce.spliceTo(buf, data)
	buf.WriteByte('\n')
	_, err = c.out.Write(buf.Bytes())
	return err
}

// restoreIDs puts back the id a client sent in place of its stand-in, in the reply that carries it.
func (c *stdioConn) restoreIDs(data []byte) []byte {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	for q, p := range c.pending {
		if bytes.Contains(data, []byte(`"id":`+q)) {
			data = restoreIDs(data, map[string]json.RawMessage{q: p.raw})
			p.release()
			delete(c.pending, q)
		}
	}
	return data
}

// Close stops handing on input; the reader ends at its next line or at the end of the input. The output belongs to
// the caller of ServeStdio, which closes it.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// batchRefusal is the error each call of a batch gets.
const batchRefusal = "JSON-RPC batches are not accepted on stdio (MCP 2025-06-18 dropped them): send one message per line"

// refuseBatch answers a batch line: an array of errors, one per call in it, or one error when it holds no call that
// can be answered by ID; nil for a batch of notifications only, which gets no answer.
func refuseBatch(b []byte) []byte {
	var batch []json.RawMessage
	if json.Unmarshal(b, &batch) != nil {
		return errorLine(-32700, "parse error: each line must be one JSON-RPC 2.0 message")
	}
	// Each call's error carries its id as the client sent it (not as the go-sdk would decode it: ids.go).
	envs := make([]rpcEnvelope, len(batch))
	calls, notifications := 0, 0
	for i, raw := range batch {
		if decodeEnvelope(raw, &envs[i]) != nil || envs[i].Method == nil {
			envs[i] = rpcEnvelope{}
			continue
		}
		if len(envs[i].ID) > 0 && string(envs[i].ID) != "null" {
			calls++
		} else {
			notifications++
		}
	}
	if calls == 0 && len(batch) > 0 && notifications == len(batch) {
		return nil
	}
	return bytes.TrimRight(refuseBatchCalls(envs, batchRefusal).body, "\n")
}

// errorLine is a JSON-RPC error for a line whose id cannot be known: "id" is null, as JSON-RPC 2.0 requires.
func errorLine(code int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	return b
}

// decodeMessage decodes b as one JSON-RPC 2.0 message the go-sdk accepts, or returns nil.
func decodeMessage(b []byte) jsonrpc.Message {
	// segmentio's Valid, as the go-sdk decodes with segmentio: a few times faster than encoding/json's on a 4 KiB
	// write, and the same judge as the decoder.
	if !segjson.Valid(b) {
		return nil // e.g. a message with more after it: the go-sdk's stream decoder would fail on the rest
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return nil
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method != "" {
			return m
		}
	case *jsonrpc.Response:
		if m.ID.IsValid() {
			return m
		}
	}
	return nil
}

// lockedWriter makes each Write whole, so the SDK's replies and the filter's errors never interleave (the SDK
// writes each message with one Write).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
