package mcpserve

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	segjson "github.com/segmentio/encoding/json"
)

// JSON-RPC ids are kept exact. The go-sdk decodes an id as a float64 and turns it into an int64: an id above 2^53
// loses its last digits (two such ids in one batch collapse into one, which gets the only reply), and 1.5, 1e3 or
// -0 come back as other numbers. Before the SDK sees a message, an id it would not give back byte for byte is
// replaced by a string that stands for it (idStandIns), and the reply's id is put back as the client sent it
// (raw JSON) when the reply is written. Strings, and integers the SDK keeps (|n| <= 2^53), go through untouched:
// ordinary traffic is not rewritten.
//
// The same layer refuses, with a JSON-RPC error per call naming its exact id, what the SDK would mishandle: two
// calls with one id in a batch (the SDK keeps one of them), and batches under protocol versions that removed them
// (2025-06-18 and later; the SDK itself only refuses them when the request's version header says so, not for a
// session that negotiated such a version and a client that leaves the header out).

// batchesRemovedIn is the first protocol version without JSON-RPC batching.
const batchesRemovedIn = "2025-06-18"

// maxExactInt is the largest integer a float64 holds exactly (2^53): the go-sdk gives back ids up to it as sent.
const maxExactInt = 1 << 53

// sdkKeepsID reports whether the go-sdk gives the id raw back byte for byte: a string (decoded and re-encoded,
// the same string), null, or an integer in canonical form within ±2^53.
func sdkKeepsID(raw []byte) bool {
	if len(raw) == 0 || raw[0] == '"' || string(raw) == "null" {
		return true
	}
	s := string(raw)
	if s == "-0" || (len(s) > 1 && s[0] == '0') || (len(s) > 2 && s[0] == '-' && s[1] == '0') {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= -maxExactInt && n <= maxExactInt
}

// idStandIns holds the stand-ins of the ids in flight, per serving.
type idStandIns struct {
	prefix string // `goalbox-id-<random>-`: nothing a client sends can be taken for one
	seq    atomic.Uint64
	mu     sync.Mutex
	// bySession maps a session's raw id in flight to its stand-in, so that a notifications/cancelled naming the
	// raw id reaches the call, and a second call with the same raw id meets the SDK's own refusal of an id in
	// flight.
	bySession map[string]*standIn
}

type standIn struct {
	token string // without quotes
	raw   json.RawMessage
	refs  int
}

func newIDStandIns() *idStandIns {
	return &idStandIns{prefix: "goalbox-id-" + rand.Text()[:12] + "-", bySession: map[string]*standIn{}}
}

// rpcEnvelope is what this layer reads of a JSON-RPC message. Params is read only for the methods whose params
// it needs (decodeEnvelope): a write's 10 MiB of content is skipped, not copied.
type rpcEnvelope struct {
	ID     segjson.RawMessage `json:"id"`
	Method *string            `json:"method"`
	Params segjson.RawMessage `json:"-"`
}

// decodeEnvelope reads b's id and method, and its params for initialize and notifications/cancelled.
func decodeEnvelope(b []byte, e *rpcEnvelope) error {
	if err := segjson.Unmarshal(b, e); err != nil {
		return err
	}
	if e.Method != nil && (*e.Method == "initialize" || *e.Method == "notifications/cancelled") {
		var p struct {
			Params segjson.RawMessage `json:"params"`
		}
		if err := segjson.Unmarshal(b, &p); err != nil {
			return err
		}
		e.Params = p.Params
	}
	return nil
}

// idRewrite is what prepare did to one POST's body: the body to hand the SDK, and the stand-ins to put back in
// what is written to the client (nil when none).
type idRewrite struct {
	body    []byte
	restore map[string]json.RawMessage // quoted stand-in → raw id
	release func()
}

// rpcRefusal is a body refused before the SDK sees it.
type rpcRefusal struct {
	status int
	body   []byte
}

// prepare reads a POST's body for ids and batches. version is the request's protocol version as far as it is known
// (header, else the session's); sid its session ("" for none).
func (m *idStandIns) prepare(body []byte, sid, version string) (idRewrite, *rpcRefusal) {
	out := idRewrite{body: body, release: func() {}}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, nil
	}
	if trimmed[0] != '[' {
		var env rpcEnvelope
		if decodeEnvelope(trimmed, &env) != nil {
			return out, nil // not JSON-RPC: the SDK says what is wrong
		}
		msgs := []json.RawMessage{trimmed}
		envs := []rpcEnvelope{env}
		if !m.needsRewrite(envs, sid) {
			return out, nil
		}
		return m.rewrite(msgs, envs, sid, false), nil
	}
	var raws []json.RawMessage
	if segjson.Unmarshal(trimmed, &raws) != nil || len(raws) == 0 {
		return out, nil
	}
	envs := make([]rpcEnvelope, len(raws))
	for i, r := range raws {
		_ = decodeEnvelope(r, &envs[i])
		if envs[i].Method != nil && *envs[i].Method == "initialize" && version == "" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = segjson.Unmarshal(envs[i].Params, &p)
			version = p.ProtocolVersion
		}
	}
	if version >= batchesRemovedIn {
		return out, refuseBatchCalls(envs, fmt.Sprintf("JSON-RPC batches were removed in MCP %s and this request speaks %s: send one message per request",
			batchesRemovedIn, version))
	}
	seen := map[string]bool{}
	for _, e := range envs {
		if e.Method == nil || len(e.ID) == 0 || string(e.ID) == "null" {
			continue
		}
		k := idKey(e.ID)
		if seen[k] {
			return out, refuseBatchCalls(envs, fmt.Sprintf("two calls of this batch have the id %s: each call needs an id of its own (none of the batch was run)", e.ID))
		}
		seen[k] = true
	}
	if !m.needsRewrite(envs, sid) {
		return out, nil
	}
	return m.rewrite(raws, envs, sid, true), nil
}

// idKey is an id as the SDK tells ids apart: a string by its value, a number by its text.
func idKey(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(raw)
}

// cancelTarget is the id a notifications/cancelled names, if the message is one.
func cancelTarget(e rpcEnvelope) json.RawMessage {
	if e.Method == nil || *e.Method != "notifications/cancelled" {
		return nil
	}
	var p struct {
		RequestID segjson.RawMessage `json:"requestId"`
	}
	if segjson.Unmarshal(e.Params, &p) != nil {
		return nil
	}
	return json.RawMessage(p.RequestID)
}

func (m *idStandIns) needsRewrite(envs []rpcEnvelope, sid string) bool {
	for _, e := range envs {
		if !sdkKeepsID(e.ID) {
			return true
		}
		if t := cancelTarget(e); t != nil && !sdkKeepsID(t) && sid != "" {
			return true
		}
	}
	return false
}

// rewrite gives each id the SDK would not keep a stand-in, and points a cancellation of such an id at its stand-in.
func (m *idStandIns) rewrite(raws []json.RawMessage, envs []rpcEnvelope, sid string, batch bool) idRewrite {
	out := idRewrite{restore: map[string]json.RawMessage{}}
	var held []string
	msgs := make([]json.RawMessage, len(raws))
	for i, e := range envs {
		msgs[i] = raws[i]
		var obj map[string]json.RawMessage
		if json.Unmarshal(raws[i], &obj) != nil {
			continue
		}
		changed := false
		if !sdkKeepsID(e.ID) {
			key := sid + "\x00" + string(e.ID)
			m.mu.Lock()
			si := m.bySession[key]
			if si == nil || sid == "" {
				si = &standIn{token: m.prefix + strconv.FormatUint(m.seq.Add(1), 36), raw: append(json.RawMessage(nil), e.ID...)}
				if sid != "" {
					m.bySession[key] = si
				}
			}
			si.refs++
			m.mu.Unlock()
			if sid != "" {
				held = append(held, key)
			}
			q, _ := json.Marshal(si.token)
			obj["id"] = q
			out.restore[string(q)] = si.raw
			changed = true
		}
		if t := cancelTarget(e); t != nil && !sdkKeepsID(t) && sid != "" {
			m.mu.Lock()
			si := m.bySession[sid+"\x00"+string(t)]
			m.mu.Unlock()
			if si != nil {
				var params map[string]json.RawMessage
				if json.Unmarshal(obj["params"], &params) == nil {
					params["requestId"], _ = json.Marshal(si.token)
					obj["params"], _ = json.Marshal(params)
					changed = true
				}
			}
		}
		if changed {
			msgs[i], _ = json.Marshal(obj)
		}
	}
	if batch {
		out.body, _ = json.Marshal(msgs)
	} else {
		out.body = msgs[0]
	}
	out.release = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, k := range held {
			if si := m.bySession[k]; si != nil {
				if si.refs--; si.refs <= 0 {
					delete(m.bySession, k)
				}
			}
		}
	}
	return out
}

// refuseBatchCalls is a 400 whose body is a JSON-RPC error for each call of the batch, with its id as sent, or a
// single error when the batch holds no call.
func refuseBatchCalls(envs []rpcEnvelope, msg string) *rpcRefusal {
	var buf bytes.Buffer
	errObj, _ := json.Marshal(map[string]any{"code": -32600, "message": msg})
	n := 0
	buf.WriteByte('[')
	for _, e := range envs {
		if e.Method == nil || len(e.ID) == 0 || string(e.ID) == "null" {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":%s,"error":%s}`, e.ID, errObj)
	}
	buf.WriteByte(']')
	if n == 0 {
		buf.Reset()
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","id":null,"error":%s}`, errObj)
	}
	buf.WriteByte('\n')
	return &rpcRefusal{status: http.StatusBadRequest, body: buf.Bytes()}
}

// restoreIDs puts the raw ids back in place of their stand-ins in an encoded message.
func restoreIDs(p []byte, restore map[string]json.RawMessage) []byte {
	for q, raw := range restore {
		if bytes.Contains(p, []byte(q)) {
			p = bytes.ReplaceAll(p, []byte(`"id":`+q), append([]byte(`"id":`), raw...))
		}
	}
	return p
}

// idRestoringWriter is the response writer of a POST whose ids have stand-ins.
type idRestoringWriter struct {
	http.ResponseWriter
	restore map[string]json.RawMessage
}

func (w idRestoringWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(restoreIDs(p, w.restore)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w idRestoringWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w idRestoringWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// protocolVersionHeader is the streamable HTTP transport's version header.
const protocolVersionHeader = "Mcp-Protocol-Version"
