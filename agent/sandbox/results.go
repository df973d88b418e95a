package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// The go-sdk client decodes a tool result into its protocol structs: structuredContent into a map of maps, every
// text through its decoder twice (the JSON-RPC message, then the result), and Call then encoded the map again for
// the ToolResult. For a 16 KiB read that was about 1.5 ms of the agent's CPU per call. So the agent's transports take
// the results of its own tools/call requests apart themselves, in one pass: the message that answers the call
// reaches the SDK with a short stand-in result (a text naming a token), and Call takes the result kept under that
// token. Both transports do it with the same rewrite: the HTTP one for remote servers (RoundTrip below, on a JSON
// answer or the SSE event that answers the POST), and the in-memory link to the servers the agent hosts (memory.go,
// on the line that answers a call it wrote). The SDK still does the rest (sessions, initialize, progress
// notifications, cancellation); every other message passes through untouched, and a result of a shape this does
// not know (content other than text, an input request) reaches the SDK as it came.

// takenResult is a tool result as the agent uses it.
type takenResult struct {
	isError    bool
	text       string
	structured json.RawMessage
	made       time.Time
}

// resultTaker is the http.RoundTripper that takes the results apart, and the table Call finds them in (the
// in-memory link uses the table and rewrite, not the RoundTripper).
type resultTaker struct {
	next   http.RoundTripper
	prefix string // "goalbox-agent-result-<random>-": a text from a server cannot be taken for a token

	mu      sync.Mutex
	seq     uint64
	pending map[string]takenResult
}

// takenStale is the age past which a result nobody took (its call was cancelled as it arrived) is dropped.
const takenStale = time.Minute

func newResultTaker(next http.RoundTripper) *resultTaker {
	return &resultTaker{next: next, prefix: "goalbox-agent-result-" + rand.Text() + "-", pending: map[string]takenResult{}}
}

// take returns and forgets the result a stand-in's text names.
func (t *resultTaker) take(token string) (takenResult, bool) {
	if !strings.HasPrefix(token, t.prefix) {
		return takenResult{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.pending[token]
	delete(t.pending, token)
	return r, ok
}

func (t *resultTaker) keep(r takenResult) string {
	r.made = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	tok := t.prefix + strconv.FormatUint(t.seq, 10)
	t.pending[tok] = r
	if t.seq%256 == 0 {
		for k, p := range t.pending {
			if r.made.Sub(p.made) > takenStale {
				delete(t.pending, k)
			}
		}
	}
	return tok
}

func (t *resultTaker) RoundTrip(req *http.Request) (*http.Response, error) {
	id, ok := toolCallID(req)
	resp, err := t.next.RoundTrip(req)
	if err != nil || !ok || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		in := eventReaders.Get().(*bufio.Reader)
		in.Reset(resp.Body)
		resp.Body = &eventRewriter{t: t, id: id, in: in, body: resp.Body}
	case strings.HasPrefix(ct, "application/json"):
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		b, _ = t.rewrite(b, sameID(id))
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}

// toolCallID is the JSON-RPC id of req when it is a POST of one tools/call; the body is put back for sending.
func toolCallID(req *http.Request) (json.RawMessage, bool) {
	if req.Method != http.MethodPost || req.Body == nil || req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	b, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return nil, false
	}
	if call := readOutgoing(b); call.isToolCall() {
		return call.ID, true
	}
	return nil, false
}

// outgoing is what the transports need of a message the SDK sends: whether it is a tools/call and its id, or a
// cancellation and the id it cancels.
type outgoing struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

func (o outgoing) isToolCall() bool { return o.Method == "tools/call" && len(o.ID) > 0 }

// readOutgoing decodes msg as far as outgoing needs; a message that names neither method is not decoded.
func readOutgoing(msg []byte) (o outgoing) {
	if bytes.Contains(msg, []byte(`"tools/call"`)) || bytes.Contains(msg, []byte(`"notifications/cancelled"`)) {
		if segjson.Unmarshal(msg, &o) != nil {
			return outgoing{}
		}
	}
	return o
}

// sameID is the answers test of a message that can answer only the call id.
func sameID(id json.RawMessage) func(json.RawMessage) bool {
	return func(got json.RawMessage) bool { return bytes.Equal(got, id) }
}

// rewrite returns msg, one JSON-RPC message, with a stand-in for its result when it answers a call (answers says
// which ids do) with a tool result of text contents; ok says it did.
func (t *resultTaker) rewrite(msg []byte, answers func(id json.RawMessage) bool) (_ []byte, ok bool) {
	if !bytes.Contains(msg, []byte(`"result"`)) {
		return msg, false
	}
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Content []struct {
				Type string          `json:"type"`
				Text json.RawMessage `json:"text"` // unquoted by unquoteJSON, faster than the decoder
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Meta              json.RawMessage `json:"_meta"`
			ResultType        string          `json:"resultType"`
			InputRequests     json.RawMessage `json:"inputRequests"`
		} `json:"result"`
	}
	if segjson.Unmarshal(msg, &resp) != nil || resp.Result == nil ||
		len(resp.Result.InputRequests) > 0 || (resp.Result.ResultType != "" && resp.Result.ResultType != "complete") {
		return msg, false
	}
	r := resp.Result
	var texts []string
	for _, c := range r.Content {
		text, ok := unquoteJSON(c.Text)
		if c.Type != "text" || !ok {
			return msg, false
		}
		texts = append(texts, text)
	}
	// Asked last, once the result is known to be taken: the in-memory link forgets the call as it says yes.
	if !answers(resp.ID) {
		return msg, false
	}
	taken := takenResult{isError: r.IsError, text: strings.Join(texts, "\n")}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		taken.structured = r.StructuredContent
	}
	tok := t.keep(taken)
	out := make([]byte, 0, 128+len(resp.ID)+len(tok))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, resp.ID...)
	out = append(out, `,"result":{"content":[{"type":"text","text":"`...)
	out = append(out, tok...)
	return append(out, `"}]}}`...), true
}

// eventReaders are the read buffers of the event streams, big enough for a 16 KiB read's event in one piece.
var eventReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// eventRewriter passes an SSE stream through, one event at a time, with the event that answers the call rewritten.
// Events before it (progress notifications) reach the SDK as they arrive.
type eventRewriter struct {
	t    *resultTaker
	id   json.RawMessage
	in   *bufio.Reader
	body io.Closer
	out  []byte // what is read but not yet returned
	err  error
}

func (e *eventRewriter) Read(p []byte) (int, error) {
	for len(e.out) == 0 && e.err == nil {
		e.out, e.err = e.nextEvent()
		if e.err != nil {
			// The stream has ended: the read buffer goes back (Close may run concurrently, so it does not).
			e.in.Reset(nil)
			eventReaders.Put(e.in)
		}
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	if len(e.out) == 0 && e.err != nil {
		return n, e.err
	}
	return n, nil
}

// nextEvent reads one event (lines up to a blank one) and returns it, with a data line that answers the call
// rewritten. The data line is taken apart where it lies in the read buffer: only its stand-in is copied.
func (e *eventRewriter) nextEvent() ([]byte, error) {
	var event []byte
	for {
		line, err := e.in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = e.in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if payload, isData := bytes.CutPrefix(line, []byte("data:")); isData && err == nil {
			payload = bytes.TrimPrefix(bytes.TrimRight(payload, "\r\n"), []byte(" "))
			if rewritten, ok := e.t.rewrite(payload, sameID(e.id)); ok {
				event = append(event, "data: "...)
				event = append(event, rewritten...)
				event = append(event, '\n')
				continue
			}
		}
		event = append(event, line...)
		if err != nil {
			return event, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return event, nil
		}
	}
}

func (e *eventRewriter) Close() error { return e.body.Close() }
