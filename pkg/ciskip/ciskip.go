// Package ciskip is the one way a test says it cannot run here: it skips, with why, on a developer's machine, and
// fails under CI=true, where everything a test needs is installed (scripts/setup.sh) and a test that cannot run —
// a security test above all — is a gap in the run, not a pass. scripts/ci-skip-fails.sh checks that a security test
// made unable to run fails a CI run.
package ciskip

import (
	"fmt"
	"os"
	"testing"
)

// InCI says the tests run in CI (CI=true, as .ci/run and GitHub Actions set it).
func InCI() bool { return os.Getenv("CI") == "true" }

// Skipf skips t with the formatted reason, or fails it with that reason under CI=true.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CI=true and this test cannot run here: %s", why)
	}
	t.Skip(why + " (under CI=true this fails)")
}

// Skip is Skipf with one reason.
func Skip(t testing.TB, why string) {
	t.Helper()
	Skipf(t, "%s", why)
}
