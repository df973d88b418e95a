package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is mcp.StdioTransport, except that an input line that is not a JSON-RPC message, or is longer than
// maxLine, is answered with a JSON-RPC error and dropped. The go-sdk ends the session on such a line, and with it a
// stdio server.
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
			case isMessage(t):
				if _, werr := pw.Write(append(t, '\n')); werr != nil {
					return
				}
			default:
				reply(-32700, "parse error: each line must be one JSON-RPC 2.0 message (or a batch of them)")
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

// isMessage reports whether b looks like a JSON-RPC 2.0 message or a batch of them, enough for the SDK to decode.
func isMessage(b []byte) bool {
	if b[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			if !isMessage(bytes.TrimSpace(m)) {
				return false
			}
		}
		return true
	}
	var one struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		ID      json.RawMessage `json:"id"`
	}
	return json.Unmarshal(b, &one) == nil && one.JSONRPC == "2.0" && (one.Method != "" || len(one.ID) > 0)
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
