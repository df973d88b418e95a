// Package benchtest finds the Polyglot benchmark for tests, as httptest serves HTTP for them.
package benchtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// Dir is the polyglot-benchmark checkout the tests run over: $GOALBOX_BENCHMARK_DIR, else shared/polyglot-benchmark
// beside the repository (the folder holding go.work), which is how CI lays it out. A test that needs it is skipped
// with a plain reason when there is none (failed under CI=true, where it is laid out): the project never depends on it.
func Dir(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("GOALBOX_BENCHMARK_DIR")}
	if repo, ok := repoRoot(); ok {
		candidates = append(candidates, filepath.Join(filepath.Dir(repo), "shared", "polyglot-benchmark"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "python", "exercises", "practice")); err == nil {
			abs, err := filepath.Abs(c)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	ciskip.Skip(t, "polyglot-benchmark not found: set GOALBOX_BENCHMARK_DIR, or put a checkout at ../shared/polyglot-benchmark beside the repository")
	return ""
}

// repoRoot walks up from the working folder (a test's package folder) to the folder that holds go.work.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
