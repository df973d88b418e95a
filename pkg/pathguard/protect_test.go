package pathguard

import (
	"strings"
	"testing"
)

func TestProtectionMatch(t *testing.T) {
	p, err := NewProtection([]string{"secrets/*.pem"}, []string{".idea"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel     string
		pattern string // "" when not protected
	}{
		{".git/hooks", ".git/hooks"},
		{".git/hooks/pre-commit", ".git/hooks"},
		{"sub/deeper/.git/hooks/post-checkout", ".git/hooks"},
		{".git/config", ".git/config"},
		{".GIT/Config", ".git/config"}, // one file on macOS and Windows
		{".git/worktrees/feature/config", ".git/worktrees/*/config"},
		{"a/.vscode/tasks.json", ".vscode"},
		{".envrc", ".envrc"},
		{".mcp.json", ".mcp.json"},
		{".cursor/mcp.json", ".cursor"},
		{".claude/settings.json", ".claude"},
		{".codex", ".codex"},
		{".gitmodules", ".gitmodules"},
		{"x/secrets/key.pem", "secrets/*.pem"},
		// Positive controls: ordinary project files, and names that only look alike.
		{".git", ""},
		{".git/objects/ab/cdef", ""},
		{".git/HEAD", ""},
		{".git/hooksx", ""},
		{"hooks/pre-commit", ""},
		{"config", ""},
		{"git/config", ""},
		{".vscode-test/x", ""},
		{"envrc", ""},
		{".idea/workspace.xml", ""}, // unprotected above
		{"secrets/key.txt", ""},
		{"main.go", ""},
		{".", ""},
	} {
		got, ok := p.Match(c.rel)
		if ok != (c.pattern != "") || got != c.pattern {
			t.Errorf("Match(%q) = %q, %v; want %q", c.rel, got, ok, c.pattern)
		}
	}
	for name, want := range map[string]bool{"hooks": true, "CONFIG": true, "key.pem": true, ".VSCode": true, "main.go": false, "worktrees": false} {
		if got := p.MayEnd(name); got != want {
			t.Errorf("MayEnd(%q) = %v, want %v", name, got, want)
		}
	}
	var none *Protection
	if _, ok := none.Match(".git/hooks"); ok {
		t.Error("a nil Protection protects nothing")
	}
}

func TestProtectionRefusesBadPatterns(t *testing.T) {
	for _, c := range []struct{ add, remove, want string }{
		{add: "/etc/x", want: "absolute"},
		{add: "a/../b", want: ". or .."},
		{add: "a\\b", want: "backslash"},
		{add: "[", want: "not a valid glob"},
		{add: " ", want: "empty"},
		{remove: ".not-there", want: "not a protected pattern; the patterns are .git/hooks"},
	} {
		var add, remove []string
		if c.add != "" {
			add = []string{c.add}
		}
		if c.remove != "" {
			remove = []string{c.remove}
		}
		_, err := NewProtection(add, remove)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewProtection(%q, %q) = %v; want an error with %q", add, remove, err, c.want)
		}
	}
	e := ProtectedError("write", ".git/config", ".git/config")
	if !IsReason(e, ReasonProtected) || !strings.Contains(e.Error(), "-unprotect") {
		t.Errorf("ProtectedError: %v", e)
	}
}

func TestUnprotectAll(t *testing.T) {
	p, err := ParseProtection([]string{"secrets"}, []string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Patterns()) != 0 {
		t.Errorf("-unprotect all left %v", p.Patterns())
	}
	if _, ok := p.Match(".git/hooks/pre-commit"); ok {
		t.Error("-unprotect all still protects .git/hooks")
	}
	// Positive control: without it the same path is protected.
	if q, _ := ParseProtection(nil, nil); len(q.Patterns()) == 0 {
		t.Error("the defaults protect nothing")
	} else if _, ok := q.Match(".git/hooks/pre-commit"); !ok {
		t.Error("the defaults do not protect .git/hooks")
	}
}
