package bench

// Keeping the better try. A second try starts from the first one's code and can break what worked: a model that
// fixes one test and breaks three leaves a worse solution than the one it was given. After each graded try the
// runner checkpoints the workspace through the agent's sandbox (its filesystem server's sandbox_checkpoint: the one
// store the model's own checkpoints are in, whether the sandbox is in-process or remote). Tries are compared by the
// grader's per-test results, never by what the model says: a try is worse than an earlier one when it leaves more
// tests failing (loop.TestCount's rule, the agent's own for its verifies). A try whose code does not build, or whose
// grade is suspect, counts as passing none. On a tie the later try is kept: more work is in it.
//
// When the last try is worse than the best one, the best one's checkpoint is restored (the whole workspace, as that
// try's grade left it: its solution files and any helper it added) and graded again; the result records which try
// was kept and that grade. It is graded again, not given the earlier grade, because the restore is not exact by
// construction (a checkpoint leaves out files over the server's write cap and special files, a restore does not
// recreate symlinks), and because a remote sandbox's copy on this machine must be brought back to the restored
// state anyway, which the grade does. Every grade the results report is therefore one measured on the state the
// workspace is left in; the cost is one more test run, only for an exercise whose last try did worse.
//
// The next try's prompt says how many tests the best try so far passed; after a try that did worse (three tries
// or more), it also carries the agent's regression hint with the diff since the better try, so the model can go
// back itself. A sandbox without checkpoint tools keeps the last try, as before.

import (
	"context"
	"fmt"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// keptTry is one graded try as the keeper knows it.
type keptTry struct {
	try    int
	id     string // its checkpoint, "" when none could be taken
	err    error  // why not
	passed int    // tests passed, by the grader; 0 when the grade is suspect
	count  loop.TestCount
}

// keeper follows the graded tries of one exercise: the checkpoint of each, and which was the best.
type keeper struct {
	sb         loop.Sandbox
	on         bool // the sandbox offers checkpoint, diff and restore
	tests      int  // tests the exercise's test files define
	best, last keptTry
}

func newKeeper(sb loop.Sandbox) *keeper {
	return &keeper{sb: sb, on: loop.OffersCheckpoints(sb.Tools())}
}

// gradedCount is a try's grade as a test count: the tests the grader did not see pass are failing.
func gradedCount(tr TryResult) (passed int, c loop.TestCount) {
	passed = tr.TestsOK
	if tr.Suspect != "" {
		passed = 0 // the grader distrusts its own figures
	}
	return passed, loop.TestCount{Known: true, Failed: tr.Tests - passed}
}

// graded records a try the grader has just graded and, when another try follows (more), checkpoints the
// workspace it left. The last try needs none: it is never gone back to, and a restore saves the state it replaces
// as a checkpoint of its own. The error is a SandboxFailure or ctx's end; a checkpoint that fails otherwise only
// makes the try one that cannot be gone back to.
func (k *keeper) graded(ctx context.Context, tr TryResult, more bool) error {
	t := keptTry{try: tr.Try}
	t.passed, t.count = gradedCount(tr)
	k.tests = tr.Tests
	if k.on && more {
		var out protocol.CheckpointOutput
		label := fmt.Sprintf("benchmark: try %d graded, %d of %d tests passed", tr.Try, t.passed, tr.Tests)
		switch err := callTool(ctx, k.sb, protocol.ToolCheckpoint, protocol.CheckpointInput{Label: label}, &out); {
		case err == nil:
			t.id = out.ID
		case asSandboxFailure(err) != nil || ctx.Err() != nil:
			return err
		default:
			t.err = err
		}
	}
	k.last = t
	if k.best.try == 0 || !t.count.Worse(k.best.count) {
		k.best = t
	}
	return nil
}

// regressed says the last try is worse than the best one.
func (k *keeper) regressed() bool { return k.best.try != k.last.try }

// retry is what the next try's prompt says of the tries so far; output is the last one's test output.
func (k *keeper) retry(ctx context.Context, output string, maxDiffBytes int) (Retry, error) {
	r := Retry{Output: output, Tests: k.tests, BestTry: k.best.try, BestPassed: k.best.passed,
		LastTry: k.last.try, LastPassed: k.last.passed, Keeps: k.on && k.best.id != ""}
	if !k.regressed() || k.best.id == "" || k.last.id == "" {
		return r, nil
	}
	var d protocol.DiffOutput
	err := callTool(ctx, k.sb, protocol.ToolDiff, protocol.DiffInput{From: k.best.id, To: k.last.id}, &d)
	switch {
	case asSandboxFailure(err) != nil || ctx.Err() != nil:
		return r, err
	case err != nil:
		return r, nil // the counts still say it; the diff is a help
	}
	r.Regression, err = loop.RegressionHint(k.best.id, k.best.count, k.last.id, k.last.count, d.Diff, maxDiffBytes)
	return r, err
}

// keepBest leaves the best try in the workspace when the last one is worse: it restores the best try's checkpoint
// and grades again with regrade. It records the kept try in res and, after a restore, the new grade (or, in its
// Error, why there is none). KeepError says why the best try could not be put back. The error returned is a
// SandboxFailure or ctx's end.
func (k *keeper) keepBest(ctx context.Context, res *ExerciseResult, regrade func() (GradeResult, error)) error {
	res.KeptTry = k.last.try
	if !k.regressed() || !k.on {
		return nil
	}
	if k.best.id == "" {
		res.KeepError = fmt.Sprintf("try %d passed more tests (%d) than try %d (%d), but its checkpoint could not be taken: %v",
			k.best.try, k.best.passed, k.last.try, k.last.passed, k.best.err)
		return nil
	}
	var out protocol.RestoreOutput
	restoreErr := callTool(ctx, k.sb, protocol.ToolRestore, protocol.RestoreInput{ID: k.best.id}, &out)
	if asSandboxFailure(restoreErr) != nil || ctx.Err() != nil {
		return restoreErr
	}
	if restoreErr != nil {
		res.KeepError = fmt.Sprintf("restoring try %d (checkpoint %s): %v", k.best.try, k.best.id, restoreErr)
	} else {
		res.KeptTry = k.best.try
	}
	// A restore that failed may still have changed files: the grade says what the workspace holds either way.
	g, gradeErr := regrade()
	if asSandboxFailure(gradeErr) != nil || ctx.Err() != nil {
		return gradeErr
	}
	kg := newKeptGrade(g)
	if gradeErr != nil {
		kg = KeptGrade{Error: "grading the workspace after the restore: " + gradeErr.Error()}
	}
	res.KeptGrade = &kg
	return nil
}
