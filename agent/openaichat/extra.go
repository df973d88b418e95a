package openaichat

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// What a provider sends beside the fields the agent reads — Gemini 3's extra_content.google.thought_signature on a
// tool call, OpenRouter's reasoning_details on a message, whatever the next vendor adds — goes back with the
// message or call as it came: providers refuse a history that lost them (Gemini: "Function call is missing a
// thought_signature"). It is kept as a JSON object (loop.Message.Extra, loop.ToolCall.Extra), so the transcript and
// -continue carry it too.

// Fields of an assistant message that the agent reads itself, or that belong to the answer only (OpenAI refuses
// annotations and audio sent back; a refusal is kept as the content).
var messageFields = []string{"role", "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call", "annotations", "audio"}

// Fields of a tool call the agent reads itself (index is the stream's numbering, not the call's).
var callFields = []string{"index", "id", "type", "function"}

// extraFields is the object raw without the known keys and without empty values (null, "", [], {}): nil when
// nothing is left.
func extraFields(raw []byte, known []string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	for k, v := range fields {
		if slices.Contains(known, k) || isEmptyJSON(v) {
			delete(fields, k)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	b, _ := json.Marshal(fields)
	return b
}

func isEmptyJSON(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", `""`, "[]", "{}":
		return true
	}
	return false
}

// mergeExtra adds a stream chunk's extra fields to those gathered so far: objects are merged key by key, arrays
// appended (OpenRouter streams reasoning_details as items), anything else taken from the later chunk.
func mergeExtra(a, b json.RawMessage) json.RawMessage {
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	var ao, bo map[string]json.RawMessage
	if json.Unmarshal(a, &ao) == nil && json.Unmarshal(b, &bo) == nil && ao != nil && bo != nil {
		for k, v := range bo {
			ao[k] = mergeExtra(ao[k], v)
		}
		m, _ := json.Marshal(ao)
		return m
	}
	var aa, ba []json.RawMessage
	if json.Unmarshal(a, &aa) == nil && json.Unmarshal(b, &ba) == nil && aa != nil && ba != nil {
		m, _ := json.Marshal(append(aa, ba...))
		return m
	}
	return b
}

// withExtra adds extra's fields to the JSON object obj, after its own, each one obj does not have already (the
// agent's own fields win: they are what the request means). obj's fields keep their order and bytes.
func withExtra(obj []byte, extra json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return obj, nil
	}
	var fields, have map[string]json.RawMessage
	if err := json.Unmarshal(extra, &fields); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(obj, &have); err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(fields))
	out := bytes.TrimRight(obj, " \n")
	out = append([]byte(nil), out[:len(out)-1]...) // without the closing brace
	for _, k := range keys {
		if _, ok := have[k]; ok {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(k)
		out = append(append(append(out, name...), ':'), fields[k]...)
	}
	return append(out, '}'), nil
}
