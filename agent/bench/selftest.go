package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The selftest proves the grader before any model is blamed: each exercise's reference solution must pass and
// its stub must fail. An exercise this machine cannot grade (a missing toolchain, a library only a registry has)
// is reported as ungradable with the reason, not as a failure.

// SelfTestOptions configures SelfTest.
type SelfTestOptions struct {
	Exercises []Exercise
	RunDir    string         // where the copies go; each exercise's copy is removed when it is done unless Keep
	Workers   int            // parallel exercises; the pool's size when zero (2 without a pool)
	Keep      bool           // keep the workspaces for inspection
	Pool      *Pool          // the sandboxes to grade in; without one, Workers in-process sandboxes from Sandbox
	Sandbox   SandboxFactory // required without a Pool
	Grader    *Grader        // required
	// Progress, when set, is called after each exercise (from the worker that finished it).
	Progress func(done, total int, r SelfTestResult)
}

// Self-test statuses.
const (
	SelfOK         = "ok"         // reference passed and stub failed
	SelfUngradable = "ungradable" // this machine cannot grade it; Reason says why
	SelfProblem    = "problem"    // the grader is wrong about this exercise; Reason says how
)

// SelfTestResult is one exercise's selftest.
type SelfTestResult struct {
	ID      string      `json:"id"`
	Lang    string      `json:"language"`
	Status  string      `json:"status"`
	Reason  string      `json:"reason,omitempty"`
	Sandbox string      `json:"sandbox,omitempty"` // the pool's sandbox that graded it
	Ref     GradeResult `json:"reference"`
	Stub    GradeResult `json:"stub"`
	Seconds float64     `json:"seconds"`
}

// SelfTest grades every exercise twice, reference and stub, on opts.Workers workers, each exercise in one sandbox
// of the pool, and returns the results in the exercises' order. An error is returned only when the run itself
// breaks (context cancelled, every sandbox of the pool failed); any other failure on one exercise is that
// exercise's problem. An exercise whose sandbox failed (a SandboxFailure) is graded again on another.
func SelfTest(ctx context.Context, opts SelfTestOptions) ([]SelfTestResult, error) {
	if (opts.Sandbox == nil && opts.Pool == nil) || opts.Grader == nil {
		return nil, errors.New("selftest needs a pool of sandboxes or a sandbox factory, and a grader")
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = 2
		if opts.Pool != nil {
			workers = opts.Pool.Size()
		}
	}
	pool := opts.Pool
	if pool == nil {
		pool = LocalPool(workers, opts.Sandbox, nil)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	results := make([]SelfTestResult, len(opts.Exercises))
	var mu sync.Mutex
	done := 0
	parallel(ctx, workers, indexes(len(opts.Exercises)), func(i int) {
		ex := opts.Exercises[i]
		r, err := onPool(ctx, pool, func(sb *PoolSandbox) (SelfTestResult, error) {
			return selfTestOne(ctx, opts, sb, ex)
		})
		if errors.Is(err, ErrGaveUp) {
			r, err = SelfTestResult{ID: ex.ID(), Lang: ex.Lang, Status: SelfProblem, Reason: err.Error()}, nil
		}
		if err != nil {
			cancel(err) // the pool is empty, or ctx ended
			return
		}
		results[i] = r
		if opts.Progress != nil {
			mu.Lock()
			done++
			opts.Progress(done, len(opts.Exercises), results[i])
			mu.Unlock()
		}
	})
	return results, context.Cause(ctx)
}

// selfTestOne grades ex's reference and stub in sb. The error is a SandboxFailure, for the exercise to be graded
// again elsewhere; anything else that goes wrong is the result's problem.
func selfTestOne(ctx context.Context, opts SelfTestOptions, sb *PoolSandbox, ex Exercise) (res SelfTestResult, _ error) {
	start := time.Now()
	res = SelfTestResult{ID: ex.ID(), Lang: ex.Lang, Sandbox: sb.Name}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	problem := func(format string, args ...any) (SelfTestResult, error) {
		res.Status, res.Reason = SelfProblem, fmt.Sprintf(format, args...)
		return res, nil
	}

	ref, err := gradeCopy(ctx, opts, sb, ex, true)
	if sf := asSandboxFailure(err); sf != nil {
		return res, sf
	}
	if err != nil {
		return problem("reference: %v", err)
	}
	stub, err := gradeCopy(ctx, opts, sb, ex, false)
	if sf := asSandboxFailure(err); sf != nil {
		return res, sf
	}
	if err != nil {
		return problem("stub: %v", err)
	}
	res.Ref, res.Stub = ref, stub
	switch {
	case ref.Ungradable != "" && stub.Ungradable == "":
		// The model's tries are gradable (the stub's build works); only the reference needs more.
		if stub.Passed {
			return problem("the stub passed its tests")
		}
		res.Status, res.Reason = SelfUngradable, "reference solution "+ref.Ungradable+"; the stub is gradable and fails as it should"
	case ref.Ungradable != "":
		res.Status, res.Reason = SelfUngradable, ref.Ungradable
	case stub.Ungradable != "":
		res.Status, res.Reason = SelfUngradable, stub.Ungradable
	case !ref.Passed && stub.Passed:
		return problem("the reference solution failed and the stub passed")
	case ref.Suspect != "":
		return problem("the grader finds the reference solution suspect: %s", ref.Suspect)
	case stub.Suspect != "":
		return problem("the grader finds the stub suspect: %s", stub.Suspect)
	case !ref.Passed:
		return problem("the reference solution failed (exit %d%s): %s", ref.ExitCode, timedOutNote(ref), ref.Verdict)
	case stub.Passed && isRefactoring(ex):
		res.Status, res.Reason = SelfOK, "refactoring exercise: the stub already passes, by design"
	case stub.Passed:
		return problem("the stub passed its tests")
	default:
		res.Status = SelfOK
	}
	return res, nil
}

func timedOutNote(r GradeResult) string {
	if r.TimedOut {
		return ", timed out"
	}
	return ""
}

// gradeCopy prepares a fresh copy of ex, puts the reference solution in place when reference is set, and grades
// it in a sandbox of its own.
func gradeCopy(ctx context.Context, opts SelfTestOptions, pool *PoolSandbox, ex Exercise, reference bool) (GradeResult, error) {
	ws, err := Prepare(ex, opts.RunDir)
	if err != nil {
		return GradeResult{}, err
	}
	if !opts.Keep {
		defer os.RemoveAll(ws.Root)
	}
	if reference {
		if err := PlaceReference(ex, ws); err != nil {
			return GradeResult{}, err
		}
	}
	sb, closeSB, err := pool.Grade(ctx, ws.Root)
	if err != nil {
		return GradeResult{}, fmt.Errorf("opening a sandbox: %w", err)
	}
	defer closeSB()
	return opts.Grader.grade(ctx, sb, ex, ws, reference)
}

// PlaceReference puts ex's reference solution (files.example) over the solution files in ws. An example file
// replaces the solution file of the same name, else the one solution file with its extension
// (.meta/example.go onto two_bucket.go); example files left over (Java reference solutions with helper classes)
// go beside the first solution file with their extension. A Rust example's manifest, when the track has one,
// replaces Cargo.toml.
func PlaceReference(ex Exercise, ws Workspace) error {
	if len(ex.Example) == 0 {
		return fmt.Errorf("%s: .meta/config.json lists no files.example", ex.ID())
	}
	r, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return err
	}
	defer r.Close()
	targets, err := referenceTargets(ex)
	if err != nil {
		return err
	}
	for src, dst := range targets {
		data, err := os.ReadFile(filepath.Join(ex.Dir, filepath.FromSlash(src)))
		if err != nil {
			return fmt.Errorf("%s: reading the reference solution: %w", ex.ID(), err)
		}
		if err := writeInto(r, dst, data, 0o644); err != nil {
			return fmt.Errorf("%s: placing %s: %w", ex.ID(), dst, err)
		}
	}
	return nil
}

// referenceTargets maps each example file (and the Rust example manifest) to where it goes in the exercise.
func referenceTargets(ex Exercise) (map[string]string, error) {
	out := map[string]string{}
	used := map[string]bool{}
	var rest []string
	for _, e := range ex.Example {
		if i := slices.IndexFunc(ex.Solution, func(s string) bool { return path.Base(s) == path.Base(e) }); i >= 0 {
			out[e], used[ex.Solution[i]] = ex.Solution[i], true
		} else {
			rest = append(rest, e)
		}
	}
	byExt := func(list []string, ext string, skip map[string]bool) []string {
		var m []string
		for _, f := range list {
			if path.Ext(f) == ext && !skip[f] {
				m = append(m, f)
			}
		}
		return m
	}
	for _, e := range rest {
		ext := path.Ext(e)
		exs, sols := byExt(rest, ext, nil), byExt(ex.Solution, ext, used)
		switch {
		case len(exs) == 1 && len(sols) == 1:
			out[e], used[sols[0]] = sols[0], true
		case len(byExt(ex.Solution, ext, nil)) > 0:
			out[e] = path.Join(path.Dir(byExt(ex.Solution, ext, nil)[0]), path.Base(e))
		default:
			return nil, fmt.Errorf("%s: cannot tell where example %s goes: no solution file ends in %q", ex.ID(), e, ext)
		}
	}
	if ex.Lang == "rust" && slices.Contains(ex.Solution, "Cargo.toml") {
		if _, err := os.Stat(filepath.Join(ex.Dir, filepath.FromSlash(cargoExampleManifest))); err == nil {
			out[cargoExampleManifest] = "Cargo.toml"
		}
	}
	return out, nil
}

// LangSummary is one language's selftest figures.
type LangSummary struct {
	Lang       string            `json:"language"`
	Exercises  int               `json:"exercises"`
	Gradable   int               `json:"gradable"`
	RefPass    int               `json:"reference_passed"`
	StubFail   int               `json:"stub_failed"`
	Refactor   int               `json:"refactoring"`          // refactoring exercises, whose stub passes by design
	Ungradable map[string]string `json:"ungradable,omitempty"` // id -> reason
	Problems   map[string]string `json:"problems,omitempty"`   // id -> what went wrong
	Seconds    float64           `json:"seconds"`              // summed over the language's exercises
}

// SummarizeSelfTest groups results by language, in Languages order.
func SummarizeSelfTest(results []SelfTestResult) []LangSummary {
	by := map[string]*LangSummary{}
	for _, r := range results {
		s := by[r.Lang]
		if s == nil {
			s = &LangSummary{Lang: r.Lang}
			by[r.Lang] = s
		}
		s.Exercises++
		s.Seconds += r.Seconds
		switch r.Status {
		case SelfUngradable:
			if s.Ungradable == nil {
				s.Ungradable = map[string]string{}
			}
			s.Ungradable[r.ID] = r.Reason
			continue
		case SelfProblem:
			if s.Problems == nil {
				s.Problems = map[string]string{}
			}
			s.Problems[r.ID] = r.Reason
		}
		s.Gradable++
		if r.Ref.Passed {
			s.RefPass++
		}
		if r.Stub.Ungradable == "" && !r.Stub.Passed {
			s.StubFail++
		}
		if r.Status == SelfOK && r.Stub.Passed {
			s.Refactor++
		}
	}
	var out []LangSummary
	for _, l := range Languages {
		if s := by[l]; s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// SelfTestTable renders summaries as a plain-text table followed by the ungradable exercises and the problems.
func SelfTestTable(sums []LangSummary, wall time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %9s %8s %8s %9s %8s %10s %8s %9s\n", "language", "exercises", "gradable", "ref-pass", "stub-fail", "refactor", "ungradable", "problems", "seconds")
	var t LangSummary
	nu, np := 0, 0
	for _, s := range sums {
		fmt.Fprintf(&b, "%-11s %9d %8d %8d %9d %8d %10d %8d %9.0f\n", s.Lang, s.Exercises, s.Gradable, s.RefPass, s.StubFail, s.Refactor, len(s.Ungradable), len(s.Problems), s.Seconds)
		t.Exercises, t.Gradable, t.RefPass = t.Exercises+s.Exercises, t.Gradable+s.Gradable, t.RefPass+s.RefPass
		t.StubFail, t.Refactor, t.Seconds = t.StubFail+s.StubFail, t.Refactor+s.Refactor, t.Seconds+s.Seconds
		nu, np = nu+len(s.Ungradable), np+len(s.Problems)
	}
	fmt.Fprintf(&b, "%-11s %9d %8d %8d %9d %8d %10d %8d %9.0f\n", "total", t.Exercises, t.Gradable, t.RefPass, t.StubFail, t.Refactor, nu, np, t.Seconds)
	fmt.Fprintf(&b, "wall time %s\n", wall.Round(time.Second))
	for _, s := range sums {
		for _, id := range sortedKeys(s.Ungradable) {
			fmt.Fprintf(&b, "ungradable %s: %s\n", id, s.Ungradable[id])
		}
	}
	for _, s := range sums {
		for _, id := range sortedKeys(s.Problems) {
			fmt.Fprintf(&b, "PROBLEM %s: %s\n", id, s.Problems[id])
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// isRefactoring says whether ex is one of Exercism's refactoring exercises (ledger, markdown, tree-building):
// their stub is working, ugly code that already passes the tests, and the task is to improve it. Such an exercise
// gives a model a free pass, as it does in Aider's harness; the selftest checks only that the reference passes.
func isRefactoring(ex Exercise) bool {
	data, err := os.ReadFile(filepath.Join(ex.Dir, ".docs", "instructions.md"))
	return err == nil && refactoringNote.Match(data)
}

var refactoringNote = regexp.MustCompile(`(?im)^(Refactor\b|.*\bis a refactoring exercise\b)`)
