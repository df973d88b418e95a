package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestUsageNamesEachVariable: -h lists every flag with its environment variable, GOALBOX_EXEC_ and the flag's name
// in capitals with _ for - (docs/executor.md), and exits 0; -version alone has none.
func TestUsageNamesEachVariable(t *testing.T) {
	out, err := executor(t, nil, "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("-h: %v\n%s", err, out)
	}
	entry := regexp.MustCompile(`(?m)^  -([a-z-]+)[^\n]*\n\s+([^\n]*)`)
	entries := entry.FindAllStringSubmatch(string(out), -1)
	if len(entries) < 30 {
		t.Fatalf("only %d flags in the usage:\n%s", len(entries), out)
	}
	for _, e := range entries {
		name, usage := e[1], e[2]
		want := "(env GOALBOX_EXEC_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + ")"
		if name == "version" {
			want = "print the version"
		}
		if !strings.Contains(usage, want) {
			t.Errorf("-%s: usage %q does not say %s", name, usage, want)
		}
	}
}
