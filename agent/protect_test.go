package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
)

// TestProtectOptions: -protect/-unprotect (repeatable or comma-separated) and GOALBOX_PROTECT/UNPROTECT make the
// in-process servers' protection; a bad pattern is a usage error (exit 2) with what a pattern is; with running
// servers or the benchmark they are refused rather than silently ignored.
func TestProtectOptions(t *testing.T) {
	o, err := parseGoalOptions([]string{"-goal", "g", "-protect", "*.pem", "-unprotect", ".vscode,.idea"},
		map[string]string{"GOALBOX_PROTECT": "secrets"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(pathguard.DefaultProtected), func(p string) bool { return p == ".vscode" || p == ".idea" })
	// A repeatable flag adds to what the environment said, as the executor's -allow does (package envflag).
	if want = append(want, "secrets", "*.pem"); !slices.Equal(o.protection.Patterns(), want) {
		t.Errorf("protection = %q, want %q", o.protection.Patterns(), want)
	}
	if o, err = parseGoalOptions([]string{"-goal", "g"}, map[string]string{"GOALBOX_UNPROTECT": ".envrc"}, io.Discard); err != nil ||
		slices.Contains(o.protection.Patterns(), ".envrc") || len(o.protection.Patterns()) != len(pathguard.DefaultProtected)-1 {
		t.Errorf("from the environment: %q, %v", o.protection.Patterns(), err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-goal", "g", "-protect", "/etc"}, `-protect "/etc": absolute`},
		{[]string{"-goal", "g", "-unprotect", ".nothere"}, `-unprotect ".nothere": not a protected pattern`},
		{[]string{"-goal", "g", "-fs-url", "http://127.0.0.1:1/mcp", "-exec-url", "http://127.0.0.1:2/mcp", "-protect", "x"}, "running servers (-fs-url, -exec-url) take their own -protect"},
	} {
		_, err := parseGoalOptions(c.args, map[string]string{}, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}
