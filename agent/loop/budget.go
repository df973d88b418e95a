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

func messageSize(m Message) int {
	n := messageOverhead + quotedLen(m.Content) + len(m.ToolCallID) + imagesSize(m.Images)
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

// requestBytes is the size of the next request as JSON (tool schemas and the conversation), with each message's
// size counted once: messages are only appended, except by elision, which updates its count (setMessage).
func (r *runner) requestBytes() int {
	n := requestOverhead + r.schemaBytes()
	for i := len(r.sizes); i < len(r.msgs); i++ {
		r.sizes = append(r.sizes, messageSize(r.msgs[i]))
	}
	for _, s := range r.sizes[:len(r.msgs)] {
		n += s
	}
	return n
}

// edit changes message i with f and returns the bytes it saved.
func (r *runner) edit(i int, f func(*Message) bool) int {
	r.requestBytes() // every size counted
	if !f(&r.msgs[i]) {
		return 0
	}
	before := r.sizes[i]
	r.sizes[i] = messageSize(r.msgs[i])
	return before - r.sizes[i]
}

// fit keeps the next request within the budget, recording what it elided.
func (r *runner) fit() {
	budget := r.cfg.Limits.ContextBytes
	if budget <= 0 || r.requestBytes() <= budget {
		return
	}
	saved := r.shrink(int(float64(budget) * ContextLowWater))
	if size := r.requestBytes(); size > budget {
		saved += r.cutLatest(size - budget)
	}
	if saved > 0 {
		r.event(Event{Type: "elide", Turn: r.turns, SavedBytes: saved})
	}
}

// shrink elides old content until the request is at most target bytes or nothing old is left, and returns the
// bytes saved. Each step says whether it changed a message, so that only changed ones are counted again.
func (r *runner) shrink(target int) int {
	size := r.requestBytes()
	start := size
	latest := r.latestTurn()
	steps := []func(m *Message) bool{
		func(m *Message) bool { // old outputs and notes, in the order they came
			switch {
			case m.Elided:
				return false
			case m.Role == RoleTool:
				m.Content = marshalCompact(map[string]any{"elided": fmt.Sprintf("the %d-byte output of %s was removed to save space; call the tool again if you need it", len(m.Content), r.toolNames[m.ToolCallID])})
			case m.Role == RoleUser && len(m.Images) > 0:
				m.Content = fmt.Sprintf("[%d image(s) shown earlier were removed to save space; read the file again to see one]", len(m.Images))
				m.Images = nil
			case m.Role == RoleUser:
				m.Content = fmt.Sprintf("[%d bytes of an earlier message were removed to save space]", len(m.Content))
			default:
				return false
			}
			m.Elided = true
			return true
		},
		func(m *Message) bool { // whole files written
			changed := false
			for j := range m.ToolCalls {
				short := shortenArgs(m.ToolCalls[j].Arguments, 256)
				changed = changed || len(short) != len(m.ToolCalls[j].Arguments)
				m.ToolCalls[j].Arguments = short
			}
			return changed
		},
		func(m *Message) bool { // thinking, kept non-empty: DeepSeek wants every tool-calling turn's reasoning back
			if len(m.Reasoning) <= 256 {
				return false
			}
			m.Reasoning = fmt.Sprintf("[%d bytes of reasoning elided]", len(m.Reasoning))
			return true
		},
		func(m *Message) bool { // long replies
			if m.Role != RoleAssistant || len(m.Content) <= 1024 {
				return false
			}
			m.Content = keepEnds(m.Content, 512)
			return true
		},
	}
	for _, step := range steps {
		for i := r.keepHead(); i < latest && size > target; i++ { // the system prompt and the goal (and a plan) stay
			size -= r.edit(i, step)
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
	total := 0
	for i := latest + 1; i < len(r.msgs); i++ {
		total += len(r.msgs[i].Content)
	}
	saved := 0
	if n := len(r.msgs) - latest - 1; n > 0 && total > 0 {
		share := max((total-excess)/n, 256)
		for i := latest + 1; i < len(r.msgs); i++ {
			saved += r.edit(i, func(m *Message) bool {
				if len(m.Content) <= share {
					return false
				}
				var v any
				if m.Role == RoleTool && json.Unmarshal([]byte(m.Content), &v) == nil {
					m.Content, _ = fitJSON(v, share)
				} else {
					m.Content = keepEnds(m.Content, share)
				}
				return true
			})
		}
	}
	for i := latest + 1; i < len(r.msgs) && saved < excess; i++ { // the latest turn's images, last but one
		saved += r.edit(i, func(m *Message) bool {
			if len(m.Images) == 0 {
				return false
			}
			m.Content = fmt.Sprintf("[%d image(s) left out: the request would have been over the context budget (-context-bytes)]", len(m.Images))
			m.Images = nil
			return true
		})
	}
	if saved < excess && latest < len(r.msgs) {
		saved += r.edit(latest, func(m *Message) bool {
			for j := range m.ToolCalls {
				m.ToolCalls[j].Arguments = shortenArgs(m.ToolCalls[j].Arguments, 256)
			}
			return true
		})
	}
	return saved
}
