// Package sandbox is how the agent reaches its tools: a client of the goalbox MCP servers that offers their tools to
// the loop as one loop.Sandbox, routing each call to the server that has the tool, and the two servers hosted in
// this process over a workspace when no running ones are named. The goal mode and the benchmark (the model's
// sandbox and the grader's alike) open their sandboxes here, one way.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrUnknownTool is returned by Call for a name no server offers.
var ErrUnknownTool = errors.New("unknown tool")

// sessionProtocol is the MCP version the agent speaks to its servers: the newest with sessions.
const sessionProtocol = "2025-11-25"

// codeRejectedByTransport is the go-sdk's JSON-RPC code for a request that did not reach the server or whose
// answer was lost on the way (its internal jsonrpc2.ErrRejected): the server is gone or refusing connections. It
// is the sandbox failing, not an answer about the call, so Call returns it as an error.
const codeRejectedByTransport = -32005

// Endpoint is one MCP server running elsewhere, to connect to over streamable HTTP (the servers the agent hosts
// are reached in memory: Local.Connect).
type Endpoint struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:7101/mcp.
	URL string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
}

// Client routes tool calls to the MCP servers that offer them. It is a loop.Sandbox.
type Client struct {
	results  *resultTaker
	sessions []*mcp.ClientSession
	cut      []io.Closer // the in-memory links, cut before the sessions are closed
	tools    []loop.Tool
	owner    map[string]*mcp.ClientSession

	progressMu sync.Mutex
	onProgress func(tool, message string)
	nextToken  int64
	inFlight   map[string]*progressState // progress token → the call it belongs to
}

type progressState struct {
	tool     string
	reported float64 // seconds of progress last passed on
}

// progressEvery is how often a long call's progress is passed on (servers send it about once a second).
const progressEvery = 10.0

// OnProgress asks servers for progress on every later call and passes it to f about every ten seconds of a long
// call (a test suite that runs for minutes): the message is the server's, e.g. "running for 20s; 3120 bytes on
// stdout, 0 on stderr so far".
func (s *Client) OnProgress(f func(tool, message string)) {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	s.onProgress = f
}

func (s *Client) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok := fmt.Sprint(req.Params.ProgressToken)
	s.progressMu.Lock()
	st, f := s.inFlight[tok], s.onProgress
	if st == nil || f == nil || req.Params.Progress < st.reported+progressEvery {
		s.progressMu.Unlock()
		return
	}
	st.reported = req.Params.Progress
	s.progressMu.Unlock()
	f(st.tool, req.Params.Message)
}

// Connect opens a session to each endpoint and lists its tools. Two servers offering the same tool name is an
// error: a call could not be routed.
func Connect(ctx context.Context, endpoints ...Endpoint) (*Client, error) {
	return open(ctx, func(s *Client) []link {
		links := make([]link, len(endpoints))
		for i, ep := range endpoints {
			links[i] = s.httpLink(ep)
		}
		return links
	})
}

// link is one server to open a session to.
type link struct {
	// name says which server it is in errors: its URL, or which in-process server.
	name      string
	transport mcp.Transport
	// explain, when set, says more about a failed connect than the go-sdk does.
	explain func(error) error
}

// httpLink is the link to a server over streamable HTTP, its tool results taken apart by the client's taker.
func (s *Client) httpLink(ep Endpoint) link {
	watch := &refusalWatch{next: s.results}
	hc := &http.Client{Transport: watch}
	if ep.Token != "" {
		hc.Transport = bearerTransport{token: ep.Token, next: watch}
	}
	// The agent only makes requests; the standalone SSE stream would be one idle connection per server.
	return link{name: ep.URL, transport: &mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: hc, DisableStandaloneSSE: true},
		explain: func(err error) error {
			if !watch.unauthorized.Load() {
				return err
			}
			// The go-sdk says only "Unauthorized": say which token is missing and where it comes from.
			what := "without a token"
			if ep.Token != "" {
				what = "with a token it does not accept"
			}
			return fmt.Errorf("401 Unauthorized %s: a goalbox server requires the bearer token it was started with, or the one "+
				"it generated, printed at start and wrote to its token file (give it with -token, or GOALBOX_FS_TOKEN / "+
				"GOALBOX_EXEC_TOKEN): %w", what, err)
		}}
}

// open makes a client, opens a session over each of the links links makes for it and lists its tools.
func open(ctx context.Context, links func(*Client) []link) (_ *Client, err error) {
	s := &Client{results: newResultTaker(http.DefaultTransport), owner: map[string]*mcp.ClientSession{}, inFlight: map[string]*progressState{}}
	defer func() {
		if err != nil {
			s.Close() // the sessions opened so far
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "goalbox-agent", Version: mcpserve.Version()}, &mcp.ClientOptions{ProgressNotificationHandler: s.progress})
	for _, l := range links(s) {
		// The agent keeps a session (MCP 2025-11-25), though the servers also serve 2026-07-28 statelessly over
		// HTTP: a session is what kills the model's background processes when the agent dies or its connection
		// drops, and what lets the agent list them before a verification; without one a dead agent's dev server
		// would run until the executor's idle expiry (docs/serving.md, "Protocol eras").
		cs, err := client.Connect(ctx, l.transport, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
		if err != nil {
			if l.explain != nil {
				err = l.explain(err)
			}
			return nil, fmt.Errorf("connect to MCP server %s: %w", l.name, err)
		}
		s.sessions = append(s.sessions, cs)
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, fmt.Errorf("list tools of %s: %w", l.name, err)
			}
			if _, dup := s.owner[t.Name]; dup {
				return nil, fmt.Errorf("tool %s is offered by two servers (the second is %s): calls cannot be routed", t.Name, l.name)
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %s of %s: input schema: %w", t.Name, l.name, err)
			}
			s.owner[t.Name] = cs
			s.tools = append(s.tools, loop.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
	}
	if len(s.tools) == 0 {
		return nil, errors.New("the MCP servers offer no tools")
	}
	return s, nil
}

// Tools are the discovered tools, in server order then the server's order.
func (s *Client) Tools() []loop.Tool { return slices.Clone(s.tools) }

// Call sends tools/call to the server that owns name. A JSON-RPC error answer (e.g. arguments that fail the
// tool's schema) is about this call only, so it becomes a tool error for the model; a broken connection is an error.
func (s *Client) Call(ctx context.Context, name string, args json.RawMessage) (loop.ToolResult, error) {
	cs, ok := s.owner[name]
	if !ok {
		return loop.ToolResult{}, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	s.progressMu.Lock()
	if s.onProgress != nil {
		s.nextToken++
		tok := fmt.Sprintf("goalbox-%d", s.nextToken)
		s.inFlight[tok] = &progressState{tool: name}
		params.SetProgressToken(tok)
		defer func() {
			s.progressMu.Lock()
			delete(s.inFlight, tok)
			s.progressMu.Unlock()
		}()
	}
	s.progressMu.Unlock()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) && ctx.Err() == nil && wire.Code != codeRejectedByTransport {
			return loop.ToolResult{IsError: true, Text: wire.Message}, nil
		}
		return loop.ToolResult{}, fmt.Errorf("call %s: %w", name, err)
	}
	if len(res.Content) == 1 && res.StructuredContent == nil {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			if r, ok := s.results.take(t.Text); ok {
				return loop.ToolResult{IsError: r.isError, Text: r.text, Structured: r.structured}, nil
			}
		}
	}
	// A result the transport left to the SDK (content other than text: an image read, say).
	out := loop.ToolResult{IsError: res.IsError, Text: resultText(res)}
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && len(img.Data) > 0 {
			out.Images = append(out.Images, loop.Image{MIMEType: img.MIMEType, Data: img.Data})
		}
	}
	if res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			out.Structured, out.Decoded = raw, res.StructuredContent
		}
	} else if text := strings.TrimSpace(out.Text); strings.HasPrefix(text, "{") && json.Valid([]byte(text)) {
		// An image read carries no structuredContent (a client such as Codex would show it instead of the
		// pixels); its text is the same JSON object, so it serves as the structured result.
		out.Structured = json.RawMessage(text)
	}
	return out, nil
}

// resultText is the text content of a result, its parts on lines of their own.
func resultText(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Close ends every session. An in-memory link is cut first: the go-sdk's Close waits for the calls still running,
// and over a pipe it is the server's input ending that cancels them (over HTTP, the session's DELETE does).
func (s *Client) Close() error {
	var errs []error
	for _, c := range s.cut {
		c.Close()
	}
	for _, cs := range s.sessions {
		errs = append(errs, cs.Close())
	}
	return errors.Join(errs...)
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// refusalWatch notes whether the server answered 401, which the go-sdk reports only as "Unauthorized".
type refusalWatch struct {
	next         http.RoundTripper
	unauthorized atomic.Bool
}

func (w *refusalWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		w.unauthorized.Store(true)
	}
	return resp, err
}
