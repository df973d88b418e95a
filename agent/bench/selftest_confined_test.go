package bench

import (
	"context"
	"testing"
)

// TestSelfTestInTheSandbox grades a fixed sample of every track (two exercises each) through the confined local
// executor, as the benchmark does: every reference must pass and every stub fail inside the minimal root, so the
// toolchains, their caches (Go's, cargo's registry, jest, ccache, Python's) and the grader's modules are all bound
// in. An exercise this machine cannot grade (a crate not packaged offline) is reported, not failed.
func TestSelfTestInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := benchmarkDir(t)
	var exs []Exercise
	for _, l := range Languages {
		some, err := Discover(dir, Filter{Languages: []string{l}, Seed: 2, Limit: 2})
		must(t, err)
		exs = append(exs, some...)
	}
	g := NewGrader()
	g.Toolchains.CompilerCache = true
	results, err := SelfTest(context.Background(), SelfTestOptions{
		Exercises: exs,
		RunDir:    t.TempDir(),
		Workers:   2,
		Sandbox:   inProcessSandbox(g.Toolchains, GraderCacheDir()),
		Grader:    g,
	})
	must(t, err)
	t.Logf("selftest in the sandbox:\n%s", SelfTestTable(SummarizeSelfTest(results), 0))
	for _, r := range results {
		switch r.Status {
		case SelfOK, SelfUngradable:
		default:
			out := r.Ref.Output
			if r.Stub.Passed {
				out = r.Stub.Output
			}
			t.Errorf("%s in the sandbox: %s\n%s", r.ID, r.Reason, tail(out, 3000))
		}
	}
}
