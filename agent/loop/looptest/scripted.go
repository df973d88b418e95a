// Package looptest provides a scripted OpenAI-compatible chat server for tests, in the spirit of net/http/httptest:
// it answers POST /v1/chat/completions with planned replies, in order, and records every request. It is the one
// test double the agent's tests use (the sandbox is always the real servers); it is never a user-facing model.
//
// Besides well-behaved replies it plays what real providers do (providers.go has their error bodies and rules):
// streaming with or without the closing [DONE] when the request asks for a stream (wire.go), bodies cut or stalled
// after the headers, thinking fields, duplicate or missing tool-call IDs, any finish_reason, a 200 whose body is an
// error, no choices, no usage.
package looptest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
	// Status, when non-zero, answers with this HTTP status and Body (default: an OpenAI-style error body).
	Status int
	// Body, when set, is the whole response body, sent verbatim as JSON (with Status, default 200): a provider's
	// own error body, or a 200 whose body is an error.
	Body string
	// Header is added to the response (e.g. Retry-After on a 429).
	Header map[string]string
	// Delay holds the answer back (or until the client gives up).
	Delay time.Duration
	// Content is the assistant's text; Calls its tool calls.
	Content string
	Calls   []Call
	// Reasoning is the model's thinking, sent in ReasoningField ("reasoning_content", as DeepSeek, Qwen and vLLM
	// name it, by default; OpenRouter's is "reasoning").
	Reasoning      string
	ReasoningField string
	// PromptTokens and CompletionTokens are the usage reported (defaults 100 and 10); NoUsage leaves usage out.
	// CachedTokens is reported as OpenAI does (prompt_tokens_details.cached_tokens) and as DeepSeek does
	// (prompt_cache_hit_tokens).
	PromptTokens, CompletionTokens, CachedTokens int64
	NoUsage                                      bool
	// NoIDs leaves the tool call IDs empty, as some compatible servers do; IDs sets them (duplicates on purpose).
	NoIDs bool
	IDs   []string
	// FinishReason overrides the usual one (stop, or tool_calls when there are calls): length, error, ...
	FinishReason string
	// NoChoices answers with an empty choices list.
	NoChoices bool
	// StreamError, when set, ends a streamed answer with an error chunk after the content, as OpenRouter does when
	// its upstream fails mid-answer (finish_reason "error"). A request that does not stream gets it as the body.
	StreamError string
	// NoDone ends a stream without the closing "data: [DONE]"; NoFinish leaves out its finish_reason chunk (with
	// NoDone: an upstream that hung up cleanly in the middle of the answer).
	NoDone, NoFinish bool
	// Chunks, when set, are the stream's data events verbatim (each a JSON chunk as a provider sends it, with its
	// own tool-call indexes, IDs and fields), followed by the usage and [DONE] as usual: what a provider does
	// that the fields above cannot say. A request that does not stream gets Body instead.
	Chunks []string
	// KeepAliveFor sends only comment lines (KeepAlive's, or ": keep-alive"), every 100 ms, for this long after
	// the headers before the answer starts: a server holding the connection while it queues the request.
	KeepAliveFor time.Duration
	// ChunkDelay is the pause before each stream chunk (a slow model writing its answer); KeepAlive, when set, is
	// a comment line sent before each chunk (DeepSeek's ": keep-alive", OpenRouter's ": OPENROUTER PROCESSING").
	ChunkDelay time.Duration
	KeepAlive  string
	// CutAfter resets the connection after this many body bytes; StallAfter stops writing after this many and
	// holds the connection open until the client gives up. Both count the body as sent (JSON or the stream).
	CutAfter, StallAfter int
	// Check, when set, looks at the request this step answers.
	Check func(t testing.TB, req Request)
}

// Request is a recorded chat completion request.
type Request struct {
	Raw      []byte
	Model    string
	Messages []Message
	Tools    []string
	// Stream says the request asked for a streamed answer.
	Stream bool
	// MaxTokens is max_tokens or max_completion_tokens, whichever was sent (0: neither).
	MaxTokens int
	// Header is the request's HTTP header (Authorization, retry counts).
	Header http.Header
	At     time.Time
}

// Message is a request message as sent on the wire.
type Message struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []struct {
		ID string `json:"id"`
		// ExtraContent is Gemini's field beside the function: its thought signature.
		ExtraContent json.RawMessage `json:"extra_content"`
		Function     struct {
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

// ImageURLs are the URLs of the image_url parts of the message's content (data: URLs for images sent inline), in
// order; none when the content is a string.
func (m Message) ImageURLs() []string {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var urls []string
	for _, p := range parts {
		if p.Type == "image_url" {
			urls = append(urls, p.ImageURL.URL)
		}
	}
	return urls
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
	// Rules are a provider's checks of every request, before the script: the first that returns a step answers
	// with it instead, and the script does not advance (see providers.go for real providers' rules).
	Rules []Rule
	// NoStream answers a request that asks for a stream with one JSON body, as a server without streaming does.
	NoStream bool

	t        testing.TB
	mu       sync.Mutex
	steps    []Step
	next     int
	requests []Request
}

// Rule is a provider's check of a request: nil lets it through, a step refuses it.
type Rule func(Request) *Step

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
		Stream   bool      `json:"stream"`
		Max      int       `json:"max_tokens"`
		MaxC     int       `json:"max_completion_tokens"`
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
	req := Request{Raw: raw, Model: body.Model, Messages: body.Messages, Stream: body.Stream, MaxTokens: max(body.Max, body.MaxC),
		Header: r.Header.Clone(), At: time.Now()}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	var st Step
	refused := false
	for _, rule := range s.Rules {
		if p := rule(req); p != nil {
			st, refused = *p, true
			break
		}
	}
	switch {
	case refused:
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
	stream := req.Stream && !s.NoStream
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
	answer(w, r, n, body.Model, st, stream)
}

// Args marshals v as tool call arguments.
func Args(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
