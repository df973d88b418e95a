package main

import (
	"fmt"
	"time"

	"github.com/goalbox/goalbox/pkg/envflag"
)

// BenchOptions are the flags of the benchmark modes (-benchmarks, -selftest). They are embedded in options, so
// the model, price and limit flags are shared with the goal mode; the limits apply to each try.
type BenchOptions struct {
	Benchmarks   bool          `env:"GOALBOX_BENCHMARKS" flag:"benchmarks" usage:"run the Aider Polyglot benchmark instead of a goal"`
	SelfTest     bool          `env:"GOALBOX_SELFTEST" flag:"selftest" usage:"grade each selected exercise's reference solution (must pass) and stub (must fail); no model"`
	BenchDir     string        `env:"GOALBOX_BENCHMARK_DIR" flag:"benchmarks-dir" usage:"the polyglot-benchmark checkout; default ../shared/polyglot-benchmark"`
	BenchLimit   int           `env:"GOALBOX_BENCHMARK_LIMIT" flag:"benchmarks-limit" usage:"take at most N exercises after filtering (and shuffling with -seed); 0 all"`
	Languages    string        `env:"GOALBOX_LANGUAGES" flag:"languages" usage:"comma-separated tracks: cpp,go,java,javascript,python,rust; default all"`
	Keywords     string        `env:"GOALBOX_KEYWORDS" flag:"keywords" usage:"comma-separated words; take exercises whose name contains any of them"`
	Tries        int           `env:"GOALBOX_TRIES" flag:"tries" usage:"tries per exercise; each try after the first sees the previous test output"`
	Threads      int           `env:"GOALBOX_THREADS" flag:"threads" usage:"exercises worked on at once; default 1, or the pool's size with -sandbox-pool"`
	SandboxPool  string        `env:"GOALBOX_SANDBOX_POOL" flag:"sandbox-pool" usage:"file of remote sandboxes, one \"FS_URL EXEC_URL [FS_TOKEN EXEC_TOKEN]\" a line: exercises are spread over them instead of in-process servers"`
	Results      string        `env:"GOALBOX_RESULTS" flag:"results" usage:"results folder; default results/<UTC time>--<model>"`
	Resume       bool          `env:"GOALBOX_RESUME" flag:"resume" usage:"continue the run in -results: skip exercises with a finished result file"`
	Seed         int64         `env:"GOALBOX_SEED" flag:"seed" usage:"shuffle the exercises with this seed before -benchmarks-limit; 0 keeps language/name order"`
	GradeTimeout time.Duration `env:"GOALBOX_GRADE_TIMEOUT" flag:"grade-timeout" usage:"time one test run of the grader may take, build included"`

	threadsGiven bool // -threads or GOALBOX_THREADS was given: a pool does not set the default
}

func defaultBenchOptions() BenchOptions {
	return BenchOptions{Tries: 2, Threads: 1, GradeTimeout: 3 * time.Minute}
}

// benchMode says a benchmark mode was asked for.
func (b BenchOptions) benchMode() bool { return b.Benchmarks || b.SelfTest }

// check reports what is wrong with the benchmark flags, given the rest of the options.
func (b BenchOptions) check(o options) error {
	switch {
	case b.Benchmarks && b.SelfTest:
		return fmt.Errorf("give -benchmarks or -selftest, not both")
	case o.Goal != "":
		return fmt.Errorf("-goal and the benchmark modes exclude each other: each exercise is the goal")
	case o.FSURL != "" || o.ExecURL != "":
		return fmt.Errorf("the benchmark modes start their own sandbox over each exercise; -fs-url/-exec-url cannot be used (give running sandboxes in a -sandbox-pool file)")
	case o.Verify != "" || o.Approve || o.Transcript != "":
		return fmt.Errorf("-verify, -approve and -transcript belong to the goal mode: the benchmark grades each exercise itself and writes a transcript per try")
	case b.Tries < 1:
		return fmt.Errorf("-tries must be 1 or more, got %d", b.Tries)
	case b.Threads < 1:
		return fmt.Errorf("-threads must be 1 or more, got %d", b.Threads)
	case b.BenchLimit < 0:
		return fmt.Errorf("-benchmarks-limit must be 0 (all) or more, got %d", b.BenchLimit)
	case b.GradeTimeout <= 0:
		return fmt.Errorf("-grade-timeout must be positive, got %s", b.GradeTimeout)
	case b.Resume && b.Results == "":
		return fmt.Errorf("-resume needs -results DIR: the folder of the run to continue")
	}
	return nil
}

// list splits a comma-separated flag value, dropping empty items.
func list(s string) []string { return envflag.SplitList(s) }
