package loop

import "errors"

// Resuming a run from its transcript (the command's -continue). The conversation is rebuilt from the events as
// the model was sent it, less the elisions (the budget elides again on the first turn), and the run goes on in the
// same workspace with fresh limits.

// History is a run's conversation, rebuilt from its transcript.
type History struct {
	Messages []Message
	// Turns is the number of model replies so far; the resumed run numbers its turns after them.
	Turns int
	// TextMode says the run had switched to the text tool mode.
	TextMode bool
	// Goal and Verify are the run's own, from its start event.
	Goal, Verify string
}

// Resume rebuilds the conversation of the run that events record (a transcript, perhaps of runs already resumed).
func Resume(events []Event, toolOutputBytes int) (*History, error) {
	h := &History{}
	for _, ev := range events {
		switch ev.Type {
		case "start":
			if h.Goal == "" {
				h.Goal, h.Verify = ev.Goal, ev.Verify
			}
		case "message":
			if ev.Message != nil {
				h.Messages = append(h.Messages, *ev.Message)
			}
		case "tool_mode":
			h.TextMode = ev.Reason == ToolModeText
			if ev.Message != nil && len(h.Messages) > 0 {
				h.Messages[0] = *ev.Message
			}
		case "model":
			h.Turns = max(h.Turns, ev.Turn)
			if ev.Message == nil {
				continue
			}
			m := *ev.Message
			if ev.Outcome == ReplyUnreadable || (ev.Outcome == ReplyCut && !callsComplete(m.ToolCalls)) {
				m.ToolCalls = nil // as judge left it
			}
			if m.Content != "" || len(m.ToolCalls) > 0 {
				h.Messages = append(h.Messages, m)
			}
		case "tool":
			if ev.Call == nil || ev.Result == nil {
				continue
			}
			sent := ev.Sent
			if sent == "" {
				sent = compactResult(*ev.Result, toolOutputBytes)
			}
			h.Messages = append(h.Messages, Message{Role: RoleTool, ToolCallID: ev.Call.ID, Content: sent})
		}
	}
	if len(h.Messages) < 2 || h.Messages[0].Role != RoleSystem || h.Goal == "" {
		return nil, errors.New("the transcript holds no conversation to continue (no start, system prompt and goal)")
	}
	h.Messages = answerAll(h.Messages)
	return h, nil
}

// answerAll answers every call the transcript has no result for (the run was interrupted while they ran): each
// call needs its answer, right after the results that are there, before the conversation can go on.
func answerAll(msgs []Message) []Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []Message
	var pending []ToolCall
	flush := func() {
		for _, tc := range pending {
			if !answered[tc.ID] {
				out = append(out, Message{Role: RoleTool, ToolCallID: tc.ID,
					Content: marshalCompact(map[string]any{"error": "the run was interrupted before this call finished; its effect is unknown"})})
			}
		}
		pending = nil
	}
	for _, m := range msgs {
		if m.Role != RoleTool {
			flush()
		}
		out = append(out, m)
		if m.Role == RoleAssistant {
			pending = m.ToolCalls
		}
	}
	flush()
	return out
}
