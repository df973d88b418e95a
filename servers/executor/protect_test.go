package main

import (
	"context"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/servers/executor/assemble"
	"github.com/goalbox/goalbox/servers/executor/execserver/backend"
	"github.com/goalbox/goalbox/servers/executor/execserver/backends"
	"github.com/goalbox/goalbox/servers/executor/execserver/local"
)

// TestProtectFlags: -protect and -unprotect (repeatable or comma-separated) and GOALBOX_EXEC_PROTECT/UNPROTECT
// adjust the protected project files the executor is configured with, which /healthz lists as data (the sandbox
// policy's protected); a bad pattern
// is refused at start with exit 2 and what a pattern is.
func TestProtectFlags(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"-protect", "/etc/passwd"}, `-protect "/etc/passwd": absolute`},
		{nil, []string{"-protect", "ok,a/../b"}, `-protect "a/../b": has an empty, . or .. component`},
		{[]string{"GOALBOX_EXEC_PROTECT=["}, nil, `-protect "[": component "[" is not a valid glob`},
		{nil, []string{"-unprotect", ".nothere"}, `-unprotect ".nothere": not a protected pattern; the patterns are .git/hooks`},
		{[]string{"GOALBOX_EXEC_UNPROTECT=.git"}, nil, `-unprotect ".git": not a protected pattern`},
	} {
		out, err := executor(t, append(c.env, "GOALBOX_EXEC_CACHE_DIR="+t.TempDir()), append([]string{"-workspace", ws}, c.args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v %v: exit %v, output %q; want exit 2 and %q", c.env, c.args, err, out, c.want)
		}
	}

	t.Setenv("GOALBOX_EXEC_UNPROTECT", ".vscode,.idea")
	_, s, err := configure([]string{"executor", "-workspace", ws, "-protect", "*.pem", "-protect", "secrets,.ssh"})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(pathguard.DefaultProtected), func(p string) bool { return p == ".vscode" || p == ".idea" })
	want = append(want, "*.pem", "secrets", ".ssh")
	if got := protectedOf(t, ws, s); !slices.Equal(got, want) {
		t.Errorf("health protected = %q, want %q", got, want)
	}
	// No flags: the defaults.
	t.Setenv("GOALBOX_EXEC_UNPROTECT", "")
	if _, s, err = configure([]string{"executor", "-workspace", ws}); err != nil {
		t.Fatal(err)
	}
	if got := protectedOf(t, ws, s); !slices.Equal(got, pathguard.DefaultProtected) {
		t.Errorf("default protection = %q", got)
	}
}

// protectedOf builds the executor s configures over ws, on a stub backend, and returns the protected paths its
// health report lists.
func protectedOf(t *testing.T, ws string, s options) []string {
	t.Helper()
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s.Backend = backends.Local
	stub := assemble.WithLocalStarter(func(local.Config, *slog.Logger) (backend.Backend, error) { return stubBackend{}, nil })
	ex, err := assemble.New(context.Background(), g, s.Options, slog.New(slog.DiscardHandler), stub)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	return ex.Health().Confinement.Sandbox.Protected
}
