package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// BenchOptions are the flags of the benchmark modes (-benchmarks, -selftest). They are embedded in options, so
// the model, price and limit flags are shared with the goal mode; the limits apply to each try.
type BenchOptions struct {
	Benchmarks   bool          `env:"GOALBOX_BENCHMARKS"`
	SelfTest     bool          `env:"GOALBOX_SELFTEST"`
	BenchDir     string        `env:"GOALBOX_BENCHMARK_DIR"`
	BenchLimit   int           `env:"GOALBOX_BENCHMARK_LIMIT"`
	Languages    string        `env:"GOALBOX_LANGUAGES"`
	Keywords     string        `env:"GOALBOX_KEYWORDS"`
	Tries        int           `env:"GOALBOX_TRIES"`
	Threads      int           `env:"GOALBOX_THREADS"`
	Results      string        `env:"GOALBOX_RESULTS"`
	Resume       bool          `env:"GOALBOX_RESUME"`
	Seed         int64         `env:"GOALBOX_SEED"`
	GradeTimeout time.Duration `env:"GOALBOX_GRADE_TIMEOUT"`
}

func defaultBenchOptions() BenchOptions {
	return BenchOptions{Tries: 2, Threads: 1, GradeTimeout: 3 * time.Minute}
}

// registerBenchFlags adds the benchmark flags to fs.
func registerBenchFlags(fs *flag.FlagSet, b *BenchOptions) {
	fs.BoolVar(&b.Benchmarks, "benchmarks", b.Benchmarks, "run the Aider Polyglot benchmark instead of a goal (env GOALBOX_BENCHMARKS)")
	fs.BoolVar(&b.SelfTest, "selftest", b.SelfTest, "grade each selected exercise's reference solution (must pass) and stub (must fail); no model (env GOALBOX_SELFTEST)")
	fs.StringVar(&b.BenchDir, "benchmarks-dir", b.BenchDir, "the polyglot-benchmark checkout; default ../shared/polyglot-benchmark (env GOALBOX_BENCHMARK_DIR)")
	fs.IntVar(&b.BenchLimit, "benchmarks-limit", b.BenchLimit, "take at most N exercises after filtering (and shuffling with -seed); 0 all (env GOALBOX_BENCHMARK_LIMIT)")
	fs.StringVar(&b.Languages, "languages", b.Languages, "comma-separated tracks: cpp,go,java,javascript,python,rust; default all (env GOALBOX_LANGUAGES)")
	fs.StringVar(&b.Keywords, "keywords", b.Keywords, "comma-separated words; take exercises whose name contains any of them (env GOALBOX_KEYWORDS)")
	fs.IntVar(&b.Tries, "tries", b.Tries, "tries per exercise; each try after the first sees the previous test output (env GOALBOX_TRIES)")
	fs.IntVar(&b.Threads, "threads", b.Threads, "exercises worked on at once (env GOALBOX_THREADS)")
	fs.StringVar(&b.Results, "results", b.Results, "results folder; default results/<UTC time>--<model> (env GOALBOX_RESULTS)")
	fs.BoolVar(&b.Resume, "resume", b.Resume, "continue the run in -results: skip exercises with a finished result file (env GOALBOX_RESUME)")
	fs.Int64Var(&b.Seed, "seed", b.Seed, "shuffle the exercises with this seed before -benchmarks-limit; 0 keeps language/name order (env GOALBOX_SEED)")
	fs.DurationVar(&b.GradeTimeout, "grade-timeout", b.GradeTimeout, "time one test run of the grader may take, build included (env GOALBOX_GRADE_TIMEOUT)")
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
		return fmt.Errorf("the benchmark modes start their own sandbox over each exercise; -fs-url/-exec-url cannot be used")
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
func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
