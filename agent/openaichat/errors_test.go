package openaichat

import (
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
