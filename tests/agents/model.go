// Package agents runs the coding-agent CLIs people plug MCP servers into (Claude Code, Codex, Gemini CLI, Qwen
// Code, opencode, mcp-remote) against both goalbox servers, each driven by a scripted model: the one server here
// that speaks every provider API those clients use (OpenAI Responses and Chat Completions, Anthropic Messages,
// Gemini generateContent), replays planned tool calls, and records what each client sent its model. docs/clients.md
// says what the tests check.
package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Call is one planned tool call: the MCP tool's own name (the client's name for it ends with it) and arguments.
type Call struct {
	Tool string
	// Server, when set, is the configured name of the server the tool is on: the client's name for the tool must
	// hold it (the official filesystem server's write_file, not the client's own built-in write_file).
	Server string
	Args   map[string]any
	// From, when set, makes the arguments from the results the model has seen so far (a process_id a call
	// returned), in place of Args.
	From func(results []Seen) map[string]any
}

// Seen is what a client gave its model as one tool call's result: the text parts joined, and the images.
type Seen struct {
	Text   string
	Images []Image
	// Error is set when the client marked the result as an error (where its API says so).
	Error bool
}

// Image is an image a tool result carried to the model.
type Image struct{ MIME, Base64 string }

// Model is the scripted model: an HTTP handler for every provider API. Each request's conversation is read for the
// tool results it already holds; the model answers with the next planned call, or a final text when the plan is
// done.
type Model struct {
	Plan []Call

	mu       sync.Mutex
	requests []Request
}

// Request is one request a client sent the model.
type Request struct {
	API  string // "responses", "chat", "anthropic", "gemini"
	Path string
	Body map[string]any
	// Results are the tool results the conversation holds, in order, as the model sees them.
	Results []Seen
	// Tools are the names of the tools offered.
	Tools []string
	// System is the system prompt / instructions as sent.
	System string
}

// Requests are the requests received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Last is the last request of the API that held the most tool results: the whole conversation as the model saw it.
func (m *Model) Last() (Request, bool) {
	var best Request
	found := false
	for _, r := range m.Requests() {
		if !found || len(r.Results) >= len(best.Results) {
			best, found = r, true
		}
	}
	return best, found
}

func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	path := r.URL.Path
	var rec Request
	switch {
	case strings.HasSuffix(path, "/responses"):
		rec = readResponses(req)
	case strings.HasSuffix(path, "/chat/completions"):
		rec = readChat(req)
	case strings.HasSuffix(path, "/messages"):
		rec = readAnthropic(req)
	case strings.Contains(path, ":streamGenerateContent") || strings.Contains(path, ":generateContent"):
		rec = readGemini(req)
	case strings.Contains(path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"totalTokens":10}`)
		return
	case strings.HasSuffix(path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","object":"model","created":0,"owned_by":"goalbox"}],"models":[]}`)
		return
	default:
		http.Error(w, "the scripted model does not serve "+path, http.StatusNotFound)
		return
	}
	rec.Path, rec.Body = r.URL.String(), req
	m.mu.Lock()
	m.requests = append(m.requests, rec)
	m.mu.Unlock()

	var call *Call
	name := ""
	if n := len(rec.Results); n < len(m.Plan) && len(rec.Tools) > 0 {
		c := m.Plan[n]
		if c.From != nil {
			c.Args = c.From(rec.Results)
		}
		call, name = &c, toolName(rec.Tools, c.Server, c.Tool)
	}
	stream := req["stream"] == true || strings.Contains(path, ":streamGenerateContent")
	id := fmt.Sprintf("call_%d", len(rec.Results)+1)
	switch rec.API {
	case "responses":
		answerResponses(w, call, name, id)
	case "chat":
		answerChat(w, call, name, id, stream)
	case "anthropic":
		answerAnthropic(w, call, name, id, stream)
	case "gemini":
		answerGemini(w, call, name, stream)
	}
}

// toolName is the client's name for the MCP tool tool: the offered name that ends with it (clients prefix the
// server's name: mcp__exec__sandbox_run_command, exec_sandbox_run_command...) and, with server set, holds the
// server's name. A name that ends with "sandbox_"+tool is another tool (goalbox's sandbox_write_file for the
// official server's write_file). The shortest wins.
func toolName(offered []string, server, tool string) string {
	best := ""
	for _, n := range offered {
		prefix, ok := strings.CutSuffix(n, tool)
		if !ok || strings.HasSuffix(prefix, "sandbox_") || !strings.Contains(prefix, server) {
			continue
		}
		if best == "" || len(n) < len(best) {
			best = n
		}
	}
	if best == "" {
		return tool // the client will say it has no such tool: the test shows it
	}
	return best
}

// Final is the text the model ends with when its plan is done.
const Final = "All planned calls are done."

func sse(w http.ResponseWriter) func(event string, data any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	return func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func argsJSON(c *Call) string {
	b, _ := json.Marshal(c.Args)
	return string(b)
}

// str, list, obj read the loosely typed JSON of a request.
func str(v any) string {
	s, _ := v.(string)
	return s
}
func list(v any) []any {
	l, _ := v.([]any)
	return l
}
func obj(v any) map[string]any {
	o, _ := v.(map[string]any)
	return o
}

// dataURL splits a data: URL into its MIME type and base64 data.
func dataURL(u string) (Image, bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return Image{}, false
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	return Image{MIME: mime, Base64: data}, ok
}
