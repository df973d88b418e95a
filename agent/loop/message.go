// Package loop is the goalbox agent: a goal-driven implement → test → improve loop between a chat model and a
// sandbox. Run drives one goal to its end; the command in the parent folder and the benchmark runner are thin
// callers of it. The package owns the loop and what it is defined by: its interfaces (Model, Sandbox, Observer),
// its typed limits, the messages and events of a run, and two observers of those events (the Transcript that keeps
// them, the Progress lines that show them). It owns no model client (agent/openaichat) and no MCP client or server
// hosting (agent/sandbox).
//
// The loop keeps its own message types rather than a model SDK's, so the transcript format, the eliding of old
// output and the tests do not depend on one vendor's structs; the adapter in agent/openaichat translates at the edge.
package loop

import (
	"context"
	"encoding/json"
	"errors"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the conversation with the model.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Reasoning is an assistant's thinking as the server sent it, and ReasoningField the field it came in
	// (reasoning_content from DeepSeek, Qwen and vLLM; reasoning from OpenRouter and Ollama). It is kept and sent
	// back in that field: DeepSeek refuses a conversation whose tool-calling turns lost theirs.
	Reasoning      string `json:"reasoning,omitempty"`
	ReasoningField string `json:"reasoning_field,omitempty"`
	// Images go with a user message as image parts after its text (a vision model; images.go): the images of the
	// tool results just before it, which a tool message cannot carry in the OpenAI format.
	Images []Image `json:"images,omitempty"`
	// Elided is set once an old tool output was replaced by a short note to keep the conversation within budget.
	Elided bool `json:"elided,omitempty"`
	// Extra is what the provider sent beside an assistant message's known fields (OpenRouter's reasoning_details,
	// a vendor's signatures), as a JSON object; it goes back with the message as it came.
	Extra Extra `json:"extra,omitempty"`
}

// ToolCall is one function call requested by the model. Arguments is the model's text verbatim: it may be
// malformed JSON, which the loop reports back to the model as a tool error.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Extra is what the provider sent beside the call's id, type and function (Gemini 3's
	// extra_content.google.thought_signature, which it refuses a history without), as a JSON object; it goes
	// back with the call as it came.
	Extra Extra `json:"extra,omitempty"`
}

// Tool is a tool the model may call, as discovered from a server with tools/list.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Usage counts the tokens of one model call (or, summed, of a run).
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CachedTokens is the part of PromptTokens the server read from its prompt cache, when it says.
	CachedTokens int64 `json:"cached_tokens,omitempty"`
	// Estimated says the server reported no usage and the counts were estimated from the bytes sent and
	// received (about 4 bytes a token), so that token budgets still hold.
	Estimated bool `json:"estimated,omitempty"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// Reply is a model's answer to one request.
type Reply struct {
	Message Message
	Usage   Usage
	// Model is the model name the server reports having used, when it says.
	Model string
	// FinishReason is the server's reason for ending the reply (stop, tool_calls, length, ...).
	FinishReason string

	problem string // why calls written in the content could not be read (turn.go)
}

// Model is a chat model that can call tools. Complete must not keep msgs or tools after it returns. An error means
// no usable reply after any retries the implementation does; a *ModelError says what the server said, and the loop
// acts on its Kind (errors.go); any other error ends the run with StopModelError. With no tools (the text tool
// mode, textcalls.go) the model is sent the conversation's tool calls and results as text.
type Model interface {
	Complete(ctx context.Context, msgs []Message, tools []Tool) (Reply, error)
	// Name is the configured model name, for the transcript and the price table.
	Name() string
}

// Extra is a JSON object a provider sent beside the fields the agent knows, kept as text (so that messages stay
// comparable) and written into the transcript as the object itself.
type Extra string

func (e Extra) MarshalJSON() ([]byte, error) {
	if e == "" {
		return []byte("null"), nil
	}
	return []byte(e), nil
}

func (e *Extra) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*e = ""
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("extra fields must be a JSON object")
	}
	*e = Extra(b)
	return nil
}
