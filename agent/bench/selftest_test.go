package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSelfTest grades reference solutions (must pass) and stubs (must fail) over the real benchmark. By default
// it takes a sample of go and python; GOALBOX_SELFTEST_FULL=1 takes every exercise of GOALBOX_SELFTEST_LANGS
// (default go,python; "all" for the six tracks). GOALBOX_SELFTEST_REPORT=path writes the results as JSON.
func TestSelfTest(t *testing.T) {
	dir := benchmarkDir(t)
	langs := []string{"go", "python"}
	if v := os.Getenv("GOALBOX_SELFTEST_LANGS"); v == "all" {
		langs = Languages
	} else if v != "" {
		langs = strings.Split(v, ",")
	}
	var exs []Exercise
	for _, l := range langs {
		f := Filter{Languages: []string{l}}
		if os.Getenv("GOALBOX_SELFTEST_FULL") != "1" {
			f.Seed, f.Limit = 1, 5 // a fixed sample of each language
			if testing.Short() {
				f.Limit = 1
			}
		}
		some, err := Discover(dir, f)
		must(t, err)
		exs = append(exs, some...)
	}
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	meter := &cpuMeter{}
	sandbox := meter.factory
	if os.Getenv("GOALBOX_SELFTEST_FULL") == "1" {
		g.Timeout = 10 * time.Minute // a busy machine must not turn a slow build into a "problem"
	}
	if os.Getenv("GOALBOX_SELFTEST_SANDBOX") == "executor" {
		sandbox = inProcessSandbox(g.Toolchains, GraderCacheDir()) // the confined production path
	}
	start := time.Now()
	results, err := SelfTest(context.Background(), SelfTestOptions{
		Exercises: exs,
		RunDir:    t.TempDir(),
		Workers:   2,
		Sandbox:   sandbox,
		Grader:    g,
		Progress: func(done, total int, r SelfTestResult) {
			t.Logf("%d/%d %s %s %.1fs %s", done, total, r.ID, r.Status, r.Seconds, r.Reason)
		},
	})
	must(t, err)
	wall := time.Since(start)
	sums := SummarizeSelfTest(results)
	t.Logf("selftest of %d exercises:\n%s", len(exs), SelfTestTable(sums, wall))
	var cpuTotal time.Duration
	for _, l := range Languages {
		if d, ok := meter.byLang[l]; ok {
			t.Logf("cpu %-11s %6.0f s", l, d.Seconds())
			cpuTotal += d
		}
	}
	t.Logf("cpu total       %6.0f s (%.1f min on 2 idle cores)", cpuTotal.Seconds(), cpuTotal.Minutes()/2)
	if p := os.Getenv("GOALBOX_SELFTEST_REPORT"); p != "" {
		cpu := map[string]float64{}
		for l, d := range meter.byLang {
			cpu[l] = d.Seconds()
		}
		data, _ := json.MarshalIndent(map[string]any{"wall_seconds": wall.Seconds(), "cpu_seconds": cpu, "languages": sums, "results": results}, "", "  ")
		must(t, os.WriteFile(filepath.Clean(p), data, 0o644))
	}
	for _, r := range results {
		switch r.Status {
		case SelfOK:
		case SelfUngradable:
			// go and python need only what CI installs; elsewhere a missing toolchain is a finding, not a bug.
			// go/counter has no tests to run anywhere (its task is to write them).
			if (r.Lang == "go" || r.Lang == "python") && r.ID != "go/counter" {
				t.Errorf("%s ungradable: %s", r.ID, r.Reason)
			}
		default:
			out := r.Ref.Output
			if r.Stub.Passed {
				out = r.Stub.Output
			}
			t.Errorf("%s: %s\n%s", r.ID, r.Reason, tail(out, 3000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
