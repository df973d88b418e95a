package loop

import (
	"strings"
	"testing"
)

func TestResumeAnswersCallsAnInterruptedRunLeftOpen(t *testing.T) {
	calls := []ToolCall{{ID: "a", Name: "sandbox_run_command", Arguments: `{"command":"sleep 100"}`}, {ID: "b", Name: "sandbox_list_files", Arguments: `{}`}}
	events := []Event{
		{Type: "start", Goal: "g"},
		{Type: "message", Message: &Message{Role: RoleSystem, Content: "sys"}},
		{Type: "message", Message: &Message{Role: RoleUser, Content: "g"}},
		{Type: "model", Turn: 1, Message: &Message{Role: RoleAssistant}, Outcome: ReplyEmpty},
		{Type: "message", Message: &Message{Role: RoleUser, Content: "your reply was empty"}},
		{Type: "model", Turn: 2, Message: &Message{Role: RoleAssistant, ToolCalls: calls}},
		{Type: "tool", Turn: 2, Call: &calls[1], Result: &ToolResult{Structured: []byte(`{"entries":[]}`)}},
	}
	h, err := Resume(events, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range h.Messages {
		roles = append(roles, m.Role+":"+m.ToolCallID)
	}
	if got := strings.Join(roles, " "); got != "system: user: user: assistant: tool:b tool:a" {
		t.Fatalf("conversation %s: the empty reply is not replayed, the open call gets an answer after the others", got)
	}
	if !strings.Contains(h.Messages[5].Content, "interrupted") || h.Messages[4].Content != `{"entries":[]}` || h.Turns != 2 {
		t.Errorf("results: %q, %q, turns %d", h.Messages[4].Content, h.Messages[5].Content, h.Turns)
	}
	if _, err := Resume(events[:1], 1000); err == nil {
		t.Error("a transcript without a conversation should not resume")
	}
}
