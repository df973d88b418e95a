package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/goalbox/goalbox/agent/bench"
)

// runSelfTest proves the grader on this machine: each selected exercise's reference solution must pass and its
// stub must fail. Exit status: 0 when no exercise shows a problem (ungradable ones are listed, not counted), 1 when
// the grader is wrong about some exercise, 2 for a configuration or infrastructure error.
func runSelfTest(ctx context.Context, o SelfTestOptions, stdout, stderr io.Writer) int {
	_, exercises, err := selectExercises(o.ExerciseOptions)
	if err != nil {
		return failed(stderr, "%v", err)
	}
	runDir, err := os.MkdirTemp("", "goalbox-selftest-")
	if err != nil {
		return failed(stderr, "%v", err)
	}
	defer os.RemoveAll(runDir)
	grader := bench.NewGrader()
	grader.Timeout = o.GradeTimeout
	if o.SandboxPool != "" {
		grader.Toolchains = bench.ImageToolchains()
	}
	grader.Toolchains.CompilerCache = true // no model runs: nothing can poison the cache
	pool, threads, err := benchPool(o.PoolOptions, stderr, graderSandbox(grader.Toolchains), nil)
	if err != nil {
		return failed(stderr, "%v", err)
	}
	if o.SandboxPool != "" {
		fmt.Fprintf(stderr, "agent: selftest of %d exercises, %d threads, %s\n", len(exercises), threads, poolNote(o.PoolOptions, pool))
	}
	start := time.Now()
	results, err := bench.SelfTest(ctx, bench.SelfTestOptions{
		Exercises: exercises, RunDir: runDir, Workers: threads, Grader: grader, Pool: pool,
		Progress: func(done, total int, r bench.SelfTestResult) {
			fmt.Fprintf(stderr, "selftest %d/%d  %s  %s  %.1fs  %s  [%s]\n", done, total, r.ID, r.Status, r.Seconds, r.Reason, r.Sandbox)
		},
	})
	sums := bench.SummarizeSelfTest(results)
	fmt.Fprint(stdout, bench.SelfTestTable(sums, time.Since(start)))
	if o.Results != "" {
		if err := writeJSON(filepath.Join(o.Results, "selftest.json"), results); err != nil {
			return failed(stderr, "selftest report: %v", err)
		}
	}
	if err != nil {
		return failed(stderr, "selftest: %v", err)
	}
	for _, s := range sums {
		if len(s.Problems) > 0 {
			return exitNotMet
		}
	}
	return exitMet
}
