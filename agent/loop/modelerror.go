package loop

import "fmt"

// Kinds of model failure. The loop answers some by changing what it sends; the rest end the run with the
// provider's words and a hint.
const (
	// FailTransient: the server kept failing (5xx, 429, a body cut or stalled) for the whole retry window.
	FailTransient = "transient"
	// FailContextLength: the request is over the model's context; the loop shrinks the conversation and asks once more.
	FailContextLength = "context_length"
	// FailToolFormat: the server could not parse the tool call the model wrote (Groq's tool_use_failed); the
	// loop sends that back to the model as a format error.
	FailToolFormat = "tool_format"
	// FailNoTools: the server or the model has no tool calling; the loop switches to the text tool mode.
	FailNoTools = "no_tools"
	// FailAuth, FailQuota, FailModelNotFound and FailBadRequest cannot heal by asking again.
	FailAuth          = "auth"
	FailQuota         = "quota"
	FailModelNotFound = "model_not_found"
	FailBadRequest    = "bad_request"
)

// ModelError is a model server's refusal or failure, as the adapter understood it.
type ModelError struct {
	Kind string `json:"kind"`
	// Status is the HTTP status (200 for an error inside a successful response); Code and Message are the
	// provider's own code and words.
	Status  int    `json:"status,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	// Generation is the model's text the server could not parse as a tool call (Groq's failed_generation).
	Generation string `json:"generation,omitempty"`
	// Hint says what the person can do about it.
	Hint string `json:"hint,omitempty"`
	// Attempts is how many requests were made before giving up.
	Attempts int `json:"attempts,omitempty"`
}

func (e *ModelError) Error() string {
	s := e.Message
	switch {
	case e.Status != 0 && e.Code != "":
		s = fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	case e.Status != 0:
		s = fmt.Sprintf("%d: %s", e.Status, e.Message)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}
