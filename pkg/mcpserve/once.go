package mcpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool results are encoded once. The go-sdk marshals a handler's result with encoding/json, which re-scans and
// compacts the output of every MarshalJSON it meets: a text content inside the result, the result inside the
// JSON-RPC response, the response again when the transport encodes the message. For a 16 KiB read (about 40 KB of
// JSON) those passes were half the server's CPU. So the transports here hand the SDK, in place of a large tool
// result, a stand-in that marshals to a short token, and put the result's own JSON, encoded once (encodeToolResult),
// in the token's place as the message is written: the stdio connection in Write, the HTTP transport in the
// response writer of the POST that carried the call. The SDK still does everything else (sessions, initialize,
// cancellation, progress, the streamable HTTP transport); only the bytes of the result skip its encoder.

// onceTokenPrefix starts every token: "goalbox-once-" and a random text made at start, so that nothing a client
// sends or a tool returns can be taken for one; a token is also only looked for where a response's result ends.
var onceTokenPrefix = []byte(`"goalbox-once-` + rand.Text() + `-`)

// onceTable holds results encoded and not yet written, by token number.
type onceTable struct {
	mu      sync.Mutex
	next    uint64
	pending map[uint64]onceEntry
}

type onceEntry struct {
	json *bytes.Buffer // from encodeBufs, to which splice returns it
	made time.Time
}

// onceStale is the age past which an encoded result is taken as one whose response will never be written (its
// POST's client went away between the marshal and the write) and dropped. A result is written just after it is
// marshaled; the wait is for a lock at most, behind a write the stall timeout bounds.
const onceStale = 2 * time.Minute

// onceSweepAbove is how many pending results make put look for stale ones: calls in flight rarely reach it.
const onceSweepAbove = 64

var encodedOnce = &onceTable{pending: map[uint64]onceEntry{}}

// encodeOnceOff (GOALBOX_ENCODE_ONCE=0 in the server's environment) leaves every result to the SDK's encoder, with
// everything else as it is: the benchmark's way to measure what encoding once earns (docs/BENCHMARKS.md), side by
// side with the same binary.
var encodeOnceOff = os.Getenv("GOALBOX_ENCODE_ONCE") == "0"

// put keeps json and returns the token that stands for it, as JSON (a quoted string).
func (t *onceTable) put(json *bytes.Buffer) []byte {
	now := time.Now()
	t.mu.Lock()
	t.next++
	n := t.next
	t.pending[n] = onceEntry{json: json, made: now}
	if len(t.pending) > onceSweepAbove {
		for k, e := range t.pending {
			if now.Sub(e.made) > onceStale {
				delete(t.pending, k)
			}
		}
	}
	t.mu.Unlock()
	tok := append(bytes.Clone(onceTokenPrefix), strconv.FormatUint(n, 10)...)
	return append(tok, '"')
}

// take removes and returns the result token number n stands for.
func (t *onceTable) take(n uint64) (*bytes.Buffer, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.pending[n]
	delete(t.pending, n)
	return e.json, ok
}

// spliceTo writes msg, an encoded JSON-RPC message, to dst with the result it ends with in place of its token,
// when it ends with one: `..."result":"goalbox-once-…-7"}` and any trailing newlines (an SSE event ends "\n\n").
// The result is the last member of a response as the go-sdk encodes it. Any other message is written as it is.
func (t *onceTable) spliceTo(dst *bytes.Buffer, msg []byte) {
	end := len(bytes.TrimRight(msg, "\n"))
	body := msg[:end]
	if !bytes.HasSuffix(body, []byte(`"}`)) {
		dst.Write(msg)
		return
	}
	body = body[:len(body)-2]
	digits := len(body) - len(bytes.TrimRight(body, "0123456789"))
	start := len(body) - digits - len(onceTokenPrefix)
	if digits == 0 || start < 0 || !bytes.Equal(body[start:len(body)-digits], onceTokenPrefix) ||
		!bytes.HasSuffix(body[:start], []byte(`"result":`)) {
		dst.Write(msg)
		return
	}
	n, err := strconv.ParseUint(string(body[len(body)-digits:]), 10, 64)
	if err != nil {
		dst.Write(msg)
		return
	}
	result, ok := t.take(n)
	if !ok {
		dst.Write(msg)
		return
	}
	dst.Grow(start + result.Len() + len(msg) - end + 1)
	dst.Write(body[:start])
	dst.Write(result.Bytes())
	dst.Write(msg[end-1:])
	encodeBufs.Put(result)
}

// onceResult stands in for a tool result in the SDK: it marshals to a token. It is made only for calls whose
// response is written through splice, and it is a *mcp.CallToolResult to every reader but the encoder.
type onceResult struct {
	*mcp.CallToolResult
}

// MarshalJSON is called by the SDK where it would encode the result, after everything it sets on a result (the
// result type, server info in _meta) is set. A result of a shape the lean encoder does not know is encoded by the
// SDK's own MarshalJSON, as before.
func (r onceResult) MarshalJSON() ([]byte, error) {
	b, ok := encodeToolResult(r.CallToolResult)
	if !ok {
		return r.CallToolResult.MarshalJSON()
	}
	return encodedOnce.put(b), nil
}

// encodeOnce is the middleware that puts onceResult in place of the successful tool results of the calls ours says
// are written through splice. Tool errors are left alone: they are short, and a middleware added later still sees
// them as they are.
func encodeOnce(ours func(context.Context, mcp.Request) bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if encodeOnceOff {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r != nil && !r.IsError && method == "tools/call" && ours(ctx, req) {
				return onceResult{r}, nil
			}
			return res, err
		}
	}
}

// splicingWriter is the response writer of a POST: the SDK writes each message of the POST's stream with one Write
// (an SSE event, or the JSON body), and a tool result encoded once takes its token's place there.
type splicingWriter struct {
	http.ResponseWriter
}

func (w splicingWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, onceTokenPrefix) {
		return w.ResponseWriter.Write(p)
	}
	buf := encodeBufs.Get().(*bytes.Buffer)
	defer encodeBufs.Put(buf)
	buf.Reset()
	encodedOnce.spliceTo(buf, p)
	if _, err := w.ResponseWriter.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w splicingWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w splicingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
