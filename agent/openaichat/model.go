// Package openaichat is the agent's model adapter: loop.Model over /chat/completions of OpenAI or any
// OpenAI-compatible server (Ollama, vLLM, a router), through the official SDK, and the built-in price table. It
// owns the translation between the loop's own message types and the SDK's, and nothing else: retries are the SDK's.
package openaichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
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
	// MaxRetries is how many times a failed request (429, 408, 409, 5xx, connection error, RequestTimeout) is
	// tried again. Waits grow exponentially from 0.5 s (capped at 8 s) with jitter; a Retry-After or Retry-After-Ms
	// header is obeyed instead, up to MaxRetryDelay.
	MaxRetries int
	// MaxRetryDelay caps one wait between tries; a server asking for longer ends the retries.
	MaxRetryDelay time.Duration
	// RequestTimeout bounds one attempt's wait for the response (its headers: a chat completion's body follows at
	// once). A slower attempt fails like a dropped connection and is retried. 0 keeps the SDK's 10 minutes.
	RequestTimeout time.Duration
	// OnFailedAttempt, when set, hears about every failed attempt, retried or not, so that a person watching sees
	// a rate limit or an outage instead of silence (waits can reach minutes).
	OnFailedAttempt func(message string)
}

// ErrNoEndpoint means neither an API key nor a base URL was given: there is nothing to talk to.
var ErrNoEndpoint = errors.New("no model configured: set OPENAI_API_KEY (for OpenAI) or OPENAI_BASE_URL / -base-url (for an OpenAI-compatible server such as Ollama)")

// Model talks to /chat/completions of OpenAI or any compatible server through the official SDK. Retrying is
// the SDK's own (see Config.MaxRetries): one place, already correct about Retry-After and jitter.
type Model struct {
	client openai.Client
	model  string
}

// New checks cfg and builds the client. Only the values in cfg are used: the SDK's own reading of
// OPENAI_* variables is overridden, so the caller decides precedence (flags over environment).
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
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.MaxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(cfg.MaxRetryDelay))
	}
	if cfg.RequestTimeout > 0 {
		// Not option.WithRequestTimeout: the SDK does not retry an attempt whose own deadline passed. A transport
		// timeout is a connection error to it, which it does retry (its default client bounds headers the same way).
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t := dt.Clone()
			t.ResponseHeaderTimeout = cfg.RequestTimeout
			opts = append(opts, option.WithHTTPClient(&http.Client{Transport: t}))
		} else { // a wrapped default transport (tracing): bound attempts the SDK's way, without the retry
			opts = append(opts, option.WithRequestTimeout(cfg.RequestTimeout))
		}
	}
	if f := cfg.OnFailedAttempt; f != nil {
		// Middleware runs once per attempt, inside the SDK's retry loop.
		opts = append(opts, option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(req)
			switch {
			case err != nil && req.Context().Err() == nil:
				f("model request failed: " + err.Error())
			case err == nil && res.StatusCode >= 400:
				msg := "model server answered " + res.Status
				if ra := res.Header.Get("Retry-After"); ra != "" {
					msg += ", Retry-After " + ra
				}
				f(msg)
			}
			return res, err
		}))
	}
	return &Model{client: openai.NewClient(opts...), model: cfg.Model}, nil
}

// Name is the configured model name.
func (m *Model) Name() string { return m.model }

// Complete sends the conversation and the tools and returns the first choice.
func (m *Model) Complete(ctx context.Context, msgs []loop.Message, tools []loop.Tool) (loop.Reply, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(m.model), Messages: toOpenAIMessages(msgs)}
	for _, t := range tools {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return loop.Reply{}, fmt.Errorf("tool %s: input schema is not a JSON object: %w", t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	res, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return loop.Reply{}, err
	}
	if len(res.Choices) == 0 {
		return loop.Reply{}, errors.New("model server returned no choices")
	}
	ch := res.Choices[0]
	out := loop.Message{Role: loop.RoleAssistant, Content: ch.Message.Content}
	if out.Content == "" && ch.Message.Refusal != "" {
		out.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		// Custom (free-text) tools are never offered, so only function calls can come back; a server that sends
		// another kind anyway gets it reported as an unknown tool by the loop.
		name, args := tc.Function.Name, tc.Function.Arguments
		if tc.Type == "custom" {
			name, args = tc.Custom.Name, tc.Custom.Input
		}
		out.ToolCalls = append(out.ToolCalls, loop.ToolCall{ID: tc.ID, Name: name, Arguments: args})
	}
	return loop.Reply{
		Message:      out,
		Usage:        loop.Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens},
		Model:        res.Model,
		FinishReason: ch.FinishReason,
	}, nil
}

func toOpenAIMessages(msgs []loop.Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case loop.RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case loop.RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case loop.RoleTool:
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case loop.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}
