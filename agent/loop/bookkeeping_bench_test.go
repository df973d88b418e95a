package loop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkBookkeeping is the agent's per-turn work with no network at all, on a heavy turn: a command result with
// 256 KiB of output compacted to the 16 KiB budget, a 40-turn conversation elided to its budget, and the turn's
// events written to a transcript file. It complements BenchmarkTurn with a figure that a busy machine barely moves.
func BenchmarkBookkeeping(b *testing.B) {
	limits := DefaultLimits()
	out := strings.Repeat("=== RUN   TestSomething\n--- PASS: TestSomething (0.00s)\n", 5000)[:256<<10]
	raw, _ := json.Marshal(map[string]any{"exit_code": 1, "stdout": out, "stderr": "", "timed_out": false, "duration_ms": 1234})
	res := ToolResult{Structured: raw}
	var base []Message
	base = append(base, Message{Role: RoleSystem, Content: strings.Repeat("s", 2000)}, Message{Role: RoleUser, Content: "goal"})
	names := map[string]string{}
	for i := range 40 {
		id := "call_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		names[id] = "sandbox_run_command"
		base = append(base, Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "sandbox_write_file",
			Arguments: `{"path":"f.go","content":"` + strings.Repeat("x", 4000) + `"}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: compactResult(res, limits.ToolOutputBytes)})
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "t.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tr := NewTranscript(f)
	msgs := make([]Message, len(base))
	call := ToolCall{ID: "call_x", Name: "sandbox_run_command", Arguments: `{"command":"go test ./..."}`}
	for b.Loop() {
		b.StopTimer()
		copy(msgs, base) // a fresh, unelided conversation each time: the worst case
		// What sandbox.Client.Call hands over: the raw result and the client's decoded value.
		var decoded any
		_ = json.Unmarshal(raw, &decoded)
		res := ToolResult{Structured: raw, Decoded: decoded}
		b.StartTimer()
		sent := compactResult(res, limits.ToolOutputBytes)
		msgs = append(msgs[:len(base)], Message{Role: RoleTool, ToolCallID: call.ID, Content: sent})
		r := &runner{msgs: msgs, toolNames: names, cfg: Config{Limits: limits}}
		r.fit()
		reply := Message{Role: RoleAssistant, ToolCalls: []ToolCall{call}}
		_ = tr.Observe(Event{Type: "model", Turn: 1, Message: &reply, Usage: &Usage{PromptTokens: 1000, CompletionTokens: 100}, DurationMs: 1})
		_ = tr.Observe(Event{Type: "tool", Turn: 1, Call: &call, Result: &res, Sent: sent, Outcome: CallOK, DurationMs: int64(time.Millisecond)})
	}
}
