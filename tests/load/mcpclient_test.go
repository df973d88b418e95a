package load

// A lean MCP client over streamable HTTP: raw JSON-RPC with net/http, one request in flight per client. It decodes
// only the reply envelope and the structured result it checks, so a call costs the client little and the servers
// are what the figures measure (the go-sdk client spends milliseconds decoding a large reply).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// protocolVersion is the MCP version the client asks for; it then sends the one the server chose.
const protocolVersion = "2025-06-18"

// errKind says which figure a failed call counts in.
type errKind int

const (
	// errTransport: no answer, an HTTP status other than success, a malformed reply, or a JSON-RPC error.
	errTransport errKind = iota + 1
	// errTool: a result with isError: true (a tool error); valid calls must never get one.
	errTool
	// errCheck: a successful result that is not what the call must return (wrong content, a torn file...).
	errCheck
)

func (k errKind) String() string {
	switch k {
	case errTransport:
		return "transport"
	case errTool:
		return "tool"
	case errCheck:
		return "check"
	}
	return "unknown"
}

type callError struct {
	kind errKind
	msg  string
}

func (e *callError) Error() string { return e.kind.String() + " error: " + e.msg }

func transportErr(format string, a ...any) error {
	return &callError{kind: errTransport, msg: fmt.Sprintf(format, a...)}
}

func checkErr(format string, a ...any) error {
	return &callError{kind: errCheck, msg: fmt.Sprintf(format, a...)}
}

// kindOf is the kind of err (errTransport for errors that are not a *callError).
func kindOf(err error) errKind {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.kind
	}
	return errTransport
}

// mcpClient is one MCP session with one server.
type mcpClient struct {
	url   string
	token string // sent as the bearer token
	hc    *http.Client
	sid   string
	proto string
	next  int64
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// envelope is one JSON-RPC message from the server; Result decodes into what the caller passed.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result any             `json:"result"`
	Error  *rpcError       `json:"error"`
}

// toolResult is the part of a tools/call result the client reads: the flag, the structured content (decoded into
// Structured) and, for errors only, the text.
type toolResult struct {
	IsError    bool `json:"isError"`
	Structured any  `json:"structuredContent"`
	Content    []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// post sends one JSON-RPC message and returns the reply's status, content type and body.
func (c *mcpClient) post(ctx context.Context, body []byte) (int, string, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.proto != "" {
		req.Header.Set("Mcp-Protocol-Version", c.proto)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, nil, fmt.Errorf("reading the reply: %w", err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b, resp.Header, nil
}

// rpc sends a request and decodes its reply's result into result.
func (c *mcpClient) rpc(ctx context.Context, method string, params, result any) (http.Header, error) {
	c.next++
	id := c.next
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	status, ctype, reply, hdr, err := c.post(ctx, body)
	if err != nil {
		return nil, transportErr("%s: %v", method, err)
	}
	if status != http.StatusOK {
		return nil, transportErr("%s: HTTP %d: %s", method, status, clip(string(reply), 200))
	}
	env, err := findReply(ctype, reply, strconv.FormatInt(id, 10), result)
	if err != nil {
		return nil, transportErr("%s: %v", method, err)
	}
	if env.Error != nil {
		return nil, transportErr("%s: JSON-RPC error %d: %s", method, env.Error.Code, env.Error.Message)
	}
	return hdr, nil
}

// findReply finds the message answering request id in a reply body, which is one JSON message
// (application/json) or a stream of server-sent events (text/event-stream) where notifications may come first.
func findReply(ctype string, body []byte, id string, result any) (*envelope, error) {
	mt, _, _ := mime.ParseMediaType(ctype)
	switch mt {
	case "application/json":
		env := &envelope{Result: result}
		if err := json.Unmarshal(body, env); err != nil {
			return nil, fmt.Errorf("malformed JSON reply: %v: %s", err, clip(string(body), 200))
		}
		if string(env.ID) != id {
			return nil, fmt.Errorf("reply has id %s, want %s", env.ID, id)
		}
		return env, nil
	case "text/event-stream":
		var found *envelope
		err := sseEvents(body, func(data []byte) error {
			// Only the answer to this request matters; notifications (no id) and server requests (a method) are
			// skipped. Neither has a result, so decoding them leaves result alone.
			env := &envelope{Result: result}
			if err := json.Unmarshal(data, env); err != nil {
				return fmt.Errorf("malformed event data: %v: %s", err, clip(string(data), 200))
			}
			if env.Method == "" && string(env.ID) == id {
				found = env
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if found == nil {
			return nil, fmt.Errorf("the event stream ended without the reply to request %s: %s", id, clip(string(body), 200))
		}
		return found, nil
	}
	return nil, fmt.Errorf("reply of content type %q: %s", ctype, clip(string(body), 200))
}

// sseEvents calls fn with the data of each event of a text/event-stream body (data lines joined by newlines).
func sseEvents(body []byte, fn func(data []byte) error) error {
	var data []byte
	has := false
	flush := func() error {
		if !has {
			return nil
		}
		err := fn(data)
		data, has = data[:0], false
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := flush(); err != nil {
				return err
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data = append(data, v...)
			has = true
		}
		// event:, id:, retry: and comments carry nothing the client needs.
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// initialize opens the session: initialize, then notifications/initialized.
func (c *mcpClient) initialize(ctx context.Context, name string) error {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	hdr, err := c.rpc(ctx, "initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": name, "version": "0"},
	}, &res)
	if err != nil {
		return err
	}
	c.sid = hdr.Get("Mcp-Session-Id")
	if c.sid == "" {
		return transportErr("initialize: no Mcp-Session-Id in the reply")
	}
	c.proto = res.ProtocolVersion
	status, _, body, _, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return transportErr("notifications/initialized: %v", err)
	}
	if status != http.StatusAccepted && status != http.StatusOK && status != http.StatusNoContent {
		return transportErr("notifications/initialized: HTTP %d: %s", status, clip(string(body), 200))
	}
	return nil
}

// call calls a tool and decodes its structured content into out. A tool error is an errTool error.
func (c *mcpClient) call(ctx context.Context, tool string, args, out any) error {
	res := toolResult{Structured: out}
	if _, err := c.rpc(ctx, "tools/call", map[string]any{"name": tool, "arguments": args}, &res); err != nil {
		return err
	}
	if res.IsError {
		msg := ""
		for _, ct := range res.Content {
			msg += ct.Text
		}
		return &callError{kind: errTool, msg: tool + ": " + clip(msg, 300)}
	}
	return nil
}

// close ends the session with DELETE, as a well-behaved client does.
func (c *mcpClient) close(ctx context.Context) error {
	if c.sid == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.proto != "" {
		req.Header.Set("Mcp-Protocol-Version", c.proto)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportErr("DELETE session: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return transportErr("DELETE session: HTTP %d", resp.StatusCode)
	}
	c.sid = ""
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// newHTTPClient is the client side shared by all sessions: keep-alive connections, enough of them idle for every
// client, no compression (loopback), a per-call deadline so a hung call fails the test instead of hanging it.
func newHTTPClient(conns int) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		MaxIdleConns:        4 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}, tr
}
