package loop

import (
	"encoding/json"
	"fmt"
)

// The context budget. Limits.ContextBytes bounds each request as sent: the tool schemas, every message, the
// latest turn. When a request would pass it, old content is elided, oldest first, until the request is down to
// ContextLowWater of the budget: one large step rather than a message each turn, because every elision rewrites
// the conversation from that message on, and a server's prompt cache only serves the prefix two requests share.
// Between steps the conversation only grows, so each request starts with the whole of the one before it.
//
// What goes, in order, until it fits: old tool outputs and old user messages after the goal (failed checks, the
// loop's notes), in the order they came; the long string arguments of old tool calls (whole files written); old
// reasoning; the long texts of old replies. The system prompt, the goal and the model's latest reply are never
// elided. If the latest turn alone is over the budget, its results are cut to share what is left. The
// transcript keeps everything.

// ContextLowWater is the fraction of Limits.ContextBytes an elision step brings the request down to.
const ContextLowWater = 0.5

// Rough wire overheads of the request's JSON, in bytes, counted high so the estimate bounds the real size:
// {"role":"assistant","content":""} and its comma; a tool call's id, type and function keys; the request's own
// fields (model, stream, stream_options, max tokens).
const (
	messageOverhead  = 48
	toolCallOverhead = 96
	requestOverhead  = 160
)

// requestSize is the size of the request that sends msgs with schemaBytes of tool definitions, as JSON.
func requestSize(msgs []Message, schemaBytes int) int {
	n := requestOverhead + schemaBytes
	for _, m := range msgs {
		n += messageSize(m)
	}
	return n
}

func messageSize(m Message) int {
	n := messageOverhead + quotedLen(m.Content) + len(m.ToolCallID)
	if m.Reasoning != "" {
		n += quotedLen(m.Reasoning) + len(m.ReasoningField) + 4
	}
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + len(tc.ID) + len(tc.Name) + quotedLen(tc.Arguments)
	}
	return n
}

// schemaBytes is what the tool definitions add to a request: nothing in the text tool mode, where the system
// prompt describes them (and is counted as a message).
func (r *runner) schemaBytes() int {
	if r.textMode {
		return 0
	}
	if r.schemaSize == 0 {
		for _, t := range r.tools {
			b, _ := json.Marshal(t)
			r.schemaSize += len(b) + 32 // {"type":"function","function":{...}}
		}
	}
	return r.schemaSize
}

// fit keeps the next request within the budget, recording what it elided.
func (r *runner) fit() {
	budget := r.cfg.Limits.ContextBytes
	if budget <= 0 || requestSize(r.msgs, r.schemaBytes()) <= budget {
		return
	}
	saved := r.shrink(int(float64(budget) * ContextLowWater))
	if size := requestSize(r.msgs, r.schemaBytes()); size > budget {
		saved += r.cutLatest(size - budget)
	}
	if saved > 0 {
		r.event(Event{Type: "elide", Turn: r.turns, SavedBytes: saved})
	}
}

// shrink elides old content until the request is at most target bytes or nothing old is left, and returns the
// bytes saved.
func (r *runner) shrink(target int) int {
	size := requestSize(r.msgs, r.schemaBytes())
	start := size
	latest := r.latestTurn()
	replace := func(m *Message, f func(*Message)) {
		before := messageSize(*m)
		f(m)
		size += messageSize(*m) - before
	}
	steps := []func(m *Message){
		func(m *Message) { // old outputs and notes, in the order they came
			switch {
			case m.Elided:
			case m.Role == RoleTool:
				m.Content = marshalCompact(map[string]any{"elided": fmt.Sprintf("the %d-byte output of %s was removed to save space; call the tool again if you need it", len(m.Content), r.toolNames[m.ToolCallID])})
				m.Elided = true
			case m.Role == RoleUser:
				m.Content = fmt.Sprintf("[%d bytes of an earlier message were removed to save space]", len(m.Content))
				m.Elided = true
			}
		},
		func(m *Message) { // whole files written
			for j := range m.ToolCalls {
				m.ToolCalls[j].Arguments = shortenArgs(m.ToolCalls[j].Arguments, 256)
			}
		},
		func(m *Message) { // thinking, kept non-empty: DeepSeek wants every tool-calling turn's reasoning back
			if len(m.Reasoning) > 256 {
				m.Reasoning = fmt.Sprintf("[%d bytes of reasoning elided]", len(m.Reasoning))
			}
		},
		func(m *Message) { // long replies
			if m.Role == RoleAssistant && len(m.Content) > 1024 {
				m.Content = keepEnds(m.Content, 512)
			}
		},
	}
	for _, step := range steps {
		for i := 2; i < latest && size > target; i++ { // the system prompt and the goal stay
			replace(&r.msgs[i], step)
		}
	}
	return start - size
}

// latestTurn is the index of the model's latest reply: it and what follows are the latest turn.
func (r *runner) latestTurn() int {
	for i := len(r.msgs) - 1; i >= 2; i-- {
		if r.msgs[i].Role == RoleAssistant {
			return i
		}
	}
	return len(r.msgs)
}

// cutLatest cuts the latest turn's results (and, last, its call arguments) by about excess bytes, each result
// keeping an equal share of what they may have, head and tail.
func (r *runner) cutLatest(excess int) int {
	latest := r.latestTurn()
	var idx []int
	total := 0
	for i := latest + 1; i < len(r.msgs); i++ {
		idx = append(idx, i)
		total += len(r.msgs[i].Content)
	}
	saved := 0
	if len(idx) > 0 && total > 0 {
		share := max((total-excess)/len(idx), 256)
		for _, i := range idx {
			m := &r.msgs[i]
			if len(m.Content) <= share {
				continue
			}
			before := messageSize(*m)
			var v any
			if m.Role == RoleTool && json.Unmarshal([]byte(m.Content), &v) == nil {
				m.Content, _ = fitJSON(v, share)
			} else {
				m.Content = keepEnds(m.Content, share)
			}
			saved += before - messageSize(*m)
		}
	}
	if saved < excess && latest < len(r.msgs) {
		m := &r.msgs[latest]
		before := messageSize(*m)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = shortenArgs(m.ToolCalls[j].Arguments, 256)
		}
		saved += before - messageSize(*m)
	}
	return saved
}
