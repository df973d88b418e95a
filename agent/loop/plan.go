package loop

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/goalbox/goalbox/agent/prompts"
)

// Plan first (Config.Plan). Before any tool use the model is asked for a numbered plan, with no tools offered, so
// it cannot act before it has said how. The plan is shown (a "plan" event: a progress block, a transcript line)
// and, when the Approver can judge plans, waits for a yes. It stays at the head of the conversation with the
// system prompt and the goal — elision never touches it — and the model is asked to name the step it is on, which
// the progress lines show against the plan's step count.

// PlanApprover is an Approver that can also judge a plan. A refusal with a reason goes back to the model for a new
// plan; a refusal without one ends the run (StopPlanRefused).
type PlanApprover interface {
	ApprovePlan(ctx context.Context, plan string) (ok bool, reason string, err error)
}

// StopPlanRefused: the person at the terminal refused the model's plan without saying why (exit 1).
const StopPlanRefused = "plan_refused"

// planStep finds the lines of a numbered plan ("1. ...", "2) ...").
var planStep = regexp.MustCompile(`(?m)^\s*(?:\*\*)?\d+[.)]\s+\S`)

// PlanSteps is the number of numbered steps in a plan.
func PlanSteps(plan string) int { return len(planStep.FindAllString(plan, -1)) }

// onStep finds the step a reply says it is on ("Step 3:").
var onStep = regexp.MustCompile(`(?i)\bstep\s+(\d+)\b`)

// StepOf is the step number a reply names first, or "" when it names none.
func StepOf(reply string) string {
	if m := onStep.FindStringSubmatch(reply); m != nil {
		return m[1]
	}
	return ""
}

// plan asks for the plan until there is one the person (if asked) accepts. It returns a stop reason when the run
// must end instead, as converse does.
func (r *runner) plan(ctx context.Context) (string, error) {
	ask, err := prompts.Render("plan.md", prompts.Data{TestCommand: r.cfg.Verify})
	if err != nil {
		return StopInternal, err
	}
	r.add(Message{Role: RoleUser, Content: ask})
	r.planning = true
	defer func() { r.planning = false }()
	for {
		reply, stop, err := r.nextReply(ctx)
		switch {
		case stop != "":
			return stop, err
		case reply == nil:
			continue
		}
		r.formatErrors = 0
		plan := strings.TrimSpace(reply.Message.Content)
		r.event(Event{Type: "plan", Turn: r.turns, Message: &Message{Role: RoleAssistant, Content: plan}})
		if pa, ok := r.cfg.Approve.(PlanApprover); ok {
			ok, reason, err := pa.ApprovePlan(ctx, plan)
			if err != nil {
				return stopFor(ctx, StopCanceled), fmt.Errorf("waiting for approval of the plan: %w", err)
			}
			if !ok && reason == "" {
				return StopPlanRefused, nil
			}
			if !ok {
				text, err := prompts.Render("plan_refused.md", prompts.Data{Output: reason})
				if err != nil {
					return StopInternal, err
				}
				r.add(Message{Role: RoleUser, Content: text})
				continue
			}
		}
		text, err := prompts.Render("plan_approved.md", prompts.Data{Plan: plan})
		if err != nil {
			return StopInternal, err
		}
		r.add(Message{Role: RoleUser, Content: text})
		r.head = len(r.msgs) // the plan, the talk about it and the go-ahead stay
		if r.err != nil {
			return StopInternal, r.err
		}
		return "", nil
	}
}

// keepHead is how many messages at the start elision never touches: the system prompt and the goal, and with a
// plan everything up to the go-ahead.
func (r *runner) keepHead() int { return max(r.head, 2) }

// begin is what a run does before its first turn: the snapshot a review compares against (review.go), and the
// plan. A continued run has both behind it.
func (r *runner) begin(ctx context.Context) (string, error) {
	if r.cfg.History != nil {
		return "", nil
	}
	if r.cfg.Review {
		before, err := r.snapshot(ctx)
		if err != nil {
			return stopFor(ctx, StopSandboxError), err
		}
		r.before = before
	}
	if r.cfg.Plan {
		return r.plan(ctx)
	}
	return "", nil
}

// extras is the runner's state for the features off by default, kept apart from the loop's own.
type extras struct {
	images   []pendingImages     // this turn's result images, sent after its results (images.go)
	planning bool                // asking for the plan: no tools offered
	head     int                 // messages at the start that elision keeps
	before   map[string]snapFile // the workspace at the start, for the review (review.go)
	reviewed bool
}
