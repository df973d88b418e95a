package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// One model turn: the request, the reply made acceptable to the next request, and what the loop does when the
// reply cannot be used or the server refuses. Strict providers check the conversation they are sent (OpenAI
// refuses duplicate tool-call IDs, DeepSeek a tool-calling turn without its reasoning), so each reply is mended
// before it joins it.

// ask makes one model call and records the reply. In the text tool mode no tools are sent: the system prompt
// describes them.
func (r *runner) ask(ctx context.Context) (Reply, error) {
	t0 := time.Now()
	tools := r.tools
	if r.textMode {
		tools = nil
	}
	reply, err := r.model.Complete(ctx, r.msgs, tools)
	if err != nil {
		ev := Event{Type: "error", Turn: r.turns + 1, Error: "model: " + err.Error(), DurationMs: ms(t0)}
		if me := (*ModelError)(nil); errors.As(err, &me) {
			ev.ModelError = me
		}
		r.event(ev)
		return Reply{}, fmt.Errorf("model: %w", err)
	}
	r.turns++
	r.shrunk = false
	r.usage.PromptTokens += reply.Usage.PromptTokens
	r.usage.CompletionTokens += reply.Usage.CompletionTokens
	r.usage.CachedTokens += reply.Usage.CachedTokens
	r.estimated = r.estimated || reply.Usage.Estimated
	msg := &reply.Message
	msg.Role = RoleAssistant
	if len(msg.ToolCalls) == 0 && reply.FinishReason != "length" {
		calls, rest, problem := parseTextCalls(msg.Content, r.toolSet)
		if problem != "" {
			reply.problem = problem
		} else if len(calls) > 0 {
			msg.ToolCalls, msg.Content = calls, rest
		}
	}
	r.uniqueIDs(msg)
	total := r.usage
	r.event(Event{Type: "model", Turn: r.turns, Model: reply.Model, Message: msg, Usage: &reply.Usage, TotalUsage: &total,
		FinishReason: reply.FinishReason, DurationMs: ms(t0)})
	return reply, nil
}

// uniqueIDs gives every call an ID no earlier call in the conversation has: some servers send none, some number
// each turn's calls from 1 again, and the answers must name their call unambiguously.
func (r *runner) uniqueIDs(msg *Message) {
	for i := range msg.ToolCalls {
		tc := &msg.ToolCalls[i]
		for n := 0; tc.ID == "" || r.callIDs[tc.ID]; n++ {
			tc.ID = fmt.Sprintf("call_%d_%d", r.turns, i+1)
			if n > 0 {
				tc.ID += fmt.Sprintf("_%d", n)
			}
		}
		r.callIDs[tc.ID] = true
		r.toolNames[tc.ID] = tc.Name
	}
}

// unusable takes the reply into the conversation, or says why it cannot be used and tells the model. An empty
// reply is not replayed (providers refuse an assistant message with neither content nor calls); a reply cut at
// the output limit keeps its text and loses its incomplete calls.
func (r *runner) unusable(reply Reply) string {
	msg := reply.Message
	var problem, note string
	var data prompts.Data
	switch {
	case reply.problem != "":
		problem, note, data.Output = reply.problem, "format_error.md", reply.problem
		data.TextTools = r.toolDocs()
		msg.ToolCalls = nil
	case reply.FinishReason == "length" && !callsComplete(msg.ToolCalls):
		problem, note = "the reply was cut off at the output token limit", "truncated.md"
		if len(msg.ToolCalls) > 0 {
			data.Output = "its tool calls were incomplete and did not run"
		}
		msg.ToolCalls = nil
	case reply.FinishReason == "length" && len(msg.ToolCalls) == 0:
		problem, note = "the reply was cut off at the output token limit", "truncated.md"
	case msg.Content == "" && len(msg.ToolCalls) == 0:
		problem, note = "the reply was empty: no text and no tool call", "empty_reply.md"
	}
	if msg.Content != "" || len(msg.ToolCalls) > 0 {
		r.msgs = append(r.msgs, msg)
	}
	if problem == "" {
		return ""
	}
	text, err := prompts.Render(note, data)
	if err != nil {
		r.err = err
		return problem
	}
	r.add(Message{Role: RoleUser, Content: text})
	return problem
}

// callsComplete says every call's arguments are whole JSON (a cut reply may still end after its calls).
func callsComplete(calls []ToolCall) bool {
	for _, tc := range calls {
		if !json.Valid([]byte(tc.Arguments)) {
			return false
		}
	}
	return len(calls) > 0
}

// formatError counts one unusable reply and says whether that ends the run.
func (r *runner) formatError(problem string) bool {
	r.formatErrors++
	if l := r.cfg.Limits.MaxFormatErrors; l > 0 && r.formatErrors >= l {
		r.formatStop = fmt.Sprintf("%d model replies in a row could not be used; the last: %s", r.formatErrors, problem)
		return true
	}
	return false
}

// recover answers a model server's refusal by changing the request, when that can help: the text tool mode for a
// server without tools, a smaller conversation for a context overflow (once), the model told of a tool call the
// server could not parse. again says to ask once more; stop, when set, ends the run (on format errors).
func (r *runner) recover(ctx context.Context, err error) (again bool, stop string) {
	var me *ModelError
	if !errors.As(err, &me) || ctx.Err() != nil {
		return false, ""
	}
	r.modelErr = me
	switch me.Kind {
	case FailNoTools:
		if r.textMode || r.cfg.ToolMode == ToolModeNative {
			return false, ""
		}
		r.textMode = true
		sys, err := r.systemPrompt()
		if err != nil {
			r.err = err
			return false, ""
		}
		r.msgs[0].Content = sys
		r.event(Event{Type: "tool_mode", Turn: r.turns, Reason: ToolModeText, Message: &r.msgs[0], Error: me.Message})
	case FailContextLength:
		if r.shrunk || r.cfg.Limits.ContextBytes == 0 && requestSize(r.msgs, r.schemaBytes()) == 0 {
			return false, ""
		}
		r.shrunk = true
		size := requestSize(r.msgs, r.schemaBytes())
		if saved := r.shrink(size / 2); saved > 0 {
			r.event(Event{Type: "elide", Turn: r.turns, SavedBytes: saved, Reason: "context_length", Error: me.Message})
		}
	case FailToolFormat:
		r.turns++ // the model wrote a reply, one the server could not parse: a turn, counted against the limits
		problem := "the server could not read your tool call: " + me.Message
		if me.Generation != "" {
			problem += " You wrote: " + shortenMiddle(me.Generation, 2000)
		}
		text, err := prompts.Render("format_error.md", prompts.Data{Output: problem, TextTools: r.toolDocs()})
		if err != nil {
			r.err = err
			return false, ""
		}
		r.add(Message{Role: RoleUser, Content: text})
		if r.formatError(problem) {
			return false, StopFormatErrors
		}
	default:
		return false, ""
	}
	r.modelErr = nil
	return true, ""
}

// systemPrompt renders system.md for the current tool mode.
func (r *runner) systemPrompt() (string, error) {
	return prompts.Render("system.md", prompts.Data{Goal: r.cfg.Goal, TestCommand: r.cfg.Verify,
		Processes: r.toolSet[protocol.ToolStartProcess], TextTools: r.toolDocs()})
}

// toolDocs are the tools as the text tool mode describes them; none in the native mode.
func (r *runner) toolDocs() []prompts.ToolDoc {
	if !r.textMode {
		return nil
	}
	docs := make([]prompts.ToolDoc, len(r.tools))
	for i, t := range r.tools {
		docs[i] = prompts.ToolDoc{Name: t.Name, Description: t.Description, Schema: compactJSON(t.InputSchema)}
	}
	return docs
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return marshalCompact(v)
}
