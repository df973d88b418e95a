package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSelfTest grades a fixed sample of the selftest, two seeded exercises per language (reference and stub
// each), on one worker, and reports the grader's time per exercise: wall seconds, and the CPU seconds of the test
// commands (user+system of every process they waited for), which depend less on what else the machine does. Run
// at two commits, it gives the ratio of their grading costs:
//
//	GOALBOX_BENCHMARK_DIR=... go test -run '^$' -bench SelfTest -benchtime 2x ./bench
func BenchmarkSelfTest(b *testing.B) {
	dir := benchmarkDir(b)
	var exs []Exercise
	for _, l := range Languages {
		some, err := Discover(dir, Filter{Languages: []string{l}, Seed: 7, Limit: 2})
		if err != nil {
			b.Fatal(err)
		}
		exs = append(exs, some...)
	}
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	meter := &cpuMeter{}
	var wall time.Duration
	problems := 0
	for b.Loop() {
		start := time.Now()
		results, err := SelfTest(context.Background(), SelfTestOptions{Exercises: exs, RunDir: b.TempDir(), Workers: 1, Sandbox: meter.factory, Grader: g})
		wall += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range results {
			if r.Status == SelfProblem {
				// Reported, not fatal: on a loaded machine a test with a deadline of its own (jest's 5 s) can
				// miss it, and the time spent still counts.
				problems++
				b.Logf("%s: %s", r.ID, r.Reason)
			}
		}
	}
	var cpu time.Duration
	for _, d := range meter.byLang {
		cpu += d
	}
	n := float64(b.N * len(exs))
	b.ReportMetric(wall.Seconds()/n, "wall-s/exercise")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/exercise")
	b.ReportMetric(float64(problems), "problems")
	b.ReportMetric(0, "ns/op") // one op is a whole sample; the per-exercise figures above are the ones to read
}
