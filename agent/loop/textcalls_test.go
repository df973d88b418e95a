package loop

import (
	"strings"
	"testing"
)

func TestTextCallsAreRead(t *testing.T) {
	known := map[string]bool{"read": true, "write": true}
	cases := []struct {
		name, content string
		want          []ToolCall
		rest, problem string
	}{
		{"hermes", "Reading.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
			[]ToolCall{{Name: "read", Arguments: `{"path":"a"}`}}, "Reading.", ""},
		{"two blocks, one unclosed", "<tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"write\",\"parameters\":{\"x\":1}}",
			[]ToolCall{{Name: "read", Arguments: `{}`}, {Name: "write", Arguments: `{"x":1}`}}, "", ""},
		{"two calls in one block", "<tool_call>\n{\"name\":\"read\",\"arguments\":{}}\n{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}\n</tool_call>",
			[]ToolCall{{Name: "read", Arguments: `{}`}, {Name: "read", Arguments: `{"path":"b"}`}}, "", ""},
		{"bare fenced", "```json\n{\"name\": \"write\", \"arguments\": {\"path\": \"a\"}}\n```",
			[]ToolCall{{Name: "write", Arguments: `{"path":"a"}`}}, "", ""},
		{"bare JSON naming no tool", `{"name": "ok", "arguments": {}}`, nil, `{"name": "ok", "arguments": {}}`, ""},
		{"prose", "All done: the tests pass.", nil, "All done: the tests pass.", ""},
		{"broken block", "<tool_call>{\"name\": \"read\", </tool_call>", nil, "", "is not a call: not JSON"},
		{"no name", "<tool_call>{\"arguments\": {}}</tool_call>", nil, "", `no "name"`},
	}
	for _, c := range cases {
		calls, rest, problem := parseTextCalls(c.content, known)
		if c.problem != "" {
			if !strings.Contains(problem, c.problem) || calls != nil {
				t.Errorf("%s: problem %q, want one containing %q", c.name, problem, c.problem)
			}
			continue
		}
		if problem != "" || rest != c.rest || len(calls) != len(c.want) {
			t.Errorf("%s: calls %+v, rest %q, problem %q", c.name, calls, rest, problem)
			continue
		}
		for i := range calls {
			if calls[i] != c.want[i] {
				t.Errorf("%s: call %d = %+v, want %+v", c.name, i, calls[i], c.want[i])
			}
		}
	}
}
