package ciskip

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipFailsUnderCI runs TestSkipHelperChild in a child test process, with and without CI=true: without, it
// skips; with, it fails, saying why.
func TestSkipFailsUnderCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSkipHelperChild$", "-test.v")
		cmd.Env = append(os.Environ(), "CISKIP_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "the feature is hidden")):
			t.Errorf("CI unset: want a skip, got %v:\n%s", err, out)
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL") ||
			!strings.Contains(string(out), "CI=true and this test cannot run here: the feature is hidden")):
			t.Errorf("CI=true: want a failure, got %v:\n%s", err, out)
		}
	}
}

func TestSkipHelperChild(t *testing.T) {
	if os.Getenv("CISKIP_CHILD") != "1" {
		t.Skip("run by TestSkipFailsUnderCI")
	}
	Skip(t, "the feature is hidden")
}
