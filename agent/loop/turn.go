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

// nextReply asks the model once, within the limits, and deals with what went wrong: a refused request is changed
// to suit the server (recover), an unusable reply was answered with a note to the model (ask). The reply is nil
// when the model is to be asked again; stop, when set, ends the run (with err when something failed).
func (r *runner) nextReply(ctx context.Context) (reply *Reply, stop string, err error) {
	if stop := r.limitReached(ctx); stop != "" {
		return nil, stop, nil
	}
	r.fit()
	rep, err := r.ask(ctx)
	if err != nil {
		switch again, stop := r.recover(ctx, err); {
		case again:
			return nil, "", nil
		case stop != "":
			return nil, stop, nil
		}
		return nil, stopFor(ctx, StopModelError), err
	}
	if rep.problem != "" {
		if r.formatError(rep.problem) {
			return nil, StopFormatErrors, nil
		}
		return nil, "", nil
	}
	return &rep, "", nil
}

// ask makes one model call and records the reply. In the text tool mode no tools are sent: the system prompt
// describes them.
func (r *runner) ask(ctx context.Context) (Reply, error) {
	t0 := time.Now()
	tools := r.tools
	if r.textMode || r.planning {
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
	if len(msg.ToolCalls) == 0 && reply.FinishReason != "length" && !r.planning {
		calls, rest, problem := parseTextCalls(msg.Content, r.toolSet)
		if problem != "" {
			reply.problem = problem
		} else if len(calls) > 0 {
			msg.ToolCalls, msg.Content = calls, rest
		}
	}
	r.uniqueIDs(msg)
	replay, outcome, note, data := r.judge(reply)
	total := r.usage
	r.event(Event{Type: "model", Turn: r.turns, Model: reply.Model, Message: msg, Usage: &reply.Usage, TotalUsage: &total,
		FinishReason: reply.FinishReason, Outcome: outcome, DurationMs: ms(t0)})
	if replay.Content != "" || len(replay.ToolCalls) > 0 {
		r.msgs = append(r.msgs, replay)
	}
	if outcome != "" {
		reply.problem = replyProblems[outcome]
		if outcome == ReplyUnreadable {
			reply.problem = data.Output
		}
		text, err := prompts.Render(note, data)
		if err != nil {
			r.err = err // ends the run at the next check of the limits
			return reply, nil
		}
		r.add(Message{Role: RoleUser, Content: text})
	}
	return reply, nil
}

// uniqueIDs gives every call an ID no earlier call in the conversation has: some servers send none, some number
// each turn's calls from 1 again, and the answers must name their call unambiguously. An ID the agent makes is
// nine letters and digits (call00001), the strictest form a provider asks for (Mistral: [a-zA-Z0-9]{9}).
func (r *runner) uniqueIDs(msg *Message) {
	for i := range msg.ToolCalls {
		tc := &msg.ToolCalls[i]
		for n := len(r.callIDs) + 1; tc.ID == "" || r.callIDs[tc.ID]; n++ {
			tc.ID = fmt.Sprintf("call%05d", n)
		}
		r.callIDs[tc.ID] = true
		r.toolNames[tc.ID] = tc.Name
	}
}

// Outcomes of a reply that could not be used (the Outcome of its model event).
const (
	ReplyEmpty      = "empty"      // neither text nor a tool call
	ReplyCut        = "cut_off"    // finish_reason "length": cut at the output limit; incomplete calls dropped
	ReplyUnreadable = "unreadable" // calls written in the text could not be read
)

var replyProblems = map[string]string{ReplyEmpty: "the reply was empty: no text and no tool call",
	ReplyCut: "the reply was cut off at the output token limit"}

// judge says what of a reply joins the conversation and, for a reply that cannot be used, its outcome and the
// note that tells the model. An empty reply is not replayed (providers refuse an assistant message with neither
// content nor calls); a reply cut at the output limit keeps its text and loses its incomplete calls.
func (r *runner) judge(reply Reply) (replay Message, outcome, note string, data prompts.Data) {
	replay = reply.Message
	cut := reply.FinishReason == "length"
	switch {
	case reply.problem != "":
		outcome, note, data.Output, data.TextTools = ReplyUnreadable, "format_error.md", reply.problem, r.toolDocs()
		replay.ToolCalls = nil
	case cut && len(replay.ToolCalls) > 0 && !callsComplete(replay.ToolCalls):
		outcome, note, data.Output = ReplyCut, "truncated.md", "its tool calls were incomplete and did not run"
		replay.ToolCalls = nil
	case cut && len(replay.ToolCalls) == 0:
		outcome, note = ReplyCut, "truncated.md"
	case replay.Content == "" && len(replay.ToolCalls) == 0:
		outcome, note = ReplyEmpty, "empty_reply.md"
	}
	return replay, outcome, note, data
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
		r.sizes = nil // counted again
		r.event(Event{Type: "tool_mode", Turn: r.turns, Reason: ToolModeText, Message: &r.msgs[0], Error: me.Message})
	case FailContextLength:
		if r.shrunk { // shrunk once already since the last reply: the provider's message ends the run
			return false, ""
		}
		r.shrunk = true
		// The request the server refused is never sent again as it was: old content is elided, and when nothing
		// old is left, the latest results are cut. The budget learns the server's limit, so that the next turns
		// stay under it rather than overflow in turn.
		size := r.requestBytes()
		target := size / 2
		saved := r.shrink(target)
		if now := size - saved; now > target {
			saved += r.cutLatest(now - target)
		}
		if saved == 0 {
			return false, "" // nothing left to elide: the provider's words end the run
		}
		if l := &r.cfg.Limits.ContextBytes; *l <= 0 || *l > size*3/4 {
			*l = size * 3 / 4
		}
		r.event(Event{Type: "elide", Turn: r.turns, SavedBytes: saved, Reason: "context_length", Error: me.Message})
	case FailToolFormat:
		r.turns++ // the model wrote a reply, one the server could not parse: a turn, counted against the limits
		problem := "the server could not read your tool call: " + me.Message
		if me.Generation != "" {
			problem += " You wrote: " + keepEnds(me.Generation, 2000)
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
		Processes: r.toolSet[protocol.ToolStartProcess], TextTools: r.toolDocs(), Instructions: r.cfg.Instructions, Memory: r.cfg.Memory})
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
