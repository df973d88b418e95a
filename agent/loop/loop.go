package loop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Run drives one goal: it sends the conversation to the model, runs the tool calls it asks for in the sandbox,
// and, when the model stops calling tools, runs cfg.Verify (if set) to decide whether the goal is met. A failed
// check goes back to the model while the limits allow. The returned error is non-nil only when the model server,
// the sandbox or an observer (the transcript) failed (Result.Outcome is then OutcomeError); a goal not met is not
// an error.
func Run(ctx context.Context, cfg Config, model Model, sb Sandbox) (Result, error) {
	r, err := newRunner(cfg, model, sb)
	if err != nil {
		return Result{Outcome: OutcomeError, StopReason: StopInternal, Model: model.Name(), Error: err.Error()}, err
	}
	if cfg.Limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Limits.Timeout)
		defer cancel()
	}
	stop, err := r.converse(ctx)
	return r.finish(ctx, stop, err)
}

// converse is the loop itself; it returns why it stopped.
func (r *runner) converse(ctx context.Context) (string, error) {
	for {
		if stop := r.limitReached(ctx); stop != "" {
			return stop, nil
		}
		if saved := elide(r.msgs, r.toolNames, r.cfg.Limits.ContextBytes); saved > 0 {
			r.event(Event{Type: "elide", Turn: r.turns, SavedBytes: saved})
		}
		reply, err := r.ask(ctx)
		if err != nil {
			return stopFor(ctx, StopModelError), err
		}
		if len(reply.ToolCalls) == 0 {
			if r.cfg.Verify == "" {
				r.outcome = OutcomeUnverified
				return StopDone, nil
			}
			passed, err := r.verify(ctx, true)
			if err != nil {
				return stopFor(ctx, StopSandboxError), err
			}
			if passed {
				return StopDone, nil
			}
			continue // the failure was handed to the model
		}
		for _, call := range reply.ToolCalls {
			if err := r.call(ctx, call); err != nil {
				return stopFor(ctx, StopSandboxError), err
			}
		}
		if r.err != nil {
			return StopInternal, r.err
		}
	}
}

// stopFor names a failure: a deadline or a cancel that caused it wins over what failed.
func stopFor(ctx context.Context, otherwise string) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return StopTimeout
	case errors.Is(ctx.Err(), context.Canceled):
		return StopCanceled
	}
	return otherwise
}

// limitReached is checked before each model call.
func (r *runner) limitReached(ctx context.Context) string {
	l := r.cfg.Limits
	switch {
	case ctx.Err() != nil:
		return stopFor(ctx, StopCanceled)
	case r.err != nil:
		return StopInternal
	case l.MaxTurns > 0 && r.turns >= l.MaxTurns:
		return StopMaxTurns
	case l.MaxTokens > 0 && r.usage.Total() >= l.MaxTokens:
		return StopMaxTokens
	case l.MaxCost > 0 && r.cfg.Price.Cost(r.usage) >= l.MaxCost:
		return StopMaxCost
	}
	return ""
}

type runner struct {
	cfg       Config
	model     Model
	sb        Sandbox
	tools     []Tool
	toolSet   map[string]bool
	toolNames map[string]string // tool call ID → tool name, for elision notes
	msgs      []Message
	start     time.Time

	turns      int
	usage      Usage
	toolCalls  int
	toolErrors int
	dirty      bool // tools ran since the last verification
	outcome    string
	verifyRuns int
	lastVerify *VerifyResult
	started    []startedProcess // the model's processes not yet seen ended (processes.go)
	err        error            // first observer failure (the transcript could not be written)
}

func newRunner(cfg Config, model Model, sb Sandbox) (*runner, error) {
	if err := cfg.Limits.Check(cfg.Price); err != nil {
		return nil, err
	}
	if cfg.Goal == "" {
		return nil, errors.New("no goal: say what the agent should achieve")
	}
	r := &runner{cfg: cfg, model: model, sb: sb, tools: sb.Tools(), toolSet: map[string]bool{}, toolNames: map[string]string{},
		start: time.Now()}
	for _, t := range r.tools {
		r.toolSet[t.Name] = true
	}
	if (cfg.Verify != "" || cfg.Approve != nil) && !r.toolSet[protocol.ToolRunCommand] {
		return nil, fmt.Errorf("the sandbox offers no %s tool, which -verify and -approve need: is the executor server connected?", protocol.ToolRunCommand)
	}
	data := prompts.Data{Goal: cfg.Goal, TestCommand: cfg.Verify, Processes: r.toolSet[protocol.ToolStartProcess]}
	sys, err := prompts.Render("system.md", data)
	if err != nil {
		return nil, err
	}
	goal, err := prompts.Render("goal.md", data)
	if err != nil {
		return nil, err
	}
	limits, price := cfg.Limits, cfg.Price
	r.event(Event{Type: "start", Model: model.Name(), Goal: cfg.Goal, Verify: cfg.Verify, Limits: &limits, Price: &price, Tools: r.tools})
	r.add(Message{Role: RoleSystem, Content: sys})
	r.add(Message{Role: RoleUser, Content: goal})
	return r, r.err
}

// add appends a system or user message and records it.
func (r *runner) add(m Message) {
	r.msgs = append(r.msgs, m)
	r.event(Event{Type: "message", Turn: r.turns, Message: &m})
}

// event tells the observers, keeping the first failure to end the run with.
func (r *runner) event(ev Event) {
	ev.Time = time.Now().UTC()
	for _, o := range r.cfg.Observers {
		if err := o.Observe(ev); err != nil && r.err == nil {
			r.err = err
		}
	}
}

// ask makes one model call and records the reply.
func (r *runner) ask(ctx context.Context) (Message, error) {
	t0 := time.Now()
	reply, err := r.model.Complete(ctx, r.msgs, r.tools)
	if err != nil {
		r.event(Event{Type: "error", Turn: r.turns + 1, Error: "model: " + err.Error(), DurationMs: ms(t0)})
		return Message{}, fmt.Errorf("model: %w", err)
	}
	r.turns++
	r.usage.PromptTokens += reply.Usage.PromptTokens
	r.usage.CompletionTokens += reply.Usage.CompletionTokens
	msg := reply.Message
	msg.Role = RoleAssistant
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" { // some compatible servers leave it out; the answer must name its call
			msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", r.turns, i+1)
		}
	}
	r.msgs = append(r.msgs, msg)
	for _, tc := range msg.ToolCalls {
		r.toolNames[tc.ID] = tc.Name
	}
	total := r.usage
	r.event(Event{Type: "model", Turn: r.turns, Model: reply.Model, Message: &msg, Usage: &reply.Usage, TotalUsage: &total,
		FinishReason: reply.FinishReason, DurationMs: ms(t0)})
	return msg, nil
}

func ms(t0 time.Time) int64 { return time.Since(t0).Milliseconds() }

// finish runs a last verification when a limit stopped a run whose work was never checked, and builds the Result.
func (r *runner) finish(ctx context.Context, stop string, err error) (Result, error) {
	budgetStop := stop == StopMaxTurns || stop == StopMaxTokens || stop == StopMaxCost
	if err == nil && budgetStop && r.cfg.Verify != "" && r.dirty && ctx.Err() == nil {
		// The model may have finished the work without saying so; the check, not the model, decides.
		_, err = r.verify(ctx, false)
	}
	r.stopAtEnd(ctx)
	res := Result{StopReason: stop, Turns: r.turns, TokensIn: r.usage.PromptTokens, TokensOut: r.usage.CompletionTokens,
		Seconds: time.Since(r.start).Seconds(), ToolCalls: r.toolCalls, ToolErrors: r.toolErrors,
		VerifyRuns: r.verifyRuns, LastVerify: r.lastVerify, Model: r.model.Name()}
	if r.cfg.Price.Known() {
		c := r.cfg.Price.Cost(r.usage)
		res.CostUSD = &c
	}
	switch {
	case err != nil && stop != StopTimeout && stop != StopCanceled:
		res.Outcome, res.Error = OutcomeError, err.Error()
	case r.lastVerify != nil && r.lastVerify.ExitCode == 0 && !r.dirty:
		res.Outcome = OutcomeMet
	case r.outcome != "":
		res.Outcome = r.outcome
	default:
		res.Outcome = OutcomeNotMet
	}
	if stop == StopTimeout || stop == StopCanceled {
		err = nil // a limit, not a failure
	}
	r.event(Event{Type: "end", Summary: &res})
	if err == nil && r.err != nil {
		res.Outcome, res.StopReason, res.Error, err = OutcomeError, StopInternal, r.err.Error(), r.err
	}
	return res, err
}
