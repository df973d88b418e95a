package openaichat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
)

func TestTakesImages(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-4o": true, "gpt-4o-mini": true, "gpt-4o-2024-08-06": true, "gpt-4.1-mini": true, "gpt-5-nano": true, "o3": true,
		"openai/gpt-4o": true, "llava:13b": true, "qwen2.5vl:7b": true, "llama3.2-vision": true, "anthropic/claude-sonnet-4": true,
		"gemma3:27b": true, "gemini-2.5-flash": true,
		"o3-mini": false, "o1-mini": false, "gpt-4o-audio-preview": false, "gemma3:1b": false, "deepseek-chat": false,
		"qwen2.5-coder:14b": false, "gpt-3.5-turbo": false, "gpt-4o4": false, "llama3.1:8b": false, "scripted": false,
	} {
		if got := TakesImages(model); got != want {
			t.Errorf("TakesImages(%q) = %v, want %v", model, got, want)
		}
	}
}

// TestImagesGoAsContentParts: a message with images is sent with content as a list (its text, then each image as
// an image_url part with a data: URL); one without stays a string.
func TestImagesGoAsContentParts(t *testing.T) {
	m, err := New(Config{Model: "gpt-4o", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := m.toWire([]loop.Message{
		{Role: loop.RoleSystem, Content: "sys"},
		{Role: loop.RoleUser, Content: "look:", Images: []loop.Image{{MIMEType: "image/png", Data: []byte("\x89PNG\r\n")}, {MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8}}}},
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"role":"system","content":"sys"}`,
		`"content":[{"type":"text","text":"look:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9g="}}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("request should hold %s:\n%s", want, b)
		}
	}
	if strings.Count(string(b), `"content"`) != 2 {
		t.Errorf("one content field per message: %s", b)
	}
}

// TestImagesJoinTheToolResponsesInTextMode: with tools described in the prompt, results are a user message of
// <tool_response> blocks, and the images that follow them join it rather than make a second user message in a row.
func TestImagesJoinTheToolResponsesInTextMode(t *testing.T) {
	m, err := New(Config{Model: "llava", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := m.toWire([]loop.Message{
		{Role: loop.RoleSystem, Content: "sys"},
		{Role: loop.RoleUser, Content: "goal"},
		{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: "1", Name: "sandbox_read_file", Arguments: `{"path":"a.png"}`}}},
		{Role: loop.RoleTool, ToolCallID: "1", Content: `{"path":"a.png"}`},
		{Role: loop.RoleUser, Content: "The image(s):", Images: []loop.Image{{MIMEType: "image/png", Data: []byte("png")}}},
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(req.Messages); n != 4 || req.Messages[3].Role != "user" || len(req.Messages[3].Images) != 1 ||
		!strings.HasPrefix(req.Messages[3].Content, "<tool_response>") || !strings.HasSuffix(req.Messages[3].Content, "The image(s):") {
		t.Errorf("want system, goal, the call, one user message of the response and its image; got %+v", req.Messages)
	}
}
