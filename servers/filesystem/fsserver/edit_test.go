package fsserver_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type editOut = protocol.EditFileOutput

func TestEdit(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n\tfmt.Println(\"world\")\n}\n"
		files(t, ws, map[string]string{
			"main.go":  src,
			"rep.txt":  "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n",
			"crlf.txt": "alpha\r\nbeta\r\n",
			"bin.dat":  "a\x00b",
		})
		got := ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "\tfmt.Println(\"hello\")\n", "new_text": "\tfmt.Println(\"hi\")\n\tfmt.Println(\"there\")\n"})
		wantDiff := "--- a/main.go\n+++ b/main.go\n@@ -3,6 +3,7 @@\n import \"fmt\"\n \n func main() {\n-\tfmt.Println(\"hello\")\n+\tfmt.Println(\"hi\")\n+\tfmt.Println(\"there\")\n \tfmt.Println(\"world\")\n }\n"
		if got.Path != "main.go" || got.Replacements != 1 || got.Diff != wantDiff {
			t.Errorf("edit: %+v\nwant diff:\n%s", got, wantDiff)
		}
		if want := strings.Replace(src, "\"hello\")\n", "\"hi\")\n\tfmt.Println(\"there\")\n", 1); readHost(t, filepath.Join(ws, "main.go")) != want {
			t.Errorf("file after edit:\n%s", readHost(t, filepath.Join(ws, "main.go")))
		}

		// More than one match: an error naming the lines, and the file untouched.
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "rep.txt", "old_text": "x = 1", "new_text": "x = 9"}, "matches 3 times", "lines 1, 3 and 5", "replace_all")
		if readHost(t, filepath.Join(ws, "rep.txt")) != "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n" {
			t.Errorf("a refused edit changed the file")
		}
		got = ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": "rep.txt", "old_text": "x = 1", "new_text": "x = 9", "replace_all": true})
		if got.Replacements != 3 || readHost(t, filepath.Join(ws, "rep.txt")) != "x = 9\ny = 2\nx = 9\nz = 3\nx = 9\n" {
			t.Errorf("replace_all: %+v", got)
		}
		if !strings.Contains(got.Diff, "-x = 1\n+x = 9\n y = 2\n-x = 1\n+x = 9\n") {
			t.Errorf("replace_all diff:\n%s", got.Diff)
		}

		// No match: the error shows the most similar lines with their numbers.
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "func main() {\n\tfmt.Println(\"hullo\")\n", "new_text": "x"},
			"not found", "most similar lines are 5-6", "     5\tfunc main() {", "     6\t\tfmt.Println(\"hi\")")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "func main() {\n    fmt.Println(\"hi\")", "new_text": "x"},
			"only in whitespace")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "crlf.txt", "old_text": "alpha\nbeta\n", "new_text": "x"}, "CRLF")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "qqqqqqqqqq", "new_text": "x"}, "No similar lines")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "", "new_text": "x"}, "old_text is empty", "sandbox_write_file")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go", "old_text": "main", "new_text": "main"}, "the same")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "missing.go", "old_text": "a", "new_text": "b"}, "not found")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "bin.dat", "old_text": "a", "new_text": "b"}, "binary")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "../x", "old_text": "a", "new_text": "b"}, "outside the workspace")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "main.go/.", "old_text": "main", "new_text": "x"}, "not a folder", "names a folder")
		// CRLF text matches when given exactly.
		ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": "crlf.txt", "old_text": "alpha\r\n", "new_text": "gamma\r\n"})
		if readHost(t, filepath.Join(ws, "crlf.txt")) != "gamma\r\nbeta\r\n" {
			t.Errorf("crlf edit: %q", readHost(t, filepath.Join(ws, "crlf.txt")))
		}
	})
}

// TestEditDiffApplies checks the diffs against GNU patch: applying an edit's diff to the old file must give the new
// file, for edits at the start, the end, without a final newline, deleting and adding lines, and many far-apart
// replacements.
func TestEditDiffApplies(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("GNU patch is not installed; the diff format is still checked by TestEdit")
	}
	var long strings.Builder
	for i := 1; i <= 60; i++ {
		if i%15 == 0 {
			fmt.Fprintf(&long, "TODO %d\n", i)
		} else {
			fmt.Fprintf(&long, "line %d\n", i)
		}
	}
	cases := []struct {
		name, content, old, new string
		all                     bool
	}{
		{"first line", "a\nb\nc\nd\ne\n", "a\n", "A\n", false},
		{"last line no eol", "a\nb\nc", "c", "C", false},
		{"add eol", "a\nb\nc", "c", "c\n", false},
		{"remove eol", "a\nb\nc\n", "c\n", "c", false},
		{"delete lines", "a\nb\nc\nd\ne\nf\ng\nh\n", "c\nd\n", "", false},
		{"insert lines", "a\nb\nc\n", "b\n", "b\nb1\nb2\n", false},
		{"mid-line", "func f(a int) {\n\treturn a\n}\n", "a int", "a, b int", false},
		{"unchanged lines inside old_text", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "3\n4\n5\n6\n7\n", "3\n4\nFIVE\n6\n7\n", false},
		{"far apart", long.String(), "TODO", "DONE", true},
		{"two on one line", "x x\ny\n", "x", "z", true},
		{"whole file", "a\nb\n", "a\nb\n", "c\n", false},
	}
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		for i, c := range cases {
			name := fmt.Sprintf("f%d.txt", i)
			files(t, ws, map[string]string{name: c.content})
			got := ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": name, "old_text": c.old, "new_text": c.new, "replace_all": c.all})
			want := strings.ReplaceAll(c.content, c.old, c.new)
			if !c.all {
				want = strings.Replace(c.content, c.old, c.new, 1)
			}
			if readHost(t, filepath.Join(ws, name)) != want {
				t.Errorf("%s: file after edit %q, want %q", c.name, readHost(t, filepath.Join(ws, name)), want)
				continue
			}
			// Apply the diff to a copy of the old file with patch and compare.
			dir := t.TempDir()
			files(t, dir, map[string]string{name: c.content})
			cmd := exec.Command("patch", "-p1", "--quiet", "--batch")
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader(got.Diff)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: patch refused the diff: %v\n%s\ndiff:\n%s", c.name, err, out, got.Diff)
				continue
			}
			if patched := readHost(t, filepath.Join(dir, name)); patched != want {
				t.Errorf("%s: patched file %q, want %q\ndiff:\n%s", c.name, patched, want, got.Diff)
			}
			if rej, _ := filepath.Glob(filepath.Join(dir, "*.rej")); len(rej) > 0 {
				t.Errorf("%s: patch left rejects", c.name)
			}
			if _, err := os.Stat(filepath.Join(dir, name+".orig")); err == nil {
				t.Errorf("%s: patch needed fuzz (left .orig):\n%s", c.name, got.Diff)
			}
		}
	})
}

// TestEditAmplification is the edit amplification attack: a file of 10 MiB - 16 bytes of "a", old_text "a", new_text
// 100,000 "b", replace_all. The result would be about a terabyte; a server that built it before checking the write
// cap would die of a fatal out-of-memory, taking every client's session with it. So the size is computed from the
// number of matches first, the edit is refused with the size it would have and the cap, the file is
// untouched and the same session goes on working.
func TestEditAmplification(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		content := strings.Repeat("a", 10<<20-16)
		files(t, ws, map[string]string{"amp.txt": content})
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "amp.txt", "old_text": "a", "new_text": strings.Repeat("b", 100_000), "replace_all": true},
			`edit "amp.txt": too large`, "the result would be 1048574400000 bytes", "10485744 replacements of 1 bytes by 100000 bytes",
			"the limit is 10485760 bytes", "nothing was changed")
		if readHost(t, filepath.Join(ws, "amp.txt")) != content {
			t.Fatal("the refused edit changed the file")
		}
		got := ok[notedOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "amp.txt", "limit": 1})
		if got.TotalLines != 1 || !got.Truncated || got.Note == "" {
			t.Errorf("read after the attack: lines %d-%d of %d, truncated %v, note %q", got.StartLine, got.EndLine, got.TotalLines, got.Truncated, got.Note)
		}
		// Just under the cap is allowed: 16 bytes to spare, 16 replacements that each add one byte.
		files(t, ws, map[string]string{"fit.txt": strings.Repeat("a", 10<<20-32) + strings.Repeat("x", 16)})
		if e := ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": "fit.txt", "old_text": "x", "new_text": "yy", "replace_all": true}); e.Replacements != 16 {
			t.Errorf("edit to exactly the cap: %d replacements", e.Replacements)
		}
		if fi, err := os.Stat(filepath.Join(ws, "fit.txt")); err != nil || fi.Size() != 10<<20 {
			t.Errorf("fit.txt after the edit: %v %v", fi, err)
		}
	})
}
