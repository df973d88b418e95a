package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// The agent reaches the servers it hosts over in-memory links: a net.Pipe per server, as the go-sdk's
// NewInMemoryTransports makes them, with newline-delimited JSON-RPC both ways. The server's end is served by
// mcpserve.ServeStdio (local.go), so the servers answer as over a real stdio (their result splice, the ids they keep
// exact, their line cap); the client's end is the go-sdk's IOTransport over memoryLink, which takes the results of
// the agent's own tool calls apart as the HTTP transport does (results.go). No port and no token: nothing outside
// this process can reach a pipe.

// memoryLink is the client's end of one in-memory link: writes go to the server as the SDK makes them, noting the
// id of each tools/call; reads come back a line at a time, with the line that answers a noted call rewritten.
type memoryLink struct {
	conn    net.Conn
	results *resultTaker
	in      *bufio.Reader
	out     []byte // what is read but not yet returned
	err     error

	mu    sync.Mutex
	calls map[string]bool // ids of the tools/call requests not yet answered, as JSON
}

func newMemoryLink(conn net.Conn, results *resultTaker) *memoryLink {
	return &memoryLink{conn: conn, results: results, in: bufio.NewReaderSize(conn, 64<<10), calls: map[string]bool{}}
}

// transport is the go-sdk transport over the link.
func (m *memoryLink) transport() mcp.Transport {
	// No line cap on the client's side: the server is this process's own, and its results are capped where they are
	// made (the file tools' read caps, the executor's output cap); the HTTP client has no cap either.
	return &mcp.IOTransport{Reader: memoryReader{m}, Writer: memoryWriter{m}, MaxLineLength: -1}
}

// memoryWriter and memoryReader are the link's two halves for IOTransport, which closes each once.
type memoryWriter struct{ m *memoryLink }
type memoryReader struct{ m *memoryLink }

// Write notes a tools/call's id before the server can answer it, and forgets the id a cancellation names (the
// server need not answer a cancelled call). The SDK writes each message with one Write.
func (w memoryWriter) Write(p []byte) (int, error) {
	switch o := readOutgoing(p); {
	case o.isToolCall():
		w.m.setCall(o.ID, true)
	case o.Method == "notifications/cancelled" && len(o.Params.RequestID) > 0:
		w.m.setCall(o.Params.RequestID, false)
	}
	return w.m.conn.Write(p)
}

func (w memoryWriter) Close() error { return w.m.conn.Close() }

func (r memoryReader) Read(p []byte) (int, error) {
	m := r.m
	for len(m.out) == 0 && m.err == nil {
		m.out, m.err = m.nextLine()
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	if len(m.out) == 0 && m.err != nil {
		return n, m.err
	}
	return n, nil
}

func (r memoryReader) Close() error { return r.m.conn.Close() }

// setCall notes (pending) or forgets the call id.
func (m *memoryLink) setCall(id json.RawMessage, pending bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pending {
		m.calls[string(id)] = true
	} else {
		delete(m.calls, string(id))
	}
}

// answers says whether id is a noted call's, and forgets it: a call has one answer.
func (m *memoryLink) answers(id json.RawMessage) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pending := m.calls[string(id)]
	delete(m.calls, string(id))
	return pending
}

func (m *memoryLink) waiting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls) > 0
}

// nextLine reads one message and returns it, rewritten when it answers a noted call with a result the taker takes
// apart. A line is taken apart where it lies in the read buffer: only its stand-in is copied.
func (m *memoryLink) nextLine() ([]byte, error) {
	line, err := m.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: gather it whole.
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			line, err = m.in.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil || !m.waiting() {
		return line, err
	}
	msg := bytes.TrimRight(line, "\r\n")
	if rewritten, ok := m.results.rewrite(msg, m.answers); ok {
		return append(rewritten, '\n'), nil
	}
	// Any other answer to a noted call (an error, an image read's result) ends the call too.
	var answer struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if segjson.Unmarshal(msg, &answer) == nil && answer.Method == "" && len(answer.ID) > 0 {
		m.setCall(answer.ID, false)
	}
	return line, nil
}
