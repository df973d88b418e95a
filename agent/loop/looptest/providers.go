package looptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Real providers' answers, as their APIs send them (bodies as documented or as seen from the servers; the
// wording is theirs, so a test can check that the person gets the provider's own words).
var (
	// OpenAI.
	OpenAIQuota = Step{Status: http.StatusTooManyRequests,
		Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}
	OpenAIRateLimit = Step{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "1"},
		Body: `{"error":{"message":"Rate limit reached for gpt-4.1-mini in organization org-test on tokens per min (TPM): Limit 200000, Used 199000, Requested 2400. Please try again in 1s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`}
	OpenAIInvalidKey = Step{Status: http.StatusUnauthorized,
		Body: `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}
	OpenAIModelNotFound = Step{Status: http.StatusNotFound,
		Body: `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`}
	OpenAIContextLength = Step{Status: http.StatusBadRequest,
		Body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9321 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
	OpenAIServerError = Step{Status: http.StatusInternalServerError,
		Body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`}

	// DeepSeek.
	DeepSeekReasoningRequired = Step{Status: http.StatusBadRequest,
		Body: `{"error":{"message":"The reasoning_content in the thinking mode must be passed back to the API.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`}
	DeepSeekInsufficientBalance = Step{Status: http.StatusPaymentRequired,
		Body: `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`}
	DeepSeekAuth = Step{Status: http.StatusUnauthorized,
		Body: `{"error":{"message":"Authentication Fails, Your api key: ****test is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`}
	DeepSeekBusy = Step{Status: http.StatusServiceUnavailable,
		Body: `{"error":{"message":"Server overloaded, please try again later.","type":"server_error","param":null,"code":"server_busy"}}`}

	// Ollama's OpenAI-compatible API.
	OllamaNoTools = Step{Status: http.StatusBadRequest,
		Body: `{"error":{"message":"registry.ollama.ai/library/gemma2:2b does not support tools","type":"api_error","param":null,"code":null}}`}
	OllamaModelNotFound = Step{Status: http.StatusNotFound,
		Body: `{"error":{"message":"model \"qwen2.5-coder:7b\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`}

	// Groq.
	GroqToolUseFailed = Step{Status: http.StatusBadRequest,
		Body: `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=sandbox_list_files{\"path\": \".\"}</function>"}}`}
	GroqRateLimit = Step{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "1"},
		Body: `{"error":{"message":"Rate limit reached for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_test`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 12000, Used 11000, Requested 2000. Please try again in 1s.","type":"tokens","code":"rate_limit_exceeded"}}`}

	// OpenRouter: a numeric code in the error, and failures of the upstream provider.
	OpenRouterNoCredits = Step{Status: http.StatusPaymentRequired,
		Body: `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`}
	OpenRouterNoToolEndpoints = Step{Status: http.StatusNotFound,
		Body: `{"error":{"message":"No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing","code":404}}`}
	OpenRouterUpstreamError = Step{Status: http.StatusOK,
		Body: `{"error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"Scripted","raw":"upstream connect error"}}}`}

	// vLLM: the error is the top-level object.
	VLLMContextLength = Step{Status: http.StatusBadRequest,
		Body: `{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 33410 tokens (33410 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`}
	VLLMNoAutoToolChoice = Step{Status: http.StatusBadRequest,
		Body: `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`}
)

// Context overflows as each provider words them (openaichat/overflow.go reads them all).
var (
	GeminiContextLength = Step{Status: http.StatusBadRequest,
		Body: `[{"error":{"code":400,"message":"The input token count (1290337) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`}
	LlamaCppContextLength = Step{Status: http.StatusBadRequest,
		Body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9120,"n_ctx":8192}}`}
	// Before the 400 (llama.cpp builds of 2024 and early 2025), the same overflow was a 500.
	LlamaCppOldContextLength = Step{Status: http.StatusInternalServerError,
		Body: `{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"server_error"}}`}
	XAIContextLength = Step{Status: http.StatusBadRequest,
		Body: `{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 140122 tokens."}`}
	TGIContextLength = Step{Status: http.StatusUnprocessableEntity,
		Body: "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` tokens and 512 `max_new_tokens`\",\"error_type\":\"validation\"}"}
	MistralContextLength = Step{Status: http.StatusBadRequest,
		Body: `{"object":"error","message":"Prompt contains 40129 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_message_error","param":null,"code":null}`}
)

// Gemini's and Anthropic's other refusals, through their OpenAI-compatible endpoints.
var (
	GeminiInvalidKey = Step{Status: http.StatusBadRequest,
		Body: `[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}]`}
	AnthropicModelNotFound = Step{Status: http.StatusNotFound,
		Body: `{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonnet-9"}}`}
)

// UniqueToolCallIDs is OpenAI's check that no two tool messages answer the same call ID.
func UniqueToolCallIDs(req Request) *Step {
	seen := map[string]bool{}
	for i, m := range req.Messages {
		if m.Role != "tool" {
			continue
		}
		if seen[m.ToolCallID] {
			return &Step{Status: http.StatusBadRequest, Body: fmt.Sprintf(`{"error":{"message":"Invalid parameter: Duplicate value for 'tool_call_id' of '%s' in message[%d]. Please ensure all tool call IDs are unique.","type":"invalid_request_error","param":"messages.[%d].tool_call_id","code":null}}`, m.ToolCallID, i, i)}
		}
		seen[m.ToolCallID] = true
	}
	return nil
}

// ReasoningReplayed is DeepSeek's thinking mode with tools: every assistant message that called tools must come
// back with its reasoning_content.
func ReasoningReplayed(req Request) *Step {
	for _, m := range req.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && (m.ReasoningContent == nil || *m.ReasoningContent == "") {
			s := DeepSeekReasoningRequired
			return &s
		}
	}
	return nil
}

// NoReasoningField is a server that returns reasoning but refuses it in the messages it is sent, in Groq's words.
func NoReasoningField(req Request) *Step {
	for i, m := range req.Messages {
		if m.Reasoning != nil || m.ReasoningContent != nil {
			return &Step{Status: http.StatusBadRequest, Body: fmt.Sprintf(`{"error":{"message":"'messages.%d' : for 'role:assistant' the following must be satisfied[('messages.%d' : property 'reasoning' is unsupported, did you mean 'role'?)]","type":"invalid_request_error"}}`, i, i)}
		}
	}
	return nil
}

// NoTools is a model server without tool calling (many Ollama models): a request offering tools is refused.
func NoTools(req Request) *Step {
	if len(req.Tools) > 0 {
		s := OllamaNoTools
		return &s
	}
	return nil
}

// NoToolMessages is a chat template without a tool role: a request holding one is refused, as a text-only server
// would fail to render it.
func NoToolMessages(req Request) *Step {
	for _, m := range req.Messages {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			return &Step{Status: http.StatusBadRequest, Body: `{"object":"error","message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"BadRequestError","param":null,"code":400}`}
		}
	}
	return nil
}

// Hermes writes calls as the Qwen and Nous models do without native tool calling: one <tool_call> block each, in
// the content.
func Hermes(text string, calls ...Call) string {
	var b strings.Builder
	b.WriteString(text)
	for _, c := range calls {
		fmt.Fprintf(&b, "\n<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", c.Name, c.Args)
	}
	return b.String()
}

// ImagesOnlyInUserMessages is OpenAI's rule for images in chat: image_url parts are accepted in user messages only
// (a tool message cannot carry one).
func ImagesOnlyInUserMessages(req Request) *Step {
	for i, m := range req.Messages {
		if m.Role != "user" && len(m.ImageURLs()) > 0 {
			return &Step{Status: http.StatusBadRequest, Body: fmt.Sprintf(`{"error":{"message":"Invalid 'messages[%d]'. Image URLs are only allowed for messages with role 'user', but this message with role '%s' contains an image URL.","type":"invalid_request_error","param":"messages[%d]","code":"invalid_value"}}`, i, m.Role, i)}
		}
	}
	return nil
}

// GeminiMissingSignature is Gemini 3's refusal of a history whose function calls lost their thought signature;
// Gemini's OpenAI-compatible endpoint sends its errors as a list.
var GeminiMissingSignature = Step{Status: http.StatusBadRequest,
	Body: `[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call ` + "`default_api:sandbox_write_file`" + ` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}]`}

// GeminiSignedCalls are calls as Gemini 3 streams them: whole, in one chunk, each with an ID of Gemini's and its
// thought signature in extra_content.google.
func GeminiSignedCalls(signature string, calls ...Call) Step {
	var tcs []map[string]any
	for i, c := range calls {
		tcs = append(tcs, map[string]any{"id": fmt.Sprintf("function-call-%d", i+1), "type": "function", "index": i,
			"function":      map[string]any{"name": c.Name, "arguments": c.Args},
			"extra_content": map[string]any{"google": map[string]any{"thought_signature": signature}}})
	}
	return Step{Chunks: []string{chunk(map[string]any{"role": "assistant", "tool_calls": tcs}, "tool_calls")}}
}

// ThoughtSignaturesReplayed is Gemini 3's check: every function call of its own (IDs function-call-N) comes back
// with its thought signature.
func ThoughtSignaturesReplayed(req Request) *Step {
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			var extra struct {
				Google struct {
					ThoughtSignature string `json:"thought_signature"`
				} `json:"google"`
			}
			_ = json.Unmarshal(tc.ExtraContent, &extra)
			if strings.HasPrefix(tc.ID, "function-call-") && extra.Google.ThoughtSignature == "" {
				s := GeminiMissingSignature
				return &s
			}
		}
	}
	return nil
}

// NameInEveryChunk streams one call as MiniMax on NVIDIA NIM and Kimi on Fireworks do: its name (and ID and
// index) repeated in every chunk beside each piece of the arguments.
func NameInEveryChunk(c Call) Step {
	var out []string
	for _, piece := range thirds(c.Args) {
		out = append(out, chunk(map[string]any{"tool_calls": []map[string]any{{"index": 0, "id": "call_mm_1", "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": piece}}}}, nil))
	}
	return Step{Chunks: append(out, chunk(map[string]any{}, "tool_calls"))}
}

// NoIndexCalls streams calls as proxies that drop the index do: each call's name, then its arguments in pieces,
// every piece with the same id (empty: none at all).
func NoIndexCalls(id string, calls ...Call) Step {
	var out []string
	for _, c := range calls {
		out = append(out, chunk(map[string]any{"tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, piece := range thirds(c.Args) {
			out = append(out, chunk(map[string]any{"tool_calls": []map[string]any{{"id": id, "function": map[string]any{"arguments": piece}}}}, nil))
		}
	}
	return Step{Chunks: append(out, chunk(map[string]any{}, "tool_calls"))}
}

// WholeCallsSameID is a completion (not streamed) listing calls without an index, all with the same id.
func WholeCallsSameID(id string, calls ...Call) Step {
	var tcs []map[string]any
	for _, c := range calls {
		tcs = append(tcs, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion", "model": "scripted",
		"choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
	return Step{Body: string(b)}
}

// chunk is one stream chunk of choice 0.
func chunk(delta map[string]any, finish any) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "scripted",
		"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	return string(b)
}

// thirds splits s in three pieces (fewer when it is short).
func thirds(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

// MistralRoles is the order Mistral's API (and the chat templates that want alternating turns: Gemma, Mistral v1
// on vLLM or llama.cpp) checks: no two user messages in a row, no user right after a tool message, each tool
// message answering a call of the assistant message before it, as many answers as calls, and tool-call IDs of
// nine letters and digits.
func MistralRoles(req Request) *Step {
	refuse := func(msg string) *Step {
		b, _ := json.Marshal(msg)
		return &Step{Status: http.StatusBadRequest, Body: `{"object":"error","message":` + string(b) + `,"type":"invalid_request_message_error","param":null,"code":"3230"}`}
	}
	pending := map[string]bool{}
	prev := ""
	for i, m := range req.Messages {
		switch {
		case m.Role == "user" && prev == "user":
			return refuse(fmt.Sprintf("Conversation roles must alternate user/assistant/user/assistant/... (messages %d and %d are both user)", i-1, i))
		case m.Role == "user" && prev == "tool":
			return refuse("Unexpected role 'user' after role 'tool'")
		case m.Role == "tool" && !pending[m.ToolCallID]:
			return refuse(fmt.Sprintf("Unexpected tool call id %s in tool results", m.ToolCallID))
		case m.Role != "tool" && len(pending) > 0:
			return refuse("Not the same number of function calls and responses")
		}
		delete(pending, m.ToolCallID)
		for _, tc := range m.ToolCalls {
			if !validMistralID(tc.ID) {
				return refuse(fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", tc.ID))
			}
			pending[tc.ID] = true
		}
		prev = m.Role
	}
	return nil
}

func validMistralID(id string) bool {
	if len(id) != 9 {
		return false
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
