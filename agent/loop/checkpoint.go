package loop

// Checkpoints in the loop. When the filesystem server offers checkpoints (the tools are discovered, never assumed),
// the agent takes one before each verify, so every state it checks can be gone back to. It keeps the best state a
// verify reached (the fewest failing tests, by the runner's own summary: testcount.go). When a later verify fails
// worse, the model is told, with the diff since the better state, and can call sandbox_restore itself. When the run
// ends without meeting its goal and its last state is worse than the best one (or was never checked), the agent
// restores the best state and the summary says which it is; every other state stays restorable by its id.
//
// Checkpoints help and never decide: a checkpoint or a diff that fails is recorded in the transcript and the run
// goes on as it would without them.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/goalbox/goalbox/agent/prompts"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// CheckpointSummary is what a run's summary says of its checkpoints.
type CheckpointSummary struct {
	// Taken counts the checkpoints taken before verifies.
	Taken int `json:"taken"`
	// Best is the checkpoint of the best state a verify reached, and BestTests what that verify said.
	Best      string `json:"best,omitempty"`
	BestTests string `json:"best_tests,omitempty"`
	// Restored says the run ended by restoring Best; SavedAs then holds the state it replaced.
	Restored bool   `json:"restored,omitempty"`
	SavedAs  string `json:"saved_as,omitempty"`
	// RestoreError says why the best state could not be restored.
	RestoreError string `json:"restore_error,omitempty"`
}

// Why the agent called a checkpoint tool: the Reason of a checkpoint event.
const (
	CheckpointBeforeVerify = "before_verify" // sandbox_checkpoint of the state about to be checked
	CheckpointRegression   = "regression"    // sandbox_diff from the best state, for the model
	CheckpointEndOnBest    = "end_on_best"   // sandbox_restore of the best state at the end of a run
)

// checkpoints is the loop's record of the states it checked.
type checkpoints struct {
	last      string    // the checkpoint taken before the latest verify ("" when it failed)
	lastTests TestCount // what the latest verify said
	best      string
	bestTests TestCount
	taken     int
}

// checkpointsOn says the sandbox can take checkpoints, diff and restore them.
func (r *runner) checkpointsOn() bool { return OffersCheckpoints(r.tools) }

// OffersCheckpoints says tools include sandbox_checkpoint, sandbox_diff and sandbox_restore: the filesystem
// server's checkpoints, which the loop and the benchmark's keeper use when they are there.
func OffersCheckpoints(tools []Tool) bool {
	offers := func(name string) bool { return slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == name }) }
	return offers(protocol.ToolCheckpoint) && offers(protocol.ToolDiff) && offers(protocol.ToolRestore)
}

// callJSON calls a tool of the agent's own (not the model's) and decodes its structured result.
func (r *runner) callJSON(ctx context.Context, reason, tool string, in, out any) error {
	args, err := json.Marshal(in)
	if err != nil {
		return err
	}
	t0 := time.Now()
	call := ToolCall{Name: tool, Arguments: string(args)}
	res, err := r.sb.Call(ctx, tool, args)
	if err == nil && (res.IsError || json.Unmarshal(res.Structured, out) != nil) {
		err = fmt.Errorf("%s: %s", tool, res.Text)
	}
	ev := Event{Type: "checkpoint", Turn: r.turns, Call: &call, Result: &res, Reason: reason, DurationMs: ms(t0)}
	if err != nil {
		ev.Error = err.Error()
	}
	r.event(ev)
	return err
}

// checkpointBeforeVerify takes the checkpoint of the state about to be checked.
func (r *runner) checkpointBeforeVerify(ctx context.Context) {
	r.ck.last = ""
	if !r.checkpointsOn() {
		return
	}
	var out protocol.CheckpointOutput
	label := fmt.Sprintf("agent: before verify %d", r.verifyRuns+1)
	if r.callJSON(ctx, CheckpointBeforeVerify, protocol.ToolCheckpoint, protocol.CheckpointInput{Label: label}, &out) == nil {
		r.ck.last = out.ID
		r.ck.taken++
	}
}

// afterVerify records what the verify said of the state just checked and, when tell is set, returns what the
// model should be told when it is worse than the best one so far (with the diff since then), or "".
func (r *runner) afterVerify(ctx context.Context, vr VerifyResult, tell bool) string {
	c := countTests(vr.ExitCode, vr.Output)
	r.ck.lastTests = c
	if r.ck.last == "" {
		return ""
	}
	switch {
	case r.ck.best == "" || !r.ck.bestTests.Known || (c.Known && !c.Worse(r.ck.bestTests)):
		// The first state, or one at least as good as the best (on a tie the later one: more work is in it).
		r.ck.best, r.ck.bestTests = r.ck.last, c
		return ""
	case !c.Worse(r.ck.bestTests) || !tell:
		return "" // unknown: not comparable with the best; or nobody to tell
	}
	var d protocol.DiffOutput
	if r.callJSON(ctx, CheckpointRegression, protocol.ToolDiff, protocol.DiffInput{From: r.ck.best, To: r.ck.last}, &d) != nil {
		return ""
	}
	text, err := RegressionHint(r.ck.best, r.ck.bestTests, r.ck.last, c, d.Diff, r.cfg.Limits.ToolOutputBytes)
	if err != nil {
		r.event(Event{Type: "error", Turn: r.turns, Error: err.Error()})
		return ""
	}
	return text
}

// RegressionHint is what a model is told when the state it just had checked (checkpoint now, with nowTests) is
// worse than an earlier one (best, with bestTests): both counts, the diff from best to now cut to maxDiffBytes,
// and how to go back. The agent adds it to a failed verify; the benchmark runner to the prompt of the next try.
func RegressionHint(best string, bestTests TestCount, now string, nowTests TestCount, diff string, maxDiffBytes int) (string, error) {
	return prompts.Render("regression.md", prompts.Data{Best: best, BestTests: bestTests.String(),
		Now: now, NowTests: nowTests.String(), Output: keepEnds(diff, maxDiffBytes)})
}

// endOnBest, at the end of a run that did not meet its goal, restores the best state when the workspace is not
// already in it, and says so in the summary.
func (r *runner) endOnBest(ctx context.Context, res *Result) {
	if r.ck.taken == 0 {
		return
	}
	s := &CheckpointSummary{Taken: r.ck.taken, Best: r.ck.best}
	res.Checkpoints = s
	if r.ck.best == "" {
		return
	}
	s.BestTests = r.ck.bestTests.String()
	// Restored only when the last state is known to be worse, or was never checked: an unknown count is not worse.
	worse := r.ck.last != r.ck.best && r.ck.lastTests.Worse(r.ck.bestTests)
	if res.Met() || res.Outcome == OutcomeError || res.StopReason == StopCanceled || !worse && !r.dirty {
		return
	}
	// The run's own deadline may be what ended it: the restore gets a little time of its own.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var out protocol.RestoreOutput
	if err := r.callJSON(rctx, CheckpointEndOnBest, protocol.ToolRestore, protocol.RestoreInput{ID: r.ck.best}, &out); err != nil {
		s.RestoreError = err.Error()
		return
	}
	s.Restored, s.SavedAs = true, out.SavedAs
}
