package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is mcp.StdioTransport, except that an input line the go-sdk would end the session on is answered
// with a JSON-RPC error and dropped: a line longer than maxLine, one that is not a JSON-RPC message (as the go-sdk
// decodes it), and a batch. The go-sdk ends the session on each of these — a batch under the protocol versions it
// negotiates (2025-06-18 on dropped batching), or with a repeated ID — and with the session a stdio server.
func stdioTransport(in io.Reader, out io.Writer, maxLine int64) mcp.Transport {
	w := &lockedWriter{w: out}
	reply := func(code int, msg string) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
		w.Write(append(b, '\n'))
	}
	pr, pw := io.Pipe()
	go func() {
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
					w.Write(append(b, '\n'))
				}
			case isMessage(t):
				if _, werr := pw.Write(append(t, '\n')); werr != nil {
					return
				}
			default:
				reply(-32700, "parse error: each line must be one JSON-RPC 2.0 message")
			}
			line, tooLong = line[:0], false
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{w}, MaxLineLength: -1}
}

// batchRefusal is the error each call of a batch gets.
const batchRefusal = "JSON-RPC batches are not accepted on stdio (MCP 2025-06-18 dropped them): send one message per line"

// refuseBatch answers a batch line: an array of errors, one per call in it, or one error when it holds no call that
// can be answered by ID; nil for a batch of notifications only, which gets no answer.
func refuseBatch(b []byte) []byte {
	var batch []json.RawMessage
	if json.Unmarshal(b, &batch) != nil {
		return errorLine(jsonrpc.ID{}, -32700, "parse error: each line must be one JSON-RPC 2.0 message")
	}
	var out []json.RawMessage
	notifications := 0
	for _, raw := range batch {
		msg, err := jsonrpc.DecodeMessage(raw)
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case err == nil && ok && req.IsCall():
			out = append(out, errorLine(req.ID, -32600, batchRefusal))
		case err == nil && ok:
			notifications++
		}
	}
	switch {
	case len(out) > 0:
		b, _ := json.Marshal(out)
		return b
	case len(batch) > 0 && notifications == len(batch):
		return nil
	}
	return errorLine(jsonrpc.ID{}, -32600, batchRefusal)
}

func errorLine(id jsonrpc.ID, code int64, msg string) []byte {
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	}
	return b
}

// isMessage reports whether b is one JSON-RPC 2.0 message the go-sdk decodes.
func isMessage(b []byte) bool {
	if !json.Valid(b) {
		return false // e.g. a message with more after it: the go-sdk's stream decoder would fail on the rest
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return false
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		return m.Method != ""
	case *jsonrpc.Response:
		return m.ID.IsValid()
	}
	return false
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

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
