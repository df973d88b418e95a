package loop

import (
	"cmp"
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
	stop, err := r.begin(ctx)
	if stop == "" && err == nil {
		stop, err = r.converse(ctx)
	}
	return r.finish(ctx, stop, err)
}

// converse is the loop itself; it returns why it stopped.
func (r *runner) converse(ctx context.Context) (string, error) {
	for {
		reply, stop, err := r.nextReply(ctx)
		switch {
		case stop != "":
			return stop, err
		case reply == nil:
			continue
		}
		if len(reply.Message.ToolCalls) == 0 {
			passed := r.cfg.Verify == "" || r.checked()
			if !passed {
				if passed, err = r.verify(ctx, true); err != nil {
					return stopFor(ctx, StopSandboxError), err
				}
			}
			if !passed {
				continue // the failure was handed to the model
			}
			if again, err := r.review(ctx); err != nil || again { // review.go
				if err != nil {
					return stopFor(ctx, StopSandboxError), err
				}
				continue
			}
			if r.cfg.Verify == "" {
				r.outcome = OutcomeUnverified
			}
			return StopDone, nil
		}
		malformed, repeating := 0, ""
		for _, call := range reply.Message.ToolCalls {
			outcome, err := r.call(ctx, call)
			if err != nil {
				return stopFor(ctx, StopSandboxError), err
			}
			if outcome == CallBadArguments || outcome == CallUnknownTool {
				malformed++
			}
			repeating = cmp.Or(r.rep.note, repeating)
		}
		r.flushImages() // after every call's answer: see images.go
		if repeating != "" {
			r.add(Message{Role: RoleUser, Content: repeating})
		}
		if r.err != nil {
			return StopInternal, r.err
		}
		if r.rep.stop != "" {
			return StopRepeating, nil
		}
		if malformed < len(reply.Message.ToolCalls) {
			r.formatErrors = 0
		} else if r.formatError("only malformed tool calls (each error went back to the model)") {
			return StopFormatErrors, nil
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
	case l.MaxTurns > 0 && r.turns-r.turn0 >= l.MaxTurns:
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

	callIDs      map[string]bool // every tool call ID in the conversation, to keep them unique (turn.go)
	textMode     bool            // tools are described in the system prompt and called in text (textcalls.go)
	formatErrors int             // unusable replies in a row
	formatStop   string          // why the run ended on format errors
	shrunk       bool            // the conversation was shrunk for a context overflow since the last reply
	modelErr     *ModelError     // the model server's failure the run ended on
	estimated    bool            // some usage was estimated
	schemaSize   int             // bytes of the tool definitions in a request (budget.go)
	sizes        []int           // each message's bytes in a request, counted once (budget.go)
	turn0        int             // turns of the run this one continues (resume.go); limits count from it
	ck           checkpoints     // the states verifies checked (checkpoint.go)
	rep          repeats         // the latest identical failing calls (repeats.go)

	extras // images, plan and review (images.go, plan.go, review.go)
}

func newRunner(cfg Config, model Model, sb Sandbox) (*runner, error) {
	if err := cfg.Limits.Check(cfg.Price); err != nil {
		return nil, err
	}
	if cfg.Goal == "" {
		return nil, errors.New("no goal: say what the agent should achieve")
	}
	r := &runner{cfg: cfg, model: model, sb: sb, tools: sb.Tools(), toolSet: map[string]bool{}, toolNames: map[string]string{},
		start: time.Now(), callIDs: map[string]bool{}, textMode: cfg.ToolMode == ToolModeText}
	switch cfg.ToolMode {
	case "", ToolModeAuto, ToolModeNative, ToolModeText:
	default:
		return nil, fmt.Errorf("unknown tool mode %q: use %s, %s or %s", cfg.ToolMode, ToolModeAuto, ToolModeNative, ToolModeText)
	}
	for _, t := range r.tools {
		r.toolSet[t.Name] = true
	}
	if (cfg.Verify != "" || cfg.Approve != nil) && !r.toolSet[protocol.ToolRunCommand] {
		return nil, fmt.Errorf("the sandbox offers no %s tool, which -verify and -approve need: is the executor server connected?", protocol.ToolRunCommand)
	}
	if cfg.Review && (!r.toolSet[protocol.ToolListFiles] || !r.toolSet[protocol.ToolReadFile]) {
		return nil, fmt.Errorf("the sandbox offers no %s and %s tools, which -review needs: is the filesystem server connected?", protocol.ToolListFiles, protocol.ToolReadFile)
	}
	sys, err := r.systemPrompt()
	if err != nil {
		return nil, err
	}
	goal, err := prompts.Render("goal.md", prompts.Data{Goal: cfg.Goal, TestCommand: cfg.Verify})
	if err != nil {
		return nil, err
	}
	limits, price := cfg.Limits, cfg.Price
	start := Event{Type: "start", Model: model.Name(), Goal: cfg.Goal, Verify: cfg.Verify, Limits: &limits, Price: &price, Tools: r.tools}
	if h := cfg.History; h != nil {
		return r, r.resume(start, *h)
	}
	r.event(start)
	r.add(Message{Role: RoleSystem, Content: sys})
	r.add(Message{Role: RoleUser, Content: goal})
	return r, r.err
}

// resume starts from an earlier run's conversation, telling the model so.
func (r *runner) resume(start Event, h History) error {
	r.msgs = append([]Message(nil), h.Messages...)
	r.turns, r.turn0 = h.Turns, h.Turns
	r.textMode = r.textMode || h.TextMode
	for _, m := range r.msgs {
		for _, tc := range m.ToolCalls {
			r.callIDs[tc.ID], r.toolNames[tc.ID] = true, tc.Name
		}
	}
	start.Turn, start.Reason = h.Turns, "continue"
	r.event(start)
	note, err := prompts.Render("continued.md", prompts.Data{TestCommand: r.cfg.Verify})
	if err != nil {
		return err
	}
	r.add(Message{Role: RoleUser, Content: note})
	return r.err
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

func ms(t0 time.Time) int64 { return time.Since(t0).Milliseconds() }

// finish runs a last verification when a limit or the model server stopped a run whose work was never checked,
// and builds the Result.
func (r *runner) finish(ctx context.Context, stop string, err error) (Result, error) {
	budgetStop := stop == StopMaxTurns || stop == StopMaxTokens || stop == StopMaxCost || stop == StopFormatErrors || stop == StopRepeating
	modelStop := stop == StopModelError && r.dirty
	var runErr error
	if (err == nil && budgetStop || modelStop) && r.cfg.Verify != "" && r.dirty && ctx.Err() == nil {
		// The model may have finished the work without saying so, or before its server failed: the check, not the
		// model, decides.
		if _, verr := r.verify(ctx, false); verr != nil {
			runErr = verr
		}
	}
	if modelStop && r.checked() {
		runErr, err = err, nil // the goal is met; the server's failure stays in the result, not in the exit status
	} else if runErr != nil && err == nil {
		err = runErr
	}
	r.stopAtEnd(ctx)
	res := Result{StopReason: stop, Turns: r.turns - r.turn0, TokensIn: r.usage.PromptTokens, TokensOut: r.usage.CompletionTokens,
		Seconds: time.Since(r.start).Seconds(), ToolCalls: r.toolCalls, ToolErrors: r.toolErrors,
		VerifyRuns: r.verifyRuns, LastVerify: r.lastVerify, Model: r.model.Name(), ModelError: r.modelErr,
		TokensEstimated: r.estimated, TokensCached: r.usage.CachedTokens}
	switch {
	case runErr != nil:
		res.Error = runErr.Error()
	case stop == StopFormatErrors:
		res.Error = r.formatStop
	case stop == StopRepeating:
		res.Error = r.rep.stop
	}
	if r.cfg.Price.Known() {
		c := r.cfg.Price.Cost(r.usage)
		res.CostUSD = &c
	}
	switch {
	case err != nil && stop != StopTimeout && stop != StopCanceled:
		res.Outcome, res.Error = OutcomeError, err.Error()
	case r.checked():
		res.Outcome = OutcomeMet
	case r.outcome != "":
		res.Outcome = r.outcome
	default:
		res.Outcome = OutcomeNotMet
	}
	if stop == StopTimeout || stop == StopCanceled {
		err = nil // a limit, not a failure
	}
	r.endOnBest(ctx, &res) // checkpoint.go
	r.event(Event{Type: "end", Summary: &res})
	if err == nil && r.err != nil {
		res.Outcome, res.StopReason, res.Error, err = OutcomeError, StopInternal, r.err.Error(), r.err
	}
	return res, err
}
