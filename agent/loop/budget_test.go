package loop

import (
	"encoding/json"
	"strings"
	"testing"
)

func budgetRunner(budget int, msgs ...Message) *runner {
	r := &runner{msgs: msgs, toolNames: map[string]string{}, cfg: Config{Limits: Limits{ContextBytes: budget}}}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			r.toolNames[tc.ID] = tc.Name
		}
	}
	return r
}

func TestElideOldOutputsFirst(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	r := budgetRunner(25_000,
		Message{Role: RoleSystem, Content: "sys"},
		Message{Role: RoleUser, Content: "goal"},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "sandbox_write_file", Arguments: `{"path":"a","content":"` + big + `"}`}}},
		Message{Role: RoleTool, ToolCallID: "1", Content: big},
		Message{Role: RoleUser, Content: "the check failed: " + big},
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "2", Name: "sandbox_read_file", Arguments: `{"path":"a"}`}}},
		Message{Role: RoleTool, ToolCallID: "2", Content: big},
	)
	msgs := r.msgs
	r.fit()
	if !msgs[3].Elided || !strings.Contains(msgs[3].Content, "sandbox_write_file") || msgs[6].Elided || msgs[6].Content != big {
		t.Errorf("the old output should go first and the latest stay: %+v", msgs[3])
	}
	if !msgs[4].Elided || msgs[1].Content != "goal" || msgs[0].Content != "sys" {
		t.Errorf("an old check output should go too, the goal and system prompt stay: %.80s", msgs[4].Content)
	}
	// One large step: down to the low-water mark, not just under the budget.
	if size := budgetRunner(0, msgs...).requestBytes(); size > int(25_000*ContextLowWater) {
		t.Errorf("size after the step %d, want at most %d", size, int(25_000*ContextLowWater))
	}
	if !json.Valid([]byte(msgs[2].ToolCalls[0].Arguments)) || !strings.Contains(msgs[2].ToolCalls[0].Arguments, "elided") {
		t.Errorf("old arguments should be shortened, staying JSON: %s", msgs[2].ToolCalls[0].Arguments)
	}
}

func TestTheLatestTurnIsBoundedToo(t *testing.T) {
	out, _ := json.Marshal(map[string]any{"path": "f.txt", "content": strings.Repeat("line of a file\n", 1500)}) // 24 KB encoded
	msgs := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "goal"}, {Role: RoleAssistant}}
	for i := range 8 { // 8 parallel reads: 190 KB in the latest turn alone
		id := string(rune('a' + i))
		msgs[2].ToolCalls = append(msgs[2].ToolCalls, ToolCall{ID: id, Name: "sandbox_read_file", Arguments: `{"path":"f.txt"}`})
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: id, Content: string(out)})
	}
	r := budgetRunner(90_000, msgs...)
	r.fit()
	if size := budgetRunner(0, r.msgs...).requestBytes(); size > 90_000 {
		t.Errorf("request %d bytes, over the 90 000 budget", size)
	}
	for _, m := range r.msgs[3:] {
		var v map[string]any
		if json.Unmarshal([]byte(m.Content), &v) != nil || !strings.Contains(m.Content, "bytes left out") {
			t.Fatalf("each result should stay JSON and say it was cut: %.100s", m.Content)
		}
	}
}
