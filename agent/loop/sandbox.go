package loop

import (
	"context"
	"encoding/json"
)

// ToolResult is what a tool call returned.
type ToolResult struct {
	// IsError is the tool's own verdict: bad input, a refusal, a missing file. The model sees it and can react.
	IsError bool `json:"is_error,omitempty"`
	// Structured is the result's structuredContent, verbatim, when the tool gave one.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Text is the text content (for an error, the message).
	Text string `json:"text,omitempty"`
	// Decoded is Structured as the sandbox's client already decoded it, when it did, so that compacting it for the
	// model does not decode it again. Compacting may change it; it is not part of the record.
	Decoded any `json:"-"`
	// Images are the result's image content items (sandbox_read_file of a PNG, JPEG, GIF or WebP), in order. They
	// reach a model that takes images as image parts (images.go); others see the structured result alone.
	Images []Image `json:"images,omitempty"`
}

// Image is one image: its bytes (base64 in JSON, as in the transcript) and MIME type.
type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

// Sandbox is where tools run. Call's error means the sandbox itself failed (a server is gone); a tool that fails
// is a ToolResult with IsError.
type Sandbox interface {
	// Tools are the tools on offer, discovered at connect time.
	Tools() []Tool
	// Call runs one tool; args is a JSON object.
	Call(ctx context.Context, name string, args json.RawMessage) (ToolResult, error)
}
