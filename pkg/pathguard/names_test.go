package pathguard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// windowsStyle is every Windows-style spelling docs/confinement-files.md lists, with what its refusal must say. Each
// is refused on every platform (these tests run on Linux, where all of them would otherwise be ordinary names).
var windowsStyle = []struct{ in, says string }{
	// Drive letters.
	{`C:\x`, `"C:" is a drive letter`},
	{`C:x`, `"C:" is a drive letter`},
	{`c:/x`, `"c:" is a drive letter`},
	{`z:`, `"z:" is a drive letter`},
	// Backslashes.
	{`a\b`, `"\" is not a separator here`},
	{`src\main.go`, `"\" is not a separator here`},
	{`\x`, `"\" is not a separator here`},
	{`a/b\`, `"\" is not a separator here`},
	// UNC and device prefixes.
	{`\\server\share\x`, `UNC or device path`},
	{`\\?\C:\x`, `UNC or device path`},
	{`\\.\NUL`, `UNC or device path`},
	{`//server/share`, `UNC or device path`},
	{`//workspace/x`, `UNC or device path`},
	{`/\server\share`, `UNC or device path`},
	// Reserved device names, in any case, any folder, with an extension or trailing spaces.
	{`CON`, `reserved device name CON`},
	{`NUL`, `reserved device name NUL`},
	{`nul`, `reserved device name NUL`},
	{`nul.txt`, `reserved device name NUL`},
	{`COM1`, `reserved device name COM1`},
	{`com9.log`, `reserved device name COM9`},
	{`COM0`, `reserved device name COM0`},
	{"COM\u00b9", "reserved device name COM\u00b9"},
	{`LPT1`, `reserved device name LPT1`},
	{`lpt3.tar.gz`, `reserved device name LPT3`},
	{`PRN`, `reserved device name PRN`},
	{`con `, `reserved device name CON`},
	{`con .txt`, `reserved device name CON`},
	{`src/aux.c`, `reserved device name AUX`},
	{`a/b/Aux.C`, `reserved device name AUX`},
	{`conin$`, `reserved device name CONIN$`},
	{`CONOUT$.txt`, `reserved device name CONOUT$`},
	{`nul/x.txt`, `reserved device name NUL`},
	{`nul/../x.txt`, `reserved device name NUL`},
	{`/workspace/sub/nul.txt`, `reserved device name NUL`},
	// Alternate data streams and other colons.
	{`a.txt:stream`, `has a colon`},
	{`a.txt::$DATA`, `has a colon`},
	{`src/a.txt:s:$DATA`, `has a colon`},
	{`/workspace/C:/x`, `has a colon`},
	{`dir/c:x`, `has a colon`},
	// Trailing dots and spaces.
	{`a.txt.`, `ends in "."`},
	{`dir /x`, `ends in " "`},
	{`a.txt `, `ends in " "`},
	{`...`, `ends in "."`},
	{`src/x..`, `ends in "."`},
	// Characters Windows does not allow.
	{`what?.md`, `has "?"`},
	{`a*b`, `has "*"`},
	{`a<b>`, `has "<"`},
	{`say"hi"`, `has "\""`},
	{`a|b`, `has "|"`},
	{"tab\there", `has "\t"`},
	{"line\nbreak", `has "\n"`},
}

func TestWindowsStylePaths(t *testing.T) {
	f := newFixture(t)
	before := listWorkspace(t, f)
	for _, c := range windowsStyle {
		got, err := f.g.Clean(c.in)
		if !IsReason(err, ReasonInvalid) {
			t.Errorf("Clean(%q) = %q, %v; want refusal %q", c.in, got, err, ReasonInvalid)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.says) {
			t.Errorf("Clean(%q) refused with %q; want it to say %q", c.in, msg, c.says)
		}
		if !strings.HasPrefix(msg, fmt.Sprintf("%q: invalid path (", c.in)) {
			t.Errorf("Clean(%q): the message %q does not name the path", c.in, msg)
		}
		f.checkMessage(t, err, c.in)

		// Every operation refuses it, before touching the disk.
		ops := map[string]error{}
		_, _, ops["Stat"] = f.g.Stat(c.in)
		_, _, ops["ReadFile"] = f.g.ReadFile(c.in)
		_, _, ops["WriteFile"] = f.g.WriteFile(c.in, []byte("x"))
		_, ops["MkdirAll"] = f.g.MkdirAll(c.in)
		_, _, ops["ReadDir"] = f.g.ReadDir(c.in)
		_, _, ops["Remove"] = f.g.Remove(c.in, true)
		_, _, ops["Rename to"] = f.g.Rename("file.txt", c.in, true)
		_, _, ops["Rename from"] = f.g.Rename(c.in, "moved.txt", true)
		ops["Walk"] = f.g.Walk(context.Background(), c.in, WalkOptions{}, func(*Entry) error { return nil })
		for op, err := range ops {
			if !IsReason(err, ReasonInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s(%q) = %v; want the refusal that says %q", op, c.in, err, c.says)
			}
		}
	}
	if after := listWorkspace(t, f); !slices.Equal(before, after) {
		t.Errorf("refused paths changed the workspace:\nbefore %q\nafter  %q", before, after)
	}
}

// TestWindowsStyleMessages holds the messages to saying what is allowed, not only what was wrong.
func TestWindowsStyleMessages(t *testing.T) {
	f := newFixture(t)
	for in, allowed := range map[string]string{
		`C:\x`:           `paths are relative to the workspace with "/" between names`,
		`a\b`:            `paths are relative to the workspace with "/" between names`,
		`\\server\share`: `paths are relative to the workspace with "/" between names`,
		`nul.txt`:        "choose another name",
		`a.txt:s`:        `":" is not allowed in a name`,
		`a.txt.`:         "a name may not end in a dot or a space",
		`a?b`:            "refused everywhere",
	} {
		_, err := f.g.Clean(in)
		if err == nil || !strings.Contains(err.Error(), allowed) {
			t.Errorf("Clean(%q) = %v; want a message that says %q", in, err, allowed)
		}
	}
}

// TestPortableNamesAllowed is the positive control: ordinary names that merely resemble the refused ones work, by
// every spelling the contract allows.
func TestPortableNamesAllowed(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{
		"console.go", "nullable.txt", "a.b.c", "CONTRIBUTING.md", "src/auxiliary.c", "src/aux_test.go",
		"nul_x", "com10.txt", "lpt", "COM", "LPT10", "conin", "con-fig/prn2.txt", "comment/COM1x",
		".hidden", "..foo", "a..b", "my file.txt", "dir with space/ünïcødé.txt", "émoji 🙂.md",
		"a#b$c%d&e'f(g)h+i,j;k=l@m[n]o^p`q{r}s~t!", "/workspace/src/prn_driver.c",
	} {
		rel, _, err := f.g.WriteFile(p, []byte(p))
		if err != nil {
			t.Errorf("WriteFile(%q): %v", p, err)
			continue
		}
		_, b, err := f.g.ReadFile(p)
		if err != nil || string(b) != p {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
		if _, err := os.Stat(filepath.Join(f.ws, filepath.FromSlash(rel))); err != nil {
			t.Errorf("WriteFile(%q) did not make %s: %v", p, rel, err)
		}
	}
	// A folder named like a device name's prefix, reached through an absolute path under the real workspace path.
	if _, err := f.g.MkdirAll(f.ws + "/nullish/comet"); err != nil {
		t.Errorf("MkdirAll under the real path: %v", err)
	}
}

// TestWindowsStyleNamesOnDisk: a name a command made on disk is still listed; a call that names it is refused with
// the rule's message (and deleting its folder as a whole works).
func TestWindowsStyleNamesOnDisk(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot hold these names")
	}
	f := newFixture(t)
	must(t, os.MkdirAll(filepath.Join(f.ws, "made"), 0o755))
	for _, name := range []string{"aux.c", `a\b`, "a.txt:s", "x?"} {
		must(t, os.WriteFile(filepath.Join(f.ws, "made", name), []byte("by a command"), 0o644))
	}
	var listed []string
	must(t, f.g.Walk(context.Background(), "made", WalkOptions{}, func(e *Entry) error {
		listed = append(listed, e.Path())
		return nil
	}))
	if want := []string{`made/a.txt:s`, `made/a\b`, "made/aux.c", "made/x?"}; !slices.Equal(listed, want) {
		t.Errorf("Walk(made) = %q; want %q", listed, want)
	}
	if _, _, err := f.g.ReadFile("made/aux.c"); !IsReason(err, ReasonInvalid) || !strings.Contains(err.Error(), "reserved device name AUX") {
		t.Errorf("ReadFile(made/aux.c) = %v; want the reserved-name refusal", err)
	}
	if _, ok, err := f.g.Remove("made", true); err != nil || !ok {
		t.Errorf("Remove(made, recursive) = %v, %v", ok, err)
	}
}

// listWorkspace is every path in the workspace, from the host's side.
func listWorkspace(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(f.ws, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, strings.TrimPrefix(p, f.ws))
		return nil
	})
	must(t, err)
	return out
}
