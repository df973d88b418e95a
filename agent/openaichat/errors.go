package openaichat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/goalbox/goalbox/agent/loop"
)

// errorBody is what a provider sends when it fails. OpenAI, DeepSeek, Groq, Ollama and OpenRouter nest it under
// "error" (OpenRouter with a numeric code, some servers as a bare string); vLLM sends it as the top-level object.
type errorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Status  string          `json:"status"` // Google's: INVALID_ARGUMENT, RESOURCE_EXHAUSTED
	Details []struct {
		Reason string `json:"reason"` // Google's: API_KEY_INVALID
	} `json:"details"`
	FailedGeneration string `json:"failed_generation"`
	Metadata         struct {
		Raw          json.RawMessage `json:"raw"`
		ProviderName string          `json:"provider_name"`
	} `json:"metadata"`
}

// parseError reads a provider's error from a body; ok is false when the body holds none. Gemini's
// OpenAI-compatible endpoint sends a list of them: the first is read.
func parseError(body []byte) (e errorBody, ok bool) {
	var list []json.RawMessage
	if json.Unmarshal(body, &list) == nil && len(list) > 0 {
		body = list[0]
	}
	var outer struct {
		Error  json.RawMessage `json:"error"`
		Object string          `json:"object"`
		errorBody
	}
	if json.Unmarshal(body, &outer) != nil {
		return e, false
	}
	switch {
	case len(outer.Error) > 0 && outer.Error[0] == '{':
		return e, json.Unmarshal(outer.Error, &e) == nil && (e.Message != "" || len(e.Code) > 0)
	case len(outer.Error) > 0 && outer.Error[0] == '"':
		return e, json.Unmarshal(outer.Error, &e.Message) == nil
	case outer.Object == "error" || (outer.Message != "" && len(outer.Code) > 0):
		return outer.errorBody, true
	}
	return e, false
}

// code is the provider's code as text, whether it sent a string or a number.
func (e errorBody) code() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(e.Code, &n) == nil {
		return n.String()
	}
	return ""
}

// modelError builds the loop's error from a failed response: its status, its body, the request's model and URL.
func (m *Model) modelError(status int, body []byte) *loop.ModelError {
	e, ok := parseError(body)
	me := &loop.ModelError{Status: status, Code: e.code(), Message: e.Message, Generation: e.FailedGeneration}
	if me.Code == strconv.Itoa(status) {
		me.Code = "" // OpenRouter and vLLM repeat the status as the code
	}
	if e.Type != "" && me.Code == "" {
		me.Code = e.Type
	}
	if e.Status != "" && (me.Code == "" || me.Code == strconv.Itoa(status)) {
		me.Code = e.Status
	}
	codes := me.Code + " " + e.Type
	for _, d := range e.Details {
		codes += " " + strings.ToLower(d.Reason)
	}
	if raw := strings.Trim(string(e.Metadata.Raw), `"`); raw != "" && raw != "null" {
		me.Message += " (" + e.Metadata.ProviderName + ": " + shortText(raw, 300) + ")"
	}
	if !ok {
		me.Message = shortText(strings.TrimSpace(string(body)), 300)
		if me.Message == "" {
			me.Message = http.StatusText(status)
		}
	}
	me.Kind = classify(status, codes, strings.ToLower(me.Message))
	me.Hint = m.hint(me, ok)
	return me
}

// classify sorts a failure by what can be done about it. The provider's code is trusted first, then its words
// (the compatible servers mostly have no codes), then the status.
func classify(status int, codes, msg string) string {
	has := func(subs ...string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(msg, s) || strings.Contains(codes, s) })
	}
	switch {
	case has("tool_use_failed"):
		return loop.FailToolFormat
	case has("insufficient_quota", "exceeded your current quota", "insufficient balance", "insufficient credits", "billing") || status == http.StatusPaymentRequired:
		return loop.FailQuota
	case isOverflow(status, codes, msg):
		return loop.FailContextLength
	case has("does not support tools", "support tool use", "tool choice requires", "tools are not supported", "does not support function", "tool calling is not supported"):
		return loop.FailNoTools
	case status == http.StatusUnauthorized || status == http.StatusForbidden || has("invalid_api_key", "authentication_error", "api_key_invalid", "api key not valid"):
		return loop.FailAuth
	case has("model_not_found") || (strings.Contains(msg, "model") && (has("not found", "not_found", "does not exist"))):
		return loop.FailModelNotFound
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooEarly ||
		status == http.StatusTooManyRequests || status >= 500 || status == http.StatusOK:
		return loop.FailTransient
	}
	return loop.FailBadRequest
}

// hint says what the person can do; jsonBody is false when the server did not answer like a chat API at all.
func (m *Model) hint(e *loop.ModelError, jsonBody bool) string {
	switch e.Kind {
	case loop.FailAuth:
		return fmt.Sprintf("the server at %s refused the key: check OPENAI_API_KEY", m.baseURL)
	case loop.FailQuota:
		return "the account is out of quota or credit: add some or use another key (asking again cannot help)"
	case loop.FailModelNotFound:
		return fmt.Sprintf("the server at %s has no model %q: check -model (Ollama: ollama pull %s)", m.baseURL, m.model, m.model)
	case loop.FailNoTools:
		return fmt.Sprintf("%s has no tool calling here: -tool-mode text describes the tools in the prompt instead", m.model)
	case loop.FailContextLength:
		return "the conversation is over the model's context: lower -context-bytes"
	case loop.FailTransient:
		return "the server kept failing: try again later, or give -retry-window more time"
	}
	if e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed || !jsonBody {
		return fmt.Sprintf("is %s the API root (it usually ends in /v1)? POST %s/chat/completions answered like no chat API", m.baseURL, m.baseURL)
	}
	return ""
}

func shortText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
