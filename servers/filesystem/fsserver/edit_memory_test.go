package fsserver

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// testServer is the tool handlers over a fresh workspace, for tests that call them directly.
func testServer(t *testing.T) (*Filesystem, string) {
	t.Helper()
	ws := t.TempDir()
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &Filesystem{g: g, opts: Options{}.withDefaults(), seed: maphash.MakeSeed()}, ws
}

// TestEditMemory holds edits of a 10 MiB file to a memory bound that does not depend on how many lines or matches
// it has, nor on old_text: the file, the result (itself under the write cap, checked before it is built) and a
// megabyte for the rest. An edit that kept an offset per match, a string per line of the file and a score per line
// for the hint would cost hundreds of megabytes on 5 million one-byte lines, and a terabyte on the amplification
// attack.
func TestEditMemory(t *testing.T) {
	s, ws := testServer(t)
	const size = 10<<20 - 16
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var numbered strings.Builder
	for i := 0; numbered.Len() < size-20; i++ {
		fmt.Fprintf(&numbered, "line %d\n", i)
	}
	var missing strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&missing, "no such line %d with some words in it\n", i)
	}
	write("amp.txt", strings.Repeat("a", size))
	write("lines.txt", strings.Repeat("x\n", size/2))
	write("numbered.txt", numbered.String())
	cases := []struct {
		name  string
		in    protocol.EditFileInput
		bound uint64
		want  string // in the error; "" for a success
	}{
		// Refused before anything is built: the file read, and nothing else of its size.
		{"amplification", protocol.EditFileInput{Path: "amp.txt", OldText: "a", NewText: strings.Repeat("b", 100_000), ReplaceAll: true},
			size + 2<<20, "the result would be 1048574400000 bytes"},
		// 5 million matches, refused for want of replace_all: the first 20 are listed, the rest counted.
		{"many matches", protocol.EditFileInput{Path: "lines.txt", OldText: "x", NewText: "y"},
			size + 2<<20, "matches 5242872 times, at lines 1, 2, 3"},
		// 5 million matches on 5 million lines, each changed: the file, the result, and a diff cut at 64 KiB.
		{"every line", protocol.EditFileInput{Path: "lines.txt", OldText: "x", NewText: "y", ReplaceAll: true},
			2*size + 2<<20, ""},
		// Not found, old_text of 5,000 lines against 1.2 million: the hint keeps a score per line of old_text it
		// compares (at most 200), not per line of the file.
		{"nearest", protocol.EditFileInput{Path: "numbered.txt", OldText: missing.String(), NewText: "y"},
			size + 2<<20, "not found"},
	}
	for _, c := range cases {
		var err error
		var out protocol.EditFileOutput
		n := allocated(func() { out, err = s.edit(context.Background(), c.in) })
		t.Logf("%s: %d bytes allocated (bound %d)", c.name, n, c.bound)
		if n > c.bound {
			t.Errorf("%s: the edit allocated %d bytes; the bound is %d", c.name, n, c.bound)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && (out.Replacements != size/2 || !strings.Contains(out.Diff, diffCut) || len(out.Diff) > maxDiffBytes+200):
			t.Errorf("%s: %d replacements, %d bytes of diff ending %q", c.name, out.Replacements, len(out.Diff), out.Diff[max(0, len(out.Diff)-100):])
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %.300v, want one with %q", c.name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "lines.txt")); string(b) != strings.Repeat("y\n", size/2) {
		t.Error("lines.txt was not edited")
	}
}

// TestNearestExactPath: past maxNearestPairs comparisons the hint counts exact (trimmed) line matches only, and
// says what the unbounded hint of before said.
func TestNearestExactPath(t *testing.T) {
	var content, old strings.Builder
	for i := 0; i < 6000; i++ {
		fmt.Fprintf(&content, "  line %d\n", i%700)
	}
	for i := 300; i < 400; i++ {
		fmt.Fprintf(&old, "line %d\n", i)
	}
	old.WriteString("line that is not there\n")
	c, o := content.String(), old.String()
	if n := strings.Count(c, "\n") * (strings.Count(o, "\n")); n <= maxNearestPairs {
		t.Fatalf("%d pairs: the test must take the exact path", n)
	}
	got, want := nearest([]byte(c), o), refNearest(c, o)
	if got != want || !strings.Contains(got, "The most similar lines are 301-401") {
		t.Errorf("got  %.200q\nwant %.200q", got, want)
	}
}
