package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/agent/loop"
	"github.com/goalbox/goalbox/agent/loop/looptest"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// Solutions of python/proverb (8 tests) that pass a known number of them, by the grader's count.
const (
	proverbSix = `def proverb(*items, qualifier=None):
    # ignores the qualifier: 6 of 8
    if not items:
        return []
    lines = [f"For want of a {a} the {b} was lost." for a, b in zip(items, items[1:])]
    return lines + [f"And all for the want of a {items[0]}."]
`
	proverbSixAgain = "# the same, said again\n" + proverbSix
	proverbOne      = "def proverb(*items, qualifier=None):\n    return []  # only the empty proverb: 1 of 8\n"
	proverbBroken   = "def proverb(*items, qualifier=None:\n    return []  # a syntax error: none run\n"
)

// keepRun runs python/proverb for len(tries) tries, the scripted model making tries[i]'s call on try i+1 and
// stopping; checks[i], when set, looks at try i+1's first request. pool, when set, is the run's sandbox pool.
func keepRun(t *testing.T, pool *Pool, tries []looptest.Call, checks ...func(testing.TB, string)) (ExerciseResult, RunOptions) {
	t.Helper()
	ex := runnerExercises(t)[3] // python/proverb; newRunOptions gives a fresh checkpoint store: ids start at cp-1
	var steps []looptest.Step
	for i, call := range tries {
		st := looptest.Step{Calls: []looptest.Call{call}}
		if i < len(checks) && checks[i] != nil {
			check := checks[i]
			st.Check = func(t testing.TB, req looptest.Request) { check(t, req.Messages[1].Text()) }
		}
		steps = append(steps, st, done)
	}
	opts, _ := newRunOptions(t, []Exercise{ex}, steps...)
	opts.Tries, opts.Pool = len(tries), pool
	report, err := Run(context.Background(), opts)
	must(t, err)
	if len(report.Results) != 1 || len(report.Results[0].Tries) != len(tries) {
		t.Fatalf("results: %+v", report.Results)
	}
	r, ok, err := LoadResult(opts.RunDir, ex.ID())
	must(t, err)
	if !ok {
		t.Fatal("no result file")
	}
	return r, opts
}

// writes are the model's calls that write each solution, one per try.
func writes(solutions ...string) []looptest.Call {
	var out []looptest.Call
	for _, sol := range solutions {
		out = append(out, looptest.Call{Name: protocol.ToolWriteFile, Args: looptest.Args(map[string]string{
			"path": "proverb/proverb.py", "content": sol})})
	}
	return out
}

// passedPerTry is each try's tests passed, by the grader.
func passedPerTry(r ExerciseResult) []int {
	var out []int
	for _, tr := range r.Tries {
		out = append(out, tr.TestsOK)
	}
	return out
}

// solutionLeft is proverb.py as the run left it in dir's exercise folder.
func solutionLeft(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "proverb", "proverb.py"))
	must(t, err)
	return string(data)
}

func wants(t testing.TB, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// Try 2 breaks five of try 1's six passing tests: the run ends with try 1's code in the workspace, graded again
// (6 of 8), kept_try 1 in the result file; try 2's prompt named try 1's count as the bar.
func TestKeepTheBetterTryWhenTheSecondRegresses(t *testing.T) {
	r, opts := keepRun(t, nil, writes(proverbSix, proverbOne), nil, func(t testing.TB, goal string) {
		wants(t, "try 2's prompt", goal, "Try 1 passed 6 of 8 tests.\nThat is the bar", "try 1's code is put back")
	})
	checkKeptFirst(t, r, passedPerTry(r), 6)
	if got := solutionLeft(t, WorkspaceRoot(opts.RunDir, runnerExercises(t)[3])); got != proverbSix {
		t.Errorf("the workspace holds\n%s\nwant try 1's code", got)
	}
	data, err := os.ReadFile(ResultPath(opts.RunDir, r.ID))
	must(t, err)
	wants(t, "the result file", string(data), `"kept_try": 1,`, `"kept_grade": {`)
	if s := Summarize([]ExerciseResult{r}); !slices.Equal(s.KeptEarlier, []string{r.ID}) || len(s.KeepErrors) != 0 {
		t.Errorf("the summary's kept_earlier %v, keep_errors %v; want [%s] and none", s.KeptEarlier, s.KeepErrors, r.ID)
	}
}

// checkKeptFirst: try 1 passed first of 8, try 2 fewer, and the result keeps try 1 with a grade of its own that
// says first again.
func checkKeptFirst(t *testing.T, r ExerciseResult, passed []int, first int) {
	t.Helper()
	if passed[0] != first || passed[1] >= first {
		t.Fatalf("the scripted tries passed %v tests, want %d then fewer: the test proves nothing", passed, first)
	}
	if r.KeptTry != 1 || r.KeepError != "" || r.KeptGrade == nil || r.KeptGrade.TestsOK != first || r.KeptGrade.Tests != 8 || r.KeptGrade.Passed {
		t.Errorf("kept try %d, grade %+v, error %q; want try 1 graded %d of 8", r.KeptTry, r.KeptGrade, r.KeepError, first)
	}
}

// The other outcomes: a second try that does better, or as well (the later one is kept: more work is in it),
// stays; one that does not build counts as passing none and gives way to a try that passed one.
func TestKeepTheLaterTryUnlessItIsWorse(t *testing.T) {
	for _, c := range []struct {
		name       string
		solutions  []string
		passed     []int
		keptTry    int
		keptPassed int // of the kept grade after a restore; -1 for none
		left       string
	}{
		{"improves", []string{proverbOne, proverbSix}, []int{1, 6}, 2, -1, proverbSix},
		{"equal", []string{proverbSix, proverbSixAgain}, []int{6, 6}, 2, -1, proverbSixAgain},
		{"does not build", []string{proverbOne, proverbBroken}, []int{1, 0}, 1, 1, proverbOne},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, opts := keepRun(t, nil, writes(c.solutions...))
			if got := passedPerTry(r); got[0] != c.passed[0] || got[1] != c.passed[1] {
				t.Fatalf("the scripted tries passed %v tests, want %v", got, c.passed)
			}
			if r.KeptTry != c.keptTry || r.KeepError != "" || (r.KeptGrade != nil) != (c.keptPassed >= 0) ||
				(r.KeptGrade != nil && r.KeptGrade.TestsOK != c.keptPassed) {
				t.Errorf("kept try %d, grade %+v, error %q; want try %d", r.KeptTry, r.KeptGrade, r.KeepError, c.keptTry)
			}
			if got := solutionLeft(t, WorkspaceRoot(opts.RunDir, runnerExercises(t)[3])); got != c.left {
				t.Errorf("the workspace holds\n%s\nwant\n%s", got, c.left)
			}
			if s := Summarize([]ExerciseResult{r}); (len(s.KeptEarlier) == 1) != (c.keptTry < len(r.Tries)) {
				t.Errorf("the summary's kept_earlier %v with kept try %d of %d", s.KeptEarlier, c.keptTry, len(r.Tries))
			}
		})
	}
}

// A remote sandbox keeps the better try the same way: through its own filesystem server's checkpoint tools. Both
// the sandbox's workspace and the copy on this machine end with try 1's code.
func TestKeepTheBetterTryInARemoteSandbox(t *testing.T) {
	sb, remote := startRemote(t, "remote-1") // with a fresh checkpoint store of its own
	r, opts := keepRun(t, NewPool(sb), writes(proverbSix, proverbOne))
	checkKeptFirst(t, r, passedPerTry(r), 6)
	if r.Sandbox != "remote-1" {
		t.Errorf("ran on %q", r.Sandbox)
	}
	if got := solutionLeft(t, remote); got != proverbSix {
		t.Errorf("the sandbox's workspace holds\n%s\nwant try 1's code", got)
	}
	if got := solutionLeft(t, WorkspaceRoot(opts.RunDir, runnerExercises(t)[3])); got != proverbSix {
		t.Errorf("the copy holds\n%s\nwant try 1's code", got)
	}
}

// With three tries, the try after a regression is told so with the agent's own hint: both counts, the diff since
// the better try, and its checkpoint to restore. The model restores it itself, and that try (as good as try 1,
// later) is kept.
func TestTheTryAfterARegressionGetsTheHint(t *testing.T) {
	ex := runnerExercises(t)[3]
	r, opts := keepRun(t, nil, append(writes(proverbSix, proverbOne),
		looptest.Call{Name: protocol.ToolRestore, Args: looptest.Args(protocol.RestoreInput{ID: "cp-1"})}), nil, nil, func(t testing.TB, goal string) {
		wants(t, "try 3's prompt", goal,
			"The best try so far, try 1, passed 6 of 8 tests; try 2 passed 1.\nThat is the bar",
			"This is worse than an earlier state: checkpoint cp-1 had 2 failing tests; now (cp-2) there are 7 failing tests.",
			"--- a/proverb/proverb.py\n+++ b/proverb/proverb.py\n", "+    return []  # only the empty proverb: 1 of 8\n",
			`sandbox_restore (id "cp-1"`)
		if strings.Count(goal, "The tests failed.") != 2 {
			t.Errorf("try 3's prompt should carry both earlier retries:\n%s", goal)
		}
	})
	if got := passedPerTry(r); got[0] != 6 || got[1] != 1 || got[2] != 6 {
		t.Fatalf("the tries passed %v tests", got)
	}
	if r.KeptTry != 3 || r.KeptGrade != nil || r.KeepError != "" {
		t.Errorf("kept try %d, grade %+v, error %q; want try 3 as graded", r.KeptTry, r.KeptGrade, r.KeepError)
	}
	if got := solutionLeft(t, WorkspaceRoot(opts.RunDir, ex)); got != proverbSix {
		t.Errorf("the workspace holds\n%s", got)
	}
}

// fakeCheckpoints is a sandbox offering the checkpoint tools; refuse names the ones that answer with a tool error.
type fakeCheckpoints struct {
	refuse map[string]bool
	calls  []string
}

func (f *fakeCheckpoints) Tools() []loop.Tool {
	return []loop.Tool{{Name: protocol.ToolCheckpoint}, {Name: protocol.ToolDiff}, {Name: protocol.ToolRestore}}
}

func (f *fakeCheckpoints) Call(_ context.Context, name string, _ json.RawMessage) (loop.ToolResult, error) {
	f.calls = append(f.calls, name)
	if f.refuse[name] {
		return loop.ToolResult{IsError: true, Text: "refused for the test"}, nil
	}
	out, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("cp-%d", len(f.calls))})
	return loop.ToolResult{Structured: out}, nil
}

// When the better try cannot be put back, keep_error says why; it is the sandbox's checkpoint store, which a resume
// would meet again, so the result is finished. A restore that failed is still followed by a grade of what the
// workspace holds; a grade that fails there is an infrastructure error (a resume runs the exercise again). A sandbox
// without checkpoint tools keeps the last try with no error.
func TestKeepErrors(t *testing.T) {
	ctx := context.Background()
	tries := []TryResult{{Try: 1, Tests: 8, TestsOK: 6}, {Try: 2, Tests: 8, TestsOK: 1}}
	run := func(sb loop.Sandbox, gradeErr error) (ExerciseResult, int) {
		k := newKeeper(sb)
		var res ExerciseResult
		for i, tr := range tries {
			must(t, k.graded(ctx, tr, i == 0))
			res.Tries = append(res.Tries, tr)
		}
		grades := 0
		must(t, k.keepBest(ctx, &res, func() (GradeResult, error) { grades++; return GradeResult{Tests: 8, TestsOK: 6}, gradeErr }))
		return res, grades
	}

	res, grades := run(&fakeCheckpoints{}, nil)
	if res.KeptTry != 1 || res.KeepError != "" || grades != 1 || res.KeptGrade == nil || res.KeptGrade.TestsOK != 6 || !finished(res) {
		t.Errorf("positive control: %+v after %d grades", res, grades)
	}
	res, grades = run(&fakeCheckpoints{refuse: map[string]bool{protocol.ToolCheckpoint: true}}, nil)
	if res.KeptTry != 2 || grades != 0 || !finished(res) ||
		!strings.Contains(res.KeepError, "try 1 passed more tests (6) than try 2 (1), but its checkpoint could not be taken: ") {
		t.Errorf("checkpoint refused: %+v after %d grades", res, grades)
	}
	res, grades = run(&fakeCheckpoints{refuse: map[string]bool{protocol.ToolRestore: true}}, nil)
	if res.KeptTry != 2 || grades != 1 || res.KeptGrade == nil || !finished(res) ||
		!strings.Contains(res.KeepError, "restoring try 1 (checkpoint cp-1): ") {
		t.Errorf("restore refused: %+v after %d grades", res, grades)
	}
	res, grades = run(&fakeCheckpoints{}, errors.New("the grader broke"))
	if res.KeptTry != 1 || grades != 1 || res.KeptGrade == nil || finished(res) ||
		resultError(res) != "grading the workspace after the restore: the grader broke" {
		t.Errorf("grade failed after the restore: %+v", res)
	}
	res, grades = run(localSandbox{}, nil) // the test double offers sandbox_run_command alone
	if res.KeptTry != 2 || grades != 0 || res.KeepError != "" || res.KeptGrade != nil {
		t.Errorf("no checkpoint tools: %+v after %d grades", res, grades)
	}
}
