package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goalbox/goalbox/agent/loop"
)

// BenchmarkOptions are the benchmark's (-benchmarks): the exercises, the model, and the limits of each try.
type BenchmarkOptions struct {
	Benchmarks bool   `env:"GOALBOX_BENCHMARKS" flag:"benchmarks" usage:"run the Aider Polyglot benchmark"`
	Results    string `env:"GOALBOX_RESULTS" flag:"results" usage:"results folder; default results/<UTC time>--<model>"`
	Resume     bool   `env:"GOALBOX_RESUME" flag:"resume" usage:"continue the run in -results: skip exercises with a finished result file"`
	Tries      int    `env:"GOALBOX_TRIES" flag:"tries" usage:"tries per exercise; each try after the first sees the previous test output"`
	ExerciseOptions
	PoolOptions
	ModelOptions
	loop.Limits // of each try
}

// SelfTestOptions are the selftest's (-selftest): the exercises whose reference solutions and stubs are graded.
type SelfTestOptions struct {
	SelfTest bool   `env:"GOALBOX_SELFTEST" flag:"selftest" usage:"grade each selected exercise's reference solution (must pass) and stub (must fail); no model"`
	Results  string `env:"GOALBOX_RESULTS" flag:"results" usage:"folder for selftest.json, the results of every exercise; none without it"`
	ExerciseOptions
	PoolOptions
}

// ExerciseOptions say which exercises the benchmark and the selftest take, and how each is graded.
type ExerciseOptions struct {
	BenchDir     string        `env:"GOALBOX_BENCHMARK_DIR" flag:"benchmarks-dir" usage:"the polyglot-benchmark checkout; default ../shared/polyglot-benchmark"`
	BenchLimit   int           `env:"GOALBOX_BENCHMARK_LIMIT" flag:"benchmarks-limit" usage:"take at most N exercises after filtering (and shuffling with -seed); 0 all"`
	Languages    string        `env:"GOALBOX_LANGUAGES" flag:"languages" usage:"comma-separated tracks: cpp,go,java,javascript,python,rust; default all"`
	Keywords     string        `env:"GOALBOX_KEYWORDS" flag:"keywords" usage:"comma-separated words; take exercises whose name contains any of them"`
	Seed         int64         `env:"GOALBOX_SEED" flag:"seed" usage:"shuffle the exercises with this seed before -benchmarks-limit; 0 keeps language/name order"`
	GradeTimeout time.Duration `env:"GOALBOX_GRADE_TIMEOUT" flag:"grade-timeout" usage:"time one test run of the grader may take, build included"`
}

// PoolOptions say where the exercises run: -threads in-process sandboxes, or the running ones of a pool file.
type PoolOptions struct {
	Threads     int    `env:"GOALBOX_THREADS" flag:"threads" usage:"exercises worked on at once; default 1, or the pool's size with -sandbox-pool"`
	SandboxPool string `env:"GOALBOX_SANDBOX_POOL" flag:"sandbox-pool" usage:"file of remote sandboxes, one \"FS_URL EXEC_URL [FS_TOKEN EXEC_TOKEN]\" a line: exercises are spread over them instead of in-process servers"`
	ServerTokens
	threadsGiven bool // -threads or GOALBOX_THREADS was given: a pool does not set the default
}

func defaultBenchmarkOptions() BenchmarkOptions {
	return BenchmarkOptions{Tries: 2, ExerciseOptions: defaultExerciseOptions(), PoolOptions: PoolOptions{Threads: 1},
		ModelOptions: defaultModelOptions(), Limits: loop.DefaultLimits()}
}

func defaultSelfTestOptions() SelfTestOptions {
	return SelfTestOptions{ExerciseOptions: defaultExerciseOptions(), PoolOptions: PoolOptions{Threads: 1}}
}

func defaultExerciseOptions() ExerciseOptions { return ExerciseOptions{GradeTimeout: 3 * time.Minute} }

// parseBenchmarkOptions reads environ (the process's environment, or a test's) and then the benchmark's flags.
func parseBenchmarkOptions(args []string, environ map[string]string, stderr io.Writer) (BenchmarkOptions, error) {
	o := defaultBenchmarkOptions()
	given, err := parseFlags(benchmarkProgram, &o, args, environ, stderr)
	o.noteThreads(given, environ)
	return o, err
}

// parseSelfTestOptions reads environ (the process's environment, or a test's) and then the selftest's flags.
func parseSelfTestOptions(args []string, environ map[string]string, stderr io.Writer) (SelfTestOptions, error) {
	o := defaultSelfTestOptions()
	given, err := parseFlags(selfTestProgram, &o, args, environ, stderr)
	o.noteThreads(given, environ)
	return o, err
}

func (o BenchmarkOptions) check() error {
	switch {
	case !o.Benchmarks:
		return errors.New("-benchmarks=false chooses no program: leave it out for the goal mode")
	case o.Tries < 1:
		return fmt.Errorf("-tries must be 1 or more, got %d", o.Tries)
	case o.Resume && o.Results == "":
		return errors.New("-resume needs -results DIR: the folder of the run to continue")
	}
	return cmp.Or(o.PoolOptions.check(), o.ExerciseOptions.check(), o.ModelOptions.check(), o.Limits.Check(o.price())) // the first that fails
}

func (o SelfTestOptions) check() error {
	if !o.SelfTest {
		return errors.New("-selftest=false chooses no program: leave it out for the goal mode")
	}
	return cmp.Or(o.PoolOptions.check(), o.ExerciseOptions.check())
}

func (e ExerciseOptions) check() error {
	switch {
	case e.BenchLimit < 0:
		return fmt.Errorf("-benchmarks-limit must be 0 (all) or more, got %d", e.BenchLimit)
	case e.GradeTimeout <= 0:
		return fmt.Errorf("-grade-timeout must be positive, got %s", e.GradeTimeout)
	}
	return nil
}

func (p PoolOptions) check() error {
	if p.Threads < 1 {
		return fmt.Errorf("-threads must be 1 or more, got %d", p.Threads)
	}
	return nil
}

// noteThreads records whether -threads was given, on the command line (given) or in the environment.
func (p *PoolOptions) noteThreads(given map[string]bool, environ map[string]string) {
	p.threadsGiven = given["threads"] || environ["GOALBOX_THREADS"] != ""
}
