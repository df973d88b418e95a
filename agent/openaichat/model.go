// Package openaichat is the agent's model adapter: loop.Model over /chat/completions of OpenAI or any
// OpenAI-compatible server (DeepSeek, OpenRouter, Groq, Ollama, vLLM, LM Studio), and the built-in price table. It
// owns the translation between the loop's message types and the wire, streaming, retries and the reading of
// providers' errors.
//
// It speaks HTTP itself rather than through the OpenAI SDK: the SDK retries only until the headers arrive (a body
// cut or stalled after them failed the run), bounds an attempt's whole length rather than its silences, and has no
// place for the fields other providers add (reasoning_content, failed_generation, errors inside a 200), and its
// stream accumulator glues the calls of providers that repeat a name or drop the index. testdata/sdkprobe measures
// this side by side (docs/agent.md, Decisions).
package openaichat

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
)

// Config says which OpenAI-compatible endpoint and model to use and how hard to retry.
type Config struct {
	// Model is the model name sent with each request, e.g. gpt-4.1-mini or qwen2.5-coder:7b.
	Model string
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or http://localhost:11434/v1 for Ollama. Empty
	// means OpenAI's own API.
	BaseURL string
	// APIKey is sent as a bearer token. It may be empty for a local server that wants none, when BaseURL is set.
	APIKey string
	// MaxRetries is the most times one request is tried again after a failure that may heal: 408, 409, 425,
	// 429, 5xx, a connection error, a body cut or silent for RequestTimeout, an answer with an error or no
	// choices. Quota, auth, unknown-model and other 4xx errors are not retried.
	MaxRetries int
	// RetryWindow bounds the time spent on one request, waits included: no retry starts whose wait would end
	// past it. 0 means no bound but MaxRetries.
	RetryWindow time.Duration
	// MaxRetryDelay caps one wait between tries (default 60 s). Waits grow from 1 s, doubling, with jitter; a
	// Retry-After or retry-after-ms header is obeyed instead, up to this cap.
	MaxRetryDelay time.Duration
	// RequestTimeout is the longest silence of one attempt: until the headers, then until the answer starts and
	// between its pieces (a stream's data events: keep-alive comments do not count; a whole body's bytes).
	// Answers stream, so a slow model writing a long answer is not cut off. 0 means 10 minutes.
	RequestTimeout time.Duration
	// MaxOutputTokens, when positive, caps each answer's length (max_tokens; max_completion_tokens for OpenAI).
	MaxOutputTokens int
	// OnFailedAttempt, when set, hears about every failed attempt, retried or not, so that a person watching sees
	// a rate limit or an outage instead of silence (waits can reach a minute).
	OnFailedAttempt func(message string)
	// OnProgress, when set, hears every ProgressEvery while an answer arrives how much has come, so that a slow
	// model writing a long answer is seen working.
	OnProgress    func(message string)
	ProgressEvery time.Duration
	// OnText, when set, hears the answer's text as it streams, piece by piece, and a final "\n" when the text did
	// not end with one: a person reads the model as it writes. A retried attempt is heard again.
	OnText func(piece string)
	// ConnectTimeout is the longest a connection may take to open (default 10 s): a server behind a firewall that
	// drops packets, which never answered, is named within it rather than after the system's two minutes (or the
	// 30 s of Go's default transport). Ignored with HTTPClient.
	ConnectTimeout time.Duration
	// HTTPClient sends the requests; nil means a client of its own.
	HTTPClient *http.Client
}

// ErrNoEndpoint means neither an API key nor a base URL was given: there is nothing to talk to.
var ErrNoEndpoint = errors.New("no model configured: set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL / -base-url (for an OpenAI-compatible server such as Ollama)")

// Model talks to /chat/completions of one server.
type Model struct {
	cfg       Config
	model     string
	baseURL   string
	openAI    bool // OpenAI's own API, which names some fields its own way
	maxOutput int
	client    *http.Client
	// noStream is set once the server showed it does not stream (it answered a stream request with one JSON
	// body, or refused the stream parameters); later requests do without.
	noStream atomic.Bool
	// noReasoning is set once the server refused the reasoning fields of replayed messages (Groq: "property
	// 'reasoning' is unsupported"); later requests leave them out.
	noReasoning atomic.Bool
	// answered is set once the server sent any response: from then on a refused connection is a server
	// restarting, retried like any other failure that may heal.
	answered atomic.Bool
}

const defaultTimeout = 10 * time.Minute

// defaultConnectTimeout covers a few lost SYNs (Linux resends at 1, 3 and 7 s) to a server that is there.
const defaultConnectTimeout = 10 * time.Second

// New checks cfg and builds the model. Only the values in cfg are used: the caller decides precedence between
// flags and OPENAI_* variables.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, ErrNoEndpoint
	}
	if cfg.Model == "" {
		return nil, errors.New("no model name: give -model NAME (or GOALBOX_MODEL)")
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("model retries must be 0 or more, got %d", cfg.MaxRetries)
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("max output tokens must be 0 (the server's default) or more, got %d", cfg.MaxOutputTokens)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	base = cmp.Or(base, "https://api.openai.com/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an http(s) URL such as http://localhost:11434/v1", cfg.BaseURL)
	}
	if cfg.MaxRetryDelay <= 0 {
		cfg.MaxRetryDelay = time.Minute
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = defaultTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		// No overall timeout: silences are bounded per attempt (watchdog). Opening a connection is bounded here.
		transport := http.DefaultTransport.(*http.Transport).Clone()
		dialer := &net.Dialer{Timeout: cmp.Or(cfg.ConnectTimeout, defaultConnectTimeout), KeepAlive: 30 * time.Second}
		transport.DialContext = dialer.DialContext
		client = &http.Client{Transport: transport}
	}
	return &Model{cfg: cfg, model: cfg.Model, baseURL: base, openAI: u.Host == "api.openai.com", maxOutput: cfg.MaxOutputTokens, client: client}, nil
}

// Name is the configured model name.
func (m *Model) Name() string { return m.model }

// Streams says whether answers are streamed (until the server shows it cannot).
func (m *Model) Streams() bool { return !m.noStream.Load() }

// Complete sends the conversation and the tools and returns the first choice, retrying failures that may heal.
func (m *Model) Complete(ctx context.Context, msgs []loop.Message, tools []loop.Tool) (loop.Reply, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		stream := m.Streams()
		reply, failure := m.attempt(ctx, msgs, tools, stream)
		if failure == nil {
			return reply, nil
		}
		if ctx.Err() != nil {
			return loop.Reply{}, ctx.Err()
		}
		switch {
		case failure.refused == "stream" && stream:
			// The server refused the stream parameters: the person is told once, and it is asked again at once
			// without them.
			m.noStream.Store(true)
			m.note("the model server does not stream (%s): answers are read whole from now on", failure.err.Message)
			attempt--
			continue
		case failure.refused == "reasoning" && !m.noReasoning.Load():
			m.noReasoning.Store(true)
			m.note("the model server refuses reasoning sent back (%s): it is left out from now on", failure.err.Message)
			attempt--
			continue
		}
		failure.err.Attempts = attempt
		if failure.err.Kind != loop.FailTransient || failure.unreachable {
			m.note("model server: %s", failure.err.Error())
			return loop.Reply{}, failure.err
		}
		wait := m.backoff(attempt, failure.retryAfter)
		switch {
		case attempt > m.cfg.MaxRetries:
			m.note("model server: %s; giving up after %d attempt(s)", failure.err.Message, attempt)
			return loop.Reply{}, failure.err
		case m.cfg.RetryWindow > 0 && time.Since(start)+wait > m.cfg.RetryWindow:
			m.note("model server: %s; giving up: a retry in %s would end past the %s retry window", failure.err.Message, wait.Round(100*time.Millisecond), m.cfg.RetryWindow)
			return loop.Reply{}, failure.err
		}
		m.note("model server: %s; retry %d in %s", failureLine(failure.err), attempt, wait.Round(100*time.Millisecond))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return loop.Reply{}, ctx.Err()
		}
	}
}

func failureLine(e *loop.ModelError) string {
	if e.Status != 0 {
		return fmt.Sprintf("%d %s", e.Status, e.Message)
	}
	return e.Message
}

func (m *Model) note(format string, a ...any) {
	if m.cfg.OnFailedAttempt != nil {
		m.cfg.OnFailedAttempt(fmt.Sprintf(format, a...))
	}
}

// failure is one failed attempt.
type failure struct {
	err        *loop.ModelError
	retryAfter time.Duration // the server's Retry-After, if it gave one
	refused    string        // a request field the server refused: "stream" or "reasoning" (refusedField)
	// unreachable: no connection could be made (refused, no such host) to a server that never answered: a wrong
	// URL or a server not started, named at once rather than after a minute of retries.
	unreachable bool
}

// isDialError says err is a failure to connect at all: refused, unreachable, or a name that does not resolve.
func isDialError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

func transient(format string, a ...any) *failure {
	return &failure{err: &loop.ModelError{Kind: loop.FailTransient, Message: fmt.Sprintf(format, a...),
		Hint: "the server kept failing: try again later, or give -retry-window more time"}}
}

// attempt makes one request and reads its whole answer under a watchdog: each silence longer than
// RequestTimeout, before the headers or inside the body, ends the attempt as a transient failure.
func (m *Model) attempt(ctx context.Context, msgs []loop.Message, tools []loop.Tool, stream bool) (loop.Reply, *failure) {
	req, err := m.toWire(msgs, tools, stream)
	if err != nil {
		return loop.Reply{}, &failure{err: &loop.ModelError{Kind: loop.FailBadRequest, Message: err.Error()}}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return loop.Reply{}, &failure{err: &loop.ModelError{Kind: loop.FailBadRequest, Message: err.Error()}}
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	watchdog := time.AfterFunc(m.cfg.RequestTimeout, func() { stalled.Store(true); cancel() })
	defer watchdog.Stop()
	silence := func() *failure {
		return transient("no answer for %s (-model-timeout)", m.cfg.RequestTimeout)
	}

	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, m.baseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return loop.Reply{}, &failure{err: &loop.ModelError{Kind: loop.FailBadRequest, Message: err.Error()}}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	if m.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	res, err := m.client.Do(hreq)
	switch {
	case err != nil && ctx.Err() != nil:
		return loop.Reply{}, transient("%v", ctx.Err())
	case err != nil && stalled.Load():
		return loop.Reply{}, silence()
	case err != nil:
		f := transient("request failed: %v", unwrapURL(err))
		f.err.Hint = fmt.Sprintf("nothing answered at %s: is the server running, and is -base-url (OPENAI_BASE_URL) right?", m.baseURL)
		f.unreachable = !m.answered.Load() && isDialError(err)
		return loop.Reply{}, f
	}
	defer res.Body.Close()
	m.answered.Store(true)
	watchdog.Reset(m.cfg.RequestTimeout)
	alive := func() { watchdog.Reset(m.cfg.RequestTimeout) }
	mediaType, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	streamed := res.StatusCode == http.StatusOK && mediaType == "text/event-stream"
	in := &lively{r: res.Body}
	if !streamed {
		in.alive = alive // a whole body: every byte is the answer arriving
	}
	defer m.showProgress(in)()

	var a answer
	var apiErr *errorBody
	if streamed && m.cfg.OnText != nil {
		last := ""
		a.onText = func(p string) { m.cfg.OnText(p); last = p }
		defer func() {
			if last != "" && !strings.HasSuffix(last, "\n") {
				m.cfg.OnText("\n")
			}
		}()
	}
	if streamed {
		// A stream is alive when an event with data arrives: comments (": keep-alive") after the headers are a
		// server holding the connection, not an answer, and must not hold the attempt past -model-timeout.
		apiErr, err = readStream(in, &a, alive)
		if err != nil && stalled.Load() && a.finish != "" {
			err = nil // complete, and the server kept the connection open without [DONE]
		}
	} else {
		var f *failure
		if apiErr, f, err = m.readWhole(res, in, &a, stream, body); f != nil {
			return loop.Reply{}, f
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return loop.Reply{}, transient("%v", ctx.Err())
	case err != nil && stalled.Load():
		return loop.Reply{}, silence()
	case err != nil:
		return loop.Reply{}, transient("the answer broke off: %v", err)
	case apiErr != nil:
		b, _ := json.Marshal(map[string]any{"error": apiErr})
		f := &failure{err: m.modelError(http.StatusOK, b)}
		if f.err.Kind == loop.FailBadRequest {
			f.err.Kind = loop.FailTransient // an error inside a 200 is the upstream's failure, not the request's
		}
		return loop.Reply{}, f
	case !a.choices:
		return loop.Reply{}, transient("the model server returned no choices")
	case a.finish == "error":
		return loop.Reply{}, transient("the model server ended the answer with finish_reason \"error\"")
	}
	reply := a.reply()
	if a.usage == nil {
		reply.Usage = estimate(len(body), reply.Message)
	}
	return reply, nil
}

// refusedField says which optional part of a request a 400's message refuses: the stream parameters (servers
// without streaming), or the reasoning fields of replayed messages (servers that return reasoning but do not take
// it back). DeepSeek's "reasoning_content ... must be passed back" is the opposite, and not matched.
func refusedField(msg string, stream, reasoning bool) string {
	low := strings.ToLower(msg)
	switch {
	case stream && strings.Contains(low, "stream"):
		return "stream"
	case reasoning && strings.Contains(low, "reasoning"):
		for _, w := range []string{"unsupported", "not supported", "unrecognized", "unknown", "extra", "not permitted"} {
			if strings.Contains(low, w) {
				return "reasoning"
			}
		}
	}
	return ""
}

// readWhole reads a body that is not a stream: a refusal (any status but 200), or a whole completion, from a
// server that does not stream although asked to (it is noted once). err is the body breaking off.
func (m *Model) readWhole(res *http.Response, in io.Reader, a *answer, stream bool, request []byte) (*errorBody, *failure, error) {
	raw, err := io.ReadAll(in)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode != http.StatusOK {
		f := &failure{err: m.modelError(res.StatusCode, raw), retryAfter: retryAfter(res.Header)}
		if res.StatusCode == http.StatusBadRequest && f.err.Kind == loop.FailBadRequest {
			f.refused = refusedField(f.err.Message, stream, bytes.Contains(request, []byte(`"reasoning`)))
		}
		return nil, f, nil
	}
	var r wireResponse
	if json.Unmarshal(bytes.TrimSpace(raw), &r) != nil {
		// A 200 that is no chat completion (a web page): the URL is wrong, asking again will not help.
		f := &failure{err: m.modelError(res.StatusCode, raw)}
		f.err.Kind, f.err.Hint = loop.FailBadRequest, m.hint(&loop.ModelError{Kind: loop.FailBadRequest}, false)
		return nil, f, nil
	}
	e, isErr, err := a.add(r)
	switch {
	case err != nil:
		f := &failure{err: m.modelError(res.StatusCode, raw)}
		f.err.Kind, f.err.Message = loop.FailTransient, "the answer cannot be read: "+err.Error()
		return nil, f, nil
	case isErr:
		return &e, nil, nil
	}
	if stream && !m.noStream.Swap(true) {
		m.note("the model server does not stream: answers are read whole")
	}
	return nil, nil, nil
}

// estimate counts tokens at about 4 bytes each, for a server that reports no usage: budgets must still hold.
func estimate(requestBytes int, msg loop.Message) loop.Usage {
	out := len(msg.Content) + len(msg.Reasoning)
	for _, tc := range msg.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	return loop.Usage{PromptTokens: int64(requestBytes/4 + 1), CompletionTokens: int64(out/4 + 1), Estimated: true}
}

// lively is a body that counts what arrives and, when alive is set, tells the watchdog each time.
type lively struct {
	r     io.Reader
	alive func()
	n     atomic.Int64
}

func (l *lively) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.n.Add(int64(n))
		if l.alive != nil {
			l.alive()
		}
	}
	return n, err
}

// showProgress tells OnProgress how much of the answer has come, every ProgressEvery, until the returned stop.
func (m *Model) showProgress(in *lively) (stop func()) {
	if m.cfg.OnProgress == nil || m.cfg.ProgressEvery <= 0 {
		return func() {}
	}
	t0 := time.Now()
	tick := time.NewTicker(m.cfg.ProgressEvery)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				m.cfg.OnProgress(fmt.Sprintf("model: answer arriving, %d bytes in %s", in.n.Load(), time.Since(t0).Round(time.Second)))
			}
		}
	}()
	return func() { tick.Stop(); close(done); <-exited } // no line after the answer
}

// unwrapURL drops the "Post URL:" prefix net/http puts on every error: the URL is in the hint.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
