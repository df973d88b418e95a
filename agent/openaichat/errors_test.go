package openaichat

import (
	"strconv"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
)

// Each provider's error body, as the scripted model sends it, is read into the provider's words and sorted by
// what can be done about it.
func TestProvidersErrorsAreReadAndSorted(t *testing.T) {
	m, err := New(Config{Model: "scripted", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		step       looptest.Step
		kind, code string
		words      string
	}{
		{"OpenAI quota", looptest.OpenAIQuota, loop.FailQuota, "insufficient_quota", "You exceeded your current quota"},
		{"OpenAI rate limit", looptest.OpenAIRateLimit, loop.FailTransient, "rate_limit_exceeded", "Rate limit reached"},
		{"OpenAI key", looptest.OpenAIInvalidKey, loop.FailAuth, "invalid_api_key", "Incorrect API key"},
		{"OpenAI model", looptest.OpenAIModelNotFound, loop.FailModelNotFound, "model_not_found", "does not exist"},
		{"OpenAI context", looptest.OpenAIContextLength, loop.FailContextLength, "context_length_exceeded", "maximum context length is 8192"},
		{"OpenAI 500", looptest.OpenAIServerError, loop.FailTransient, "server_error", "The server had an error"},
		{"DeepSeek reasoning", looptest.DeepSeekReasoningRequired, loop.FailBadRequest, "invalid_request_error", "reasoning_content in the thinking mode"},
		{"DeepSeek balance", looptest.DeepSeekInsufficientBalance, loop.FailQuota, "invalid_request_error", "Insufficient Balance"},
		{"DeepSeek busy", looptest.DeepSeekBusy, loop.FailTransient, "server_busy", "Server overloaded"},
		{"Ollama tools", looptest.OllamaNoTools, loop.FailNoTools, "api_error", "does not support tools"},
		{"Ollama model", looptest.OllamaModelNotFound, loop.FailModelNotFound, "api_error", "try pulling it first"},
		{"Groq tool use", looptest.GroqToolUseFailed, loop.FailToolFormat, "tool_use_failed", "Failed to call a function"},
		{"Groq rate limit", looptest.GroqRateLimit, loop.FailTransient, "rate_limit_exceeded", "Please try again in 1s"},
		{"OpenRouter credits", looptest.OpenRouterNoCredits, loop.FailQuota, "", "Insufficient credits"},
		{"OpenRouter tools", looptest.OpenRouterNoToolEndpoints, loop.FailNoTools, "", "No endpoints found that support tool use"},
		{"OpenRouter upstream", looptest.OpenRouterUpstreamError, loop.FailTransient, "502", "Provider returned error (Scripted: upstream connect error)"},
		{"vLLM context", looptest.VLLMContextLength, loop.FailContextLength, "BadRequestError", "maximum context length is 32768"},
		{"vLLM tools", looptest.VLLMNoAutoToolChoice, loop.FailNoTools, "BadRequestError", "--enable-auto-tool-choice"},
		{"Gemini context", looptest.GeminiContextLength, loop.FailContextLength, "INVALID_ARGUMENT", "exceeds the maximum number of tokens allowed"},
		{"llama.cpp context", looptest.LlamaCppContextLength, loop.FailContextLength, "exceed_context_size_error", "exceeds the available context size"},
		{"llama.cpp context, older", looptest.LlamaCppOldContextLength, loop.FailContextLength, "server_error", "exceeds the available context size"},
		{"xAI context", looptest.XAIContextLength, loop.FailContextLength, "", "maximum prompt length is 131072"},
		{"TGI context", looptest.TGIContextLength, loop.FailContextLength, "", "must be <= 4096"},
		{"Mistral context", looptest.MistralContextLength, loop.FailContextLength, "invalid_request_message_error", "too large for model with 32768"},
		{"Gemini key", looptest.GeminiInvalidKey, loop.FailAuth, "INVALID_ARGUMENT", "API key not valid"},
		{"Gemini signature", looptest.GeminiMissingSignature, loop.FailBadRequest, "INVALID_ARGUMENT", "missing a thought_signature"},
		{"Anthropic model", looptest.AnthropicModelNotFound, loop.FailModelNotFound, "not_found_error", "model: claude-sonnet-9"},
		{"plain text", looptest.Step{Status: 502, Body: "<html>Bad Gateway</html>"}, loop.FailTransient, "", "<html>Bad Gateway</html>"},
	}
	for _, c := range cases {
		status := c.step.Status
		e := m.modelError(status, []byte(c.step.Body))
		if e.Kind != c.kind || e.Code != c.code || !strings.Contains(e.Message, c.words) || e.Status != status {
			t.Errorf("%s: got kind %s, code %q, message %q; want %s, %q, words %q", c.name, e.Kind, e.Code, e.Message, c.kind, c.code, c.words)
		}
		if g := c.step; c.kind == loop.FailToolFormat && !strings.Contains(e.Generation, "<function=sandbox_list_files") {
			t.Errorf("%s: the failed generation is lost: %q (%s)", c.name, e.Generation, g.Body)
		}
	}
}

// TestOverflowWordings: every row of the overflow table is recognised, by its words with its status, and a
// message with none of them is not an overflow.
func TestOverflowWordings(t *testing.T) {
	for _, o := range contextOverflow {
		status, _ := strconv.Atoi(o.status)
		msg := "the provider says " + o.words + " 4096 tokens"
		if !isOverflow(status, "", strings.ToLower(msg)) {
			t.Errorf("%s: %q (%s) is not recognised", o.provider, o.words, o.status)
		}
	}
	if isOverflow(400, "invalid_request_error", "messages: unexpected role 'user' after role 'tool'") {
		t.Error("an ordinary 400 taken for an overflow")
	}
}

// The hint that asks whether the URL is the API root goes only with an answer that is no chat API's: not with a
// refused key or an unknown model, not with a JSON refusal of the request.
func TestTheAPIRootHintOnlyWhereItFits(t *testing.T) {
	m, err := New(Config{Model: "scripted", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		step looptest.Step
		root bool
	}{
		{looptest.GeminiInvalidKey, false}, {looptest.AnthropicModelNotFound, false}, {looptest.GeminiMissingSignature, false},
		{looptest.Step{Status: 404, Body: "404 page not found"}, true},
	} {
		e := m.modelError(c.step.Status, []byte(c.step.Body))
		if got := strings.Contains(e.Hint, "API root"); got != c.root {
			t.Errorf("%.80s: hint %q", c.step.Body, e.Hint)
		}
		if strings.HasPrefix(e.Message, "[") || strings.HasPrefix(e.Message, "{") {
			t.Errorf("the provider's words, not its body: %q", e.Message)
		}
	}
}
