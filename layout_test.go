package goalbox

import (
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/layout.md's import diagram from scripts/layout.sh")

// TestLayoutDiagram: docs/layout.md's import diagram is what scripts/layout.sh generates from `go list` now, so an
// import added or removed shows in the docs or fails here.
func TestLayoutDiagram(t *testing.T) {
	out, err := exec.Command("scripts/layout.sh").Output()
	if err != nil {
		t.Fatalf("scripts/layout.sh: %v", err)
	}
	generated := string(out)
	const doc = "docs/layout.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "```mermaid\n")
	if start < 0 {
		t.Fatalf("%s has no mermaid block", doc)
	}
	end := strings.Index(text[start+len("```mermaid\n"):], "```\n")
	if end < 0 {
		t.Fatalf("%s: the mermaid block does not end", doc)
	}
	end += start + len("```mermaid\n") + len("```\n")
	if text[start:end] == generated {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(text[:start]+generated+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's import diagram is not what scripts/layout.sh generates (go test . -run TestLayoutDiagram -update "+
		"rewrites it); generated:\n%s", doc, generated)
}
