// Package looptest provides a scripted OpenAI-compatible chat server for tests, in the spirit of net/http/httptest:
// it answers POST /v1/chat/completions with planned replies, in order, and records every request. It is the one
// test double the agent's tests use (the sandbox is always the real servers); it is never a user-facing model.
package looptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Call is a planned tool call. Args is sent verbatim, so it may be malformed on purpose.
type Call struct {
	Name string
	Args string
}

// Step is one planned answer.
type Step struct {
	// Status, when non-zero, answers with this HTTP status and an OpenAI-style error body instead of a reply.
	Status int
	// Header is added to the response (e.g. Retry-After on a 429).
	Header map[string]string
	// Delay holds the answer back (or until the client gives up).
	Delay time.Duration
	// Content is the assistant's text; Calls its tool calls.
	Content string
	Calls   []Call
	// PromptTokens and CompletionTokens are the usage reported (defaults 100 and 10).
	PromptTokens, CompletionTokens int64
	// NoIDs leaves the tool call IDs empty, as some compatible servers do.
	NoIDs bool
	// Check, when set, looks at the request this step answers.
	Check func(t testing.TB, req Request)
}

// Request is a recorded chat completion request.
type Request struct {
	Raw      []byte
	Model    string
	Messages []Message
	Tools    []string
	// Header is the request's HTTP header (Authorization, retry counts).
	Header http.Header
	At     time.Time
}

// Message is a request message as sent on the wire.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text is the message content as a string (content may be a string or a list of text parts).
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// Server is a running scripted model. When the script is exhausted, Repeat (if set) answers every further request;
// otherwise the test fails and the model answers "script exhausted" without a tool call.
type Server struct {
	*httptest.Server
	// BaseURL is the API root to configure the agent with (…/v1).
	BaseURL string
	// Repeat answers requests past the end of the script.
	Repeat *Step
	// Respond, when set, answers requests past the end of the script from what they say (before Repeat): for
	// workers in parallel, whose requests come in no fixed order. It is called with the server's lock held.
	Respond func(Request) Step

	t        testing.TB
	mu       sync.Mutex
	steps    []Step
	next     int
	requests []Request
}

// New starts a scripted model on loopback; it is closed when the test ends.
func New(t testing.TB, steps ...Step) *Server {
	s := &Server{t: t, steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.BaseURL = s.Server.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Requests returns what was received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "scripted model serves POST /v1/chat/completions only", http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("scripted model: request is not JSON: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	req := Request{Raw: raw, Model: body.Model, Messages: body.Messages, Header: r.Header.Clone(), At: time.Now()}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	var st Step
	switch {
	case s.next < len(s.steps):
		st = s.steps[s.next]
		s.next++
	case s.Respond != nil:
		st = s.Respond(req)
	case s.Repeat != nil:
		st = *s.Repeat
	default:
		s.t.Errorf("scripted model: request %d is past the end of the script", n+1)
		st = Step{Content: "script exhausted"}
	}
	s.mu.Unlock()

	if st.Check != nil {
		st.Check(s.t, req)
	}
	if st.Delay > 0 {
		select {
		case <-time.After(st.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range st.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	if st.Status != 0 {
		w.WriteHeader(st.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, st.Status)
		return
	}
	_ = json.NewEncoder(w).Encode(completion(n, body.Model, st))
}

func completion(n int, model string, st Step) map[string]any {
	msg := map[string]any{"role": "assistant", "content": st.Content}
	finish := "stop"
	if len(st.Calls) > 0 {
		var calls []map[string]any
		for i, c := range st.Calls {
			id := "call_" + strconv.Itoa(n+1) + "_" + strconv.Itoa(i+1)
			if st.NoIDs {
				id = ""
			}
			calls = append(calls, map[string]any{
				"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args},
			})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	in, out := st.PromptTokens, st.CompletionTokens
	if in == 0 && out == 0 {
		in, out = 100, 10
	}
	return map[string]any{
		"id": "chatcmpl-" + strconv.Itoa(n+1), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}
}

// Args marshals v as tool call arguments.
func Args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
