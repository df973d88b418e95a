package openaichat

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goalbox/goalbox/agent/loop"
)

// The request as sent to /chat/completions. Only what the agent uses is here; every compatible server reads it.
// The tools come before the messages, as chat templates render them, so that the bytes two requests share at
// their start are the prompt they share.
type chatRequest struct {
	Model         string         `json:"model"`
	Tools         []wireTool     `json:"tools,omitempty"`
	Messages      []wireMessage  `json:"messages"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	// OpenAI's own API wants max_completion_tokens (its reasoning models refuse max_tokens); the compatible
	// servers know max_tokens.
	MaxTokens           int `json:"max_tokens,omitempty"`
	MaxCompletionTokens int `json:"max_completion_tokens,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is always a string, empty beside tool calls: some servers refuse a null content.
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Reasoning        string         `json:"reasoning,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	// Images make the content a list of parts: the text, then each image as an image_url part with a data: URL
	// (OpenAI's format for a user message; vLLM, Ollama, LM Studio and OpenRouter read it too).
	Images []loop.Image `json:"-"`
	// Extra is what the provider sent beside an assistant message's known fields, sent back as it came (extra.go).
	Extra json.RawMessage `json:"-"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// MarshalJSON sends the content as a string, or as parts when the message carries images.
func (w wireMessage) MarshalJSON() ([]byte, error) {
	type plain wireMessage // without this method
	if len(w.Images) == 0 {
		b, err := json.Marshal(plain(w))
		if err != nil {
			return nil, err
		}
		return withExtra(b, w.Extra)
	}
	parts := []contentPart{{Type: "text", Text: w.Content}}
	for _, img := range w.Images {
		parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + img.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}})
	}
	return json.Marshal(struct {
		plain
		Content []contentPart `json:"content"` // the shallower field wins over plain's
	}{plain(w), parts})
}

type wireToolCall struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function wireFunction    `json:"function"`
	Extra    json.RawMessage `json:"-"` // what the provider sent beside these, sent back as it came (extra.go)
}

// MarshalJSON sends the call with the provider's own fields after it.
func (c wireToolCall) MarshalJSON() ([]byte, error) {
	type plain wireToolCall // without this method
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	return withExtra(b, c.Extra)
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// toWire builds the request body for msgs and tools. With no tools (the text tool mode) tool calls are written
// into the assistant's content as Hermes <tool_call> blocks and results are sent as user messages in
// <tool_response> blocks, consecutive ones together: a server without tool calling has no tool role.
func (m *Model) toWire(msgs []loop.Message, tools []loop.Tool, stream bool) (chatRequest, error) {
	req := chatRequest{Model: m.model}
	if stream {
		req.Stream, req.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	if m.maxOutput > 0 {
		if m.openAI {
			req.MaxCompletionTokens = m.maxOutput
		} else {
			req.MaxTokens = m.maxOutput
		}
	}
	for _, t := range tools {
		if !json.Valid(t.InputSchema) || !strings.HasPrefix(strings.TrimSpace(string(t.InputSchema)), "{") {
			return req, fmt.Errorf("tool %s: input schema is not a JSON object", t.Name)
		}
		var wt wireTool
		wt.Type, wt.Function.Name, wt.Function.Description, wt.Function.Parameters = "function", t.Name, t.Description, t.InputSchema
		req.Tools = append(req.Tools, wt)
	}
	text := len(tools) == 0
	for _, msg := range msgs {
		w := wireMessage{Role: msg.Role, Content: msg.Content, Images: msg.Images}
		switch {
		case msg.Role == loop.RoleTool && text:
			block := "<tool_response>\n" + msg.Content + "\n</tool_response>"
			if lastIsToolResponse(req.Messages) {
				req.Messages[len(req.Messages)-1].Content += "\n" + block
				continue
			}
			w = wireMessage{Role: loop.RoleUser, Content: block}
		case msg.Role == loop.RoleUser && text && len(msg.Images) > 0 && lastIsToolResponse(req.Messages):
			// The images of the results just sent join them: templates that want user and assistant to alternate
			// refuse two user messages in a row.
			last := &req.Messages[len(req.Messages)-1]
			last.Content += "\n" + msg.Content
			last.Images = append(last.Images, msg.Images...)
			continue
		case msg.Role == loop.RoleTool:
			w.ToolCallID = msg.ToolCallID
		case msg.Role == loop.RoleAssistant:
			if !text {
				w.Extra = json.RawMessage(msg.Extra)
			}
			// Thinking goes back on tool-calling turns, in the field it came in: DeepSeek refuses such a turn
			// without it. A reply that ended a turn needs none, and some servers refuse the field (noReasoning).
			switch {
			case len(msg.ToolCalls) == 0 || m.noReasoning.Load():
			case msg.ReasoningField == "reasoning":
				w.Reasoning = msg.Reasoning
			default:
				w.ReasoningContent = msg.Reasoning
			}
			for _, tc := range msg.ToolCalls {
				if text {
					w.Content += "\n" + HermesCall(tc)
					continue
				}
				w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}, Extra: json.RawMessage(tc.Extra)})
			}
			w.Content = strings.TrimPrefix(w.Content, "\n")
		}
		req.Messages = append(req.Messages, w)
	}
	req.Messages = sequence(req.Messages)
	return req, nil
}

// HermesCall writes one call as the Hermes format's block: {"name": ..., "arguments": {...}} between tags.
// Arguments that are not JSON (a malformed call replayed) go as a string, so the block stays JSON.
func HermesCall(tc loop.ToolCall) string {
	args := json.RawMessage(tc.Arguments)
	if !json.Valid(args) {
		b, _ := json.Marshal(tc.Arguments)
		args = b
	}
	b, _ := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{tc.Name, args})
	return "<tool_call>\n" + string(b) + "\n</tool_call>"
}

// lastIsToolResponse says the last message is the text tool mode's results (a user message of <tool_response> blocks).
func lastIsToolResponse(msgs []wireMessage) bool {
	n := len(msgs)
	return n > 0 && msgs[n-1].Role == loop.RoleUser && strings.HasSuffix(msgs[n-1].Content, "</tool_response>")
}
