package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goalbox/goalbox/agent/bench"
	"github.com/goalbox/goalbox/agent/openaichat"
	"github.com/goalbox/goalbox/pkg/envflag"
)

// runBenchmarks runs the Aider Polyglot benchmark with the model and returns the exit status: 0 when every
// selected exercise was run and graded (whatever the pass rate), 2 for a configuration or infrastructure error,
// an interrupted run, or exercises whose result records an infrastructure error (-resume runs those again).
func runBenchmarks(ctx context.Context, o BenchmarkOptions, args []string, stdout, stderr io.Writer) int {
	dir, exercises, err := selectExercises(o.ExerciseOptions)
	if err != nil {
		return failed(stderr, "%v", err)
	}
	model, err := openaichat.New(o.client())
	if err != nil {
		return failed(stderr, "%v", err)
	}
	results := o.Results
	if results == "" {
		results = filepath.Join("results", time.Now().UTC().Format("20060102T150405Z")+"--"+safeName(o.Model))
	}
	results, err = filepath.Abs(results)
	if err != nil {
		return failed(stderr, "results folder: %v", err)
	}
	grader := bench.NewGrader()
	grader.Timeout = o.GradeTimeout
	// Locally, the model's commands keep their caches in the run folder, apart from the grader's: nothing a model
	// leaves in a cache reaches the grading, so the grader may keep its compiler cache. A remote sandbox's model
	// and grader share the executor's home, so there it does without.
	if o.SandboxPool != "" {
		grader.Toolchains = bench.ImageToolchains()
	} else {
		grader.Toolchains.CompilerCache = true
	}
	pool, threads, err := benchPool(o.PoolOptions, stderr, graderSandbox(grader.Toolchains), modelSandbox(grader.Toolchains, results))
	if err != nil {
		return failed(stderr, "%v", err)
	}
	progress := bench.NewProgress(stderr, len(exercises), isTerminal(stderr))
	fmt.Fprintf(stderr, "agent: benchmark %s: %d exercises, model %s, %d tries, %d threads, %s, results in %s\n",
		filepath.Base(dir), len(exercises), o.Model, o.Tries, threads, poolNote(o.PoolOptions, pool), results)
	if !o.price().Known() {
		fmt.Fprintf(stderr, "agent: no price known for %s: costs are reported as 0 (give -price-in/-price-out, USD per million tokens)\n", o.Model)
	}
	report, runErr := bench.Run(ctx, bench.RunOptions{
		Exercises: exercises, RunDir: results, Tries: o.Tries, Workers: threads, Resume: o.Resume,
		Model: model, Limits: o.Limits, Price: o.price(), Grader: grader, Pool: pool,
		Progress: progress,
		Info:     bench.RunInfo{Benchmark: filepath.Base(dir), BenchmarkCommit: benchmarkCommit(dir), Command: redactArgs(args)},
	})
	if len(report.Results) > 0 {
		fmt.Fprint(stdout, report.Summary.Table())
		fmt.Fprintf(stdout, "results in %s (summary.json, summary.txt, results/, transcripts/)\n", results)
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		return failed(stderr, "interrupted after %d of %d exercises; continue with -resume -results %s", len(report.Results), len(exercises), results)
	case runErr != nil:
		return failed(stderr, "%v", runErr)
	case len(report.Errors) > 0:
		return failed(stderr, "%d exercise(s) ended in an infrastructure error (%s); see their result files, then run again with -resume -results %s",
			len(report.Errors), strings.Join(report.Errors, " "), results)
	}
	return exitMet
}

// benchPool is the sandboxes a benchmark mode works in and how many exercises run at once: the -sandbox-pool
// file's remote sandboxes (-threads defaults to their number), or -threads in-process ones that open grade and
// agent over each exercise. Drained sandboxes are reported on stderr as they go.
func benchPool(o PoolOptions, stderr io.Writer, grade, agent bench.SandboxFactory) (*bench.Pool, int, error) {
	if o.SandboxPool == "" {
		return bench.LocalPool(o.Threads, grade, agent), o.Threads, nil
	}
	sbs, err := bench.ReadPoolFile(o.SandboxPool, o.FSToken, o.ExecToken)
	if err != nil {
		return nil, 0, err
	}
	pool := bench.NewPool(sbs...)
	pool.OnDrain = func(name string, err error, left int) {
		fmt.Fprintf(stderr, "agent: sandbox %s taken out of the pool (%d left): %v\n", name, left, err)
	}
	threads := o.Threads
	if !o.threadsGiven {
		threads = pool.Size()
	}
	return pool, threads, nil
}

// poolNote says where the exercises run, for the start line.
func poolNote(o PoolOptions, pool *bench.Pool) string {
	if o.SandboxPool == "" {
		return "in-process sandboxes"
	}
	return fmt.Sprintf("a pool of %d sandboxes from %s", pool.Size(), o.SandboxPool)
}

// selectExercises finds the benchmark folder and the exercises the flags select.
func selectExercises(b ExerciseOptions) (string, []bench.Exercise, error) {
	dir := b.BenchDir
	if dir == "" {
		dir = filepath.Join("..", "shared", "polyglot-benchmark")
		if _, err := os.Stat(dir); err != nil {
			return "", nil, errors.New("no benchmark folder: give -benchmarks-dir DIR (a checkout of Aider's polyglot-benchmark); ../shared/polyglot-benchmark is not there")
		}
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", nil, fmt.Errorf("-benchmarks-dir %s is not a folder", dir)
	}
	exercises, err := bench.Discover(dir, bench.Filter{Languages: envflag.SplitList(b.Languages), Keywords: envflag.SplitList(b.Keywords), Limit: b.BenchLimit, Seed: b.Seed})
	if err != nil {
		return "", nil, err
	}
	if len(exercises) == 0 {
		return "", nil, fmt.Errorf("no exercise matches -languages %q -keywords %q", b.Languages, b.Keywords)
	}
	return dir, exercises, nil
}

// benchmarkCommit is the commit the benchmark folder says it is at (its COMMIT file), or "".
func benchmarkCommit(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "COMMIT"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// redactArgs is the command line for run.json with the value of -token left out.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && name == "token" && hasValue:
			out[i] = a[:strings.Index(a, "=")+1] + "REDACTED"
		case i > 0 && strings.HasPrefix(args[i-1], "-") && strings.TrimLeft(args[i-1], "-") == "token":
			out[i] = "REDACTED"
		default:
			out[i] = a
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// safeName turns a model name such as "openai/gpt-4.1" into a folder name.
func safeName(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_.") }

// isTerminal says w is a character device (a terminal), where the progress line can be redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
