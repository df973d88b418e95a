package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
)

// The runner puts a model to work on each exercise and lets the grader, not the model, say whether it passed:
// a fresh copy of the exercise, the agent loop over it through the sandbox, then the exercise's own tests run by
// the harness after every test and build file is put back from the pristine source. A second try sees the first
// try's test output.

// RunOptions configure Run.
type RunOptions struct {
	Exercises []Exercise
	RunDir    string // results/, transcripts/ and work/ go here
	Tries     int    // tries per exercise; 2 when zero
	Workers   int    // exercises at once; the pool's size when zero (1 without a pool)
	// Resume keeps the finished result files already in RunDir and runs only the rest; without it a RunDir that
	// holds results for any of the exercises is refused, so two runs never mix.
	Resume bool
	Model  loop.Model
	Limits loop.Limits // per try
	Price  loop.Price
	Grader *Grader
	// Pool is the sandboxes the exercises are worked on and graded in. Without one, the run is local: a pool of
	// Workers in-process sandboxes whose tests run in GradeSandbox and whose model works in AgentSandbox.
	Pool         *Pool
	GradeSandbox SandboxFactory
	AgentSandbox SandboxFactory
	// Progress, when set, is told about every exercise that is resumed or finished.
	Progress *Progress
	// Info is written to run.json (and checked against it on resume).
	Info RunInfo
}

// RunInfo is run.json: what a run was asked to do. A resume must ask for the same model and tries.
type RunInfo struct {
	Model           string      `json:"model"`
	Tries           int         `json:"tries"`
	Limits          loop.Limits `json:"limits"`
	Price           *loop.Price `json:"price,omitempty"`            // per million tokens; absent when unknown (costs are then 0)
	Benchmark       string      `json:"benchmark,omitempty"`        // the benchmark folder's name
	BenchmarkCommit string      `json:"benchmark_commit,omitempty"` // its COMMIT file, when it has one
	Started         time.Time   `json:"started"`
	Command         []string    `json:"command,omitempty"`
}

// RunReport is what Run did.
type RunReport struct {
	// Results are the selected exercises' results in their order, resumed ones included; an exercise the run
	// did not reach (interrupted) has none.
	Results []ExerciseResult
	Resumed int
	// Errors are the exercises whose result records an infrastructure error (a -resume runs them again).
	Errors  []string
	Summary Summary
}

// maxConsecutiveErrors stops a run whose infrastructure keeps failing (no model server, a broken sandbox)
// before it burns through every exercise recording the same error.
const maxConsecutiveErrors = 3

// Run works through opts.Exercises and writes results/<lang>/<slug>.json for each, then summary.json and
// summary.txt for the selection. The error is for the run itself: bad options, a run folder that cannot be used,
// an interruption, or infrastructure that kept failing. A model that fails exercises is not an error.
func Run(ctx context.Context, opts RunOptions) (RunReport, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return RunReport{}, err
	}
	if err := opts.claimRunDir(); err != nil {
		return RunReport{}, err
	}
	results, todo, err := opts.loadFinished()
	if err != nil {
		return RunReport{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opts.runAll(ctx, cancel, todo, results)
	report := newReport(results)
	report.Resumed = len(opts.Exercises) - len(todo)
	if err := SaveSummary(opts.RunDir, report.Summary); err != nil {
		return report, fmt.Errorf("saving the summary: %w", err)
	}
	return report, context.Cause(ctx)
}

// withDefaults checks the options and fills in the default tries and workers.
func (o RunOptions) withDefaults() (RunOptions, error) {
	if err := o.check(); err != nil {
		return o, err
	}
	o.Tries = cmp.Or(o.Tries, 2)
	if o.Workers == 0 {
		o.Workers = 1
		if o.Pool != nil {
			o.Workers = o.Pool.Size()
		}
	}
	if o.Pool == nil {
		o.Pool = LocalPool(o.Workers, o.GradeSandbox, o.AgentSandbox)
	}
	return o, nil
}

// loadFinished reads the result files a resumed run already finished (one per exercise, nil where there is none)
// and lists the indexes of the exercises still to run.
func (o RunOptions) loadFinished() (results []*ExerciseResult, todo []int, err error) {
	results = make([]*ExerciseResult, len(o.Exercises))
	for i, ex := range o.Exercises {
		r, ok, err := LoadResult(o.RunDir, ex.ID())
		if err != nil {
			return nil, nil, err
		}
		if ok && finished(r) {
			results[i] = &r
			o.Progress.add(r, true)
			continue
		}
		todo = append(todo, i)
	}
	return results, todo, nil
}

// runAll runs the exercises at the todo indexes on o.Workers workers, each on a sandbox of the pool, and saves
// each result as it comes. No more work is handed out once ctx ends, or once cancel was called: a result could not
// be saved, maxConsecutiveErrors exercises in a row failed on infrastructure, or every sandbox failed.
func (o RunOptions) runAll(ctx context.Context, cancel context.CancelCauseFunc, todo []int, results []*ExerciseResult) {
	stopTicker := o.Progress.tick(time.Second)
	var mu sync.Mutex
	streak := 0
	parallel(ctx, o.Workers, todo, func(i int) {
		o.Progress.started()
		start := time.Now()
		r, err := onPool(ctx, o.Pool, func(sb *PoolSandbox) (*ExerciseResult, error) {
			return o.exercise(ctx, sb, o.Exercises[i])
		})
		switch {
		case errors.Is(err, ErrGaveUp):
			// Recorded as an infrastructure error: a resume runs it again.
			ex := o.Exercises[i]
			r = &ExerciseResult{ID: ex.ID(), Lang: ex.Lang, Slug: ex.Slug, Model: o.Model.Name(), StartedAt: start.UTC(),
				Seconds: time.Since(start).Seconds(), Tries: []TryResult{{Try: 1, Error: err.Error()}}}
		case err != nil && ctx.Err() == nil:
			cancel(err) // the pool is empty
		}
		if r == nil {
			return // interrupted: no result, a resume runs it
		}
		if err := SaveResult(o.RunDir, *r); err != nil {
			cancel(fmt.Errorf("saving the result of %s: %w", r.ID, err))
			return
		}
		mu.Lock()
		results[i] = r
		if streak = errorStreak(streak, *r); streak >= maxConsecutiveErrors {
			cancel(fmt.Errorf("%d exercises in a row failed with an infrastructure error; the last: %s: %s", streak, r.ID, resultError(*r)))
		}
		mu.Unlock()
		o.Progress.add(*r, false)
	})
	stopTicker()
	o.Progress.finish()
}

// errorStreak is how many exercises in a row have failed on infrastructure, r the latest.
func errorStreak(streak int, r ExerciseResult) int {
	if resultError(r) != "" {
		return streak + 1
	}
	return 0
}

// newReport gathers the results there are, in the exercises' order, and sums them up.
func newReport(results []*ExerciseResult) RunReport {
	var report RunReport
	for _, r := range results {
		if r == nil {
			continue
		}
		report.Results = append(report.Results, *r)
		if resultError(*r) != "" {
			report.Errors = append(report.Errors, r.ID)
		}
	}
	report.Summary = Summarize(report.Results)
	return report
}

func (o RunOptions) check() error {
	switch {
	case len(o.Exercises) == 0:
		return errors.New("no exercises selected: check the languages, keywords and benchmark folder")
	case o.RunDir == "":
		return errors.New("no results folder given")
	case o.Tries < 0 || o.Workers < 0:
		return errors.New("tries and workers must be positive")
	case o.Model == nil || o.Grader == nil || (o.Pool == nil && (o.GradeSandbox == nil || o.AgentSandbox == nil)):
		return errors.New("a benchmark run needs a model, a grader, and a pool of sandboxes or a grading sandbox and an agent sandbox")
	}
	return nil
}

// claimRunDir makes the run folder and writes run.json, or, on resume, checks that the run there asked for the
// same model and tries. Without Resume, a folder that already holds a result for a selected exercise is refused.
func (o RunOptions) claimRunDir() error {
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	info := o.Info
	info.Model, info.Tries, info.Limits = o.Model.Name(), o.Tries, o.Limits
	if o.Price.Known() {
		info.Price = &o.Price
	}
	if info.Started.IsZero() {
		info.Started = time.Now().UTC()
	}
	path := filepath.Join(o.RunDir, "run.json")
	if o.Resume {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Nothing to resume: a new run in this folder.
		case err != nil:
			return fmt.Errorf("reading run.json: %w", err)
		default:
			var old RunInfo
			if err := json.Unmarshal(data, &old); err != nil {
				return fmt.Errorf("run.json in the results folder is not valid: %v", err)
			}
			if old.Model != info.Model || old.Tries != info.Tries {
				return fmt.Errorf("cannot resume: the results folder holds a run of model %q with %d tries, this run asks for %q with %d tries; use another -results folder",
					old.Model, old.Tries, info.Model, info.Tries)
			}
			return nil
		}
	} else {
		for _, ex := range o.Exercises {
			if _, err := os.Stat(ResultPath(o.RunDir, ex.ID())); err == nil {
				return fmt.Errorf("the results folder already holds a result for %s: give -resume to continue that run, or another -results folder", ex.ID())
			}
		}
	}
	return writeJSON(path, info)
}

// finished says a result file needs no more work: graded to the end, or ungradable. A result that records an
// infrastructure error is run again on resume.
func finished(r ExerciseResult) bool {
	return r.Ungradable != "" || (len(r.Tries) > 0 && resultError(r) == "")
}

// resultError is the first infrastructure error a result records, or "".
func resultError(r ExerciseResult) string {
	for _, t := range r.Tries {
		if t.Error != "" {
			return t.Error
		}
	}
	if r.KeptGrade != nil {
		return r.KeptGrade.Error
	}
	return ""
}

// TranscriptPath is where the agent's transcript of one try goes (try-N.jsonl, with the loop's progress lines in
// try-N.log beside it): outside the workspace, so the model can neither read nor change it.
func TranscriptPath(runDir, id string, try int) string {
	return filepath.Join(runDir, "transcripts", filepath.FromSlash(id), fmt.Sprintf("try-%d.jsonl", try))
}

// exercise runs the tries of one exercise on sb. The result is nil when the run was interrupted before the
// exercise ended. A SandboxFailure is returned as the error (no result: the exercise starts again on another
// sandbox); any other infrastructure failure is recorded in the result (as a try's Error) so the summary and a
// resume see it.
func (o RunOptions) exercise(ctx context.Context, sb *PoolSandbox, ex Exercise) (*ExerciseResult, error) {
	start := time.Now()
	res := ExerciseResult{ID: ex.ID(), Lang: ex.Lang, Slug: ex.Slug, Model: o.Model.Name(), Sandbox: sb.Name, StartedAt: start.UTC()}
	fail := func(err error) (*ExerciseResult, error) {
		if ctx.Err() != nil {
			return nil, nil
		}
		if sf := asSandboxFailure(err); sf != nil {
			return nil, sf
		}
		res.Tries = append(res.Tries, TryResult{Try: len(res.Tries) + 1, Error: err.Error()})
		res.Seconds = time.Since(start).Seconds()
		return &res, nil
	}
	ws, err := Prepare(ex, o.RunDir)
	if err != nil {
		return fail(err)
	}
	gsb, closeG, err := sb.Grade(ctx, ws.Root)
	if err != nil {
		return fail(fmt.Errorf("opening the grading sandbox: %w", err))
	}
	defer closeG()
	cmd, ungradable, err := o.Grader.Command(ctx, gsb, ex)
	if err != nil {
		return fail(err)
	}
	if ungradable != "" {
		// Known before any model call: no money is spent on an exercise that cannot be graded here.
		res.Ungradable = ungradable
		res.Seconds = time.Since(start).Seconds()
		return &res, nil
	}
	asb, closeA, err := sb.Agent(ctx, ws.Root)
	if err != nil {
		return fail(fmt.Errorf("opening the agent's sandbox: %w", err))
	}
	defer closeA()
	goal, err := InstructionsPrompt(ex, ws, cmd)
	if err != nil {
		return fail(err)
	}
	keep := newKeeper(asb) // keep.go
	for try := 1; try <= o.Tries; try++ {
		tr, grade, err := o.try(ctx, ex, ws, gsb, asb, goal, try)
		if ctx.Err() != nil {
			return nil, nil
		}
		if sf := asSandboxFailure(err); sf != nil {
			return nil, sf
		}
		if err != nil {
			tr.Error = err.Error()
		}
		if grade.Ungradable != "" {
			res.Ungradable, res.Tries = grade.Ungradable, nil
			break
		}
		res.Tries = append(res.Tries, tr)
		if tr.Error != "" {
			// The result is an error, run again on resume: nothing to keep.
			res.Seconds = time.Since(start).Seconds()
			return &res, nil
		}
		more := !tr.Passed && try < o.Tries
		if err := keep.graded(ctx, tr, more); err != nil {
			return fail(err)
		}
		if !more {
			break
		}
		facts, err := keep.retry(ctx, grade.Output, o.Limits.ToolOutputBytes)
		if err != nil {
			return fail(err)
		}
		retry, err := RetryPrompt(ex, ws, facts)
		if err != nil {
			return fail(err)
		}
		// A new conversation: the instructions again, then the failed tests. The workspace keeps the last try's
		// code.
		goal += "\n\n---\n\n" + retry
	}
	if res.Ungradable == "" {
		if err := keep.keepBest(ctx, &res, func() (GradeResult, error) { return o.Grader.Grade(ctx, gsb, ex, ws) }); err != nil {
			return fail(err)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return &res, nil
}

// try is one agent run and its grade. The returned error is an infrastructure failure of the model server, the
// sandbox or the grader; the try's figures are filled in as far as they got.
func (o RunOptions) try(ctx context.Context, ex Exercise, ws Workspace, gsb, asb loop.Sandbox, goal string, try int) (TryResult, GradeResult, error) {
	tpath := TranscriptPath(o.RunDir, ex.ID(), try)
	if err := os.MkdirAll(filepath.Dir(tpath), 0o755); err != nil {
		return TryResult{Try: try}, GradeResult{}, fmt.Errorf("transcript folder: %w", err)
	}
	tf, err := os.OpenFile(tpath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return TryResult{Try: try}, GradeResult{}, fmt.Errorf("transcript: %w", err)
	}
	// The loop's progress lines, one per step, go beside the transcript: tail -f follows a try as it runs.
	lf, err := os.OpenFile(strings.TrimSuffix(tpath, ".jsonl")+".log", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		tf.Close()
		return TryResult{Try: try}, GradeResult{}, fmt.Errorf("progress log: %w", err)
	}
	cfg := loop.Config{Goal: goal, Limits: o.Limits, Price: o.Price, Observers: []loop.Observer{loop.NewTranscript(tf), loop.NewProgress(lf)}}
	lr, runErr := loop.Run(ctx, cfg, o.Model, asb)
	tf.Close()
	lf.Close()

	// Grade whatever the model left, even after a model failure: the figures are worth keeping, though the try
	// is then marked as an error and run again on resume.
	g, gradeErr := o.Grader.Grade(ctx, gsb, ex, ws)
	tr := NewTry(try, g)
	tr.Turns, tr.StopReason = lr.Turns, lr.StopReason
	tr.PromptTokens, tr.CompletionTokens = lr.TokensIn, lr.TokensOut
	if lr.CostUSD != nil {
		tr.Cost = *lr.CostUSD
	}
	tr.AgentSeconds = lr.Seconds
	malformed, err := MalformedCalls(tpath)
	tr.MalformedResponses = malformed
	switch {
	case runErr != nil:
		return tr, g, fmt.Errorf("agent: %w", runErr)
	case gradeErr != nil:
		return tr, g, fmt.Errorf("grading: %w", gradeErr)
	case err != nil:
		return tr, g, fmt.Errorf("reading the transcript: %w", err)
	}
	return tr, g, nil
}

// malformedOutcomes are the transcript outcomes of a tool call the model got wrong in form: arguments that are
// not a JSON object, or a tool no server offers. A call the tool refuses (a missing file, a path outside the
// workspace, arguments that fail the tool's schema) is well-formed: the model asked in the right shape.
var malformedOutcomes = []string{loop.CallBadArguments, loop.CallUnknownTool}

// MalformedCalls counts the tool calls in a transcript file whose outcome is in malformedOutcomes.
func MalformedCalls(transcript string) (int, error) {
	f, err := os.Open(transcript)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20) // the transcript keeps whole tool outputs
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line[:min(len(line), 40)]), `"tool"`) {
			continue
		}
		var ev struct{ Type, Outcome string }
		if err := json.Unmarshal(line, &ev); err != nil {
			return n, fmt.Errorf("%s: %v", filepath.Base(transcript), err)
		}
		if ev.Type == "tool" && slices.Contains(malformedOutcomes, ev.Outcome) {
			n++
		}
	}
	return n, sc.Err()
}
