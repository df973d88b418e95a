package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Tool calls written as text. Models without native tool calling (many Ollama and llama.cpp models, and any model
// in the text tool mode) write Hermes blocks, the format the Qwen and Nous models are trained on:
//
//	<tool_call>
//	{"name": "sandbox_read_file", "arguments": {"path": "a.go"}}
//	</tool_call>
//
// and some write a bare JSON call as their whole content. Taking either for "done" would end the run on the
// model's first step, so the loop reads them as calls.

const (
	openTag  = "<tool_call>"
	closeTag = "</tool_call>"
)

// textCall is one call as written in text: "arguments" (or "parameters") an object, or a string holding one.
type textCall struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

// parseTextCalls finds the calls written in content. It returns them and the content without them; problem,
// when not empty, says why a call could not be read, for the model. A bare JSON call counts only when it names a
// known tool, so a reply that merely shows some JSON is not run.
func parseTextCalls(content string, known map[string]bool) (calls []ToolCall, rest, problem string) {
	if !strings.Contains(content, openTag) {
		if c, ok := bareCall(content, known); ok {
			return []ToolCall{c}, "", ""
		}
		return nil, content, ""
	}
	var kept strings.Builder
	s := content
	for {
		i := strings.Index(s, openTag)
		if i < 0 {
			kept.WriteString(s)
			break
		}
		kept.WriteString(s[:i])
		s = s[i+len(openTag):]
		body := s
		if j := strings.Index(s, closeTag); j >= 0 { // a model may stop before the closing tag
			body, s = s[:j], s[j+len(closeTag):]
		} else {
			s = ""
		}
		cs, err := decodeTextCalls(body)
		if err != nil {
			return nil, content, fmt.Sprintf("the <tool_call> block %q is not a call: %v", keepEnds(strings.TrimSpace(body), 200), err)
		}
		calls = append(calls, cs...)
	}
	return calls, strings.TrimSpace(kept.String()), ""
}

// bareCall reads content that is nothing but one JSON call (perhaps in a code fence) to a known tool.
func bareCall(content string, known map[string]bool) (ToolCall, bool) {
	body := unfence(content)
	if !strings.HasPrefix(body, "{") || !strings.Contains(body, `"name"`) {
		return ToolCall{}, false
	}
	cs, err := decodeTextCalls(body)
	if err != nil || len(cs) != 1 || !known[cs[0].Name] {
		return ToolCall{}, false
	}
	return cs[0], true
}

// decodeTextCalls reads the calls in one block: one JSON object, or several one after the other (some models put
// all their calls in one block).
func decodeTextCalls(body string) ([]ToolCall, error) {
	d := json.NewDecoder(strings.NewReader(unfence(body)))
	var calls []ToolCall
	for {
		var tc textCall
		if err := d.Decode(&tc); err != nil {
			return nil, fmt.Errorf("not JSON (%v)", err)
		}
		c, err := tc.call()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
		if !d.More() {
			return calls, nil
		}
	}
}

func (tc textCall) call() (ToolCall, error) {
	if tc.Name == "" {
		return ToolCall{}, fmt.Errorf(`no "name"`)
	}
	args := tc.Arguments
	if len(args) == 0 {
		args = tc.Parameters
	}
	var s string
	switch {
	case len(args) == 0 || string(args) == "null":
		args = json.RawMessage("{}")
	case json.Unmarshal(args, &s) == nil: // arguments sent as a JSON string, as the API does
		args = json.RawMessage(s)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) == nil {
		args = compact.Bytes()
	}
	return ToolCall{Name: tc.Name, Arguments: string(args)}, nil
}

// unfence strips a Markdown code fence around s.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if nl := strings.IndexByte(s, '\n'); nl >= 0 {
		s = s[nl+1:] // the language tag
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}
