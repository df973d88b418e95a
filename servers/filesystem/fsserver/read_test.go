package fsserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type readOut = protocol.ReadFileOutput

// notedOut is a read's result when a line was cut: the contract's fields and the server's note.
type notedOut struct {
	readOut
	Note string `json:"note"`
}

func TestRead(t *testing.T) {
	s := setup{}
	s.opts.MaxReadLines = 50
	s.opts.MaxReadContentBytes = 1000
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		var hundred strings.Builder
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(&hundred, "line %d\n", i)
		}
		files(t, ws, map[string]string{
			"a.txt":        "one\ntwo\nthree\n",
			"noeol.txt":    "one\ntwo",
			"empty.txt":    "",
			"crlf.txt":     "a\r\nb\r\n",
			"blank.txt":    "\n\n",
			"hundred.txt":  hundred.String(),
			"wide.txt":     strings.Repeat("x", 400) + "\n" + strings.Repeat("y", 400) + "\n" + strings.Repeat("z", 400) + "\n",
			"long.txt":     strings.Repeat("é", 800) + "\nnext\n",
			"dir/b.txt":    "in dir\n",
			"utf8.txt":     "héllo wörld ✓\n",
			"has_nul.bin":  "text\x00more",
			"latin1.txt":   "caf\xe9\n",
			"late-bad.txt": strings.Repeat("ok\n", 3000) + "bad \xff\n", // past the 8 KiB head that is sniffed
		})

		cases := []struct {
			args map[string]any
			want readOut
		}{
			{map[string]any{"path": "a.txt"}, readOut{Path: "a.txt", Content: "one\ntwo\nthree\n", StartLine: 1, EndLine: 3, TotalLines: 3}},
			{map[string]any{"path": "noeol.txt"}, readOut{Path: "noeol.txt", Content: "one\ntwo", StartLine: 1, EndLine: 2, TotalLines: 2}},
			{map[string]any{"path": "empty.txt"}, readOut{Path: "empty.txt", Content: "", StartLine: 1, EndLine: 0, TotalLines: 0}},
			{map[string]any{"path": "crlf.txt"}, readOut{Path: "crlf.txt", Content: "a\r\nb\r\n", StartLine: 1, EndLine: 2, TotalLines: 2}},
			{map[string]any{"path": "blank.txt"}, readOut{Path: "blank.txt", Content: "\n\n", StartLine: 1, EndLine: 2, TotalLines: 2}},
			{map[string]any{"path": "a.txt", "offset": 2, "limit": 1}, readOut{Path: "a.txt", Content: "two\n", StartLine: 2, EndLine: 2, TotalLines: 3, Truncated: true}},
			{map[string]any{"path": "a.txt", "offset": 3}, readOut{Path: "a.txt", Content: "three\n", StartLine: 3, EndLine: 3, TotalLines: 3}},
			{map[string]any{"path": "noeol.txt", "offset": 2}, readOut{Path: "noeol.txt", Content: "two", StartLine: 2, EndLine: 2, TotalLines: 2}},
			{map[string]any{"path": "dir/b.txt"}, readOut{Path: "dir/b.txt", Content: "in dir\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
			{map[string]any{"path": "./dir/../dir/b.txt"}, readOut{Path: "dir/b.txt", Content: "in dir\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
			{map[string]any{"path": "/workspace/dir/b.txt"}, readOut{Path: "dir/b.txt", Content: "in dir\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
			{map[string]any{"path": "utf8.txt"}, readOut{Path: "utf8.txt", Content: "héllo wörld ✓\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
			// The line limit (server maximum 50 here) cuts a long file; a larger limit is held to the maximum.
			{map[string]any{"path": "hundred.txt", "limit": 1000}, readOut{Path: "hundred.txt", Content: lines(1, 50), StartLine: 1, EndLine: 50, TotalLines: 100, Truncated: true}},
			{map[string]any{"path": "hundred.txt", "offset": 91}, readOut{Path: "hundred.txt", Content: lines(91, 100), StartLine: 91, EndLine: 100, TotalLines: 100}},
			// The byte cap (1000 here) stops before a line that would cross it.
			{map[string]any{"path": "wide.txt"}, readOut{Path: "wide.txt", Content: strings.Repeat("x", 400) + "\n" + strings.Repeat("y", 400) + "\n", StartLine: 1, EndLine: 2, TotalLines: 3, Truncated: true}},
			{map[string]any{"path": "late-bad.txt", "limit": 10}, readOut{Path: "late-bad.txt", Content: strings.Repeat("ok\n", 10), StartLine: 1, EndLine: 10, TotalLines: 3001, Truncated: true}},
		}
		for _, c := range cases {
			got := ok[readOut](t, cs, protocol.ToolReadFile, c.args)
			if got != c.want {
				t.Errorf("read %v:\n got %+v\nwant %+v", c.args, got, c.want)
			}
		}
		// A single line over the cap comes back cut at the cap, on a character boundary, with a note that says so.
		got := ok[notedOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "long.txt"})
		want := readOut{Path: "long.txt", Content: strings.Repeat("é", 500), StartLine: 1, EndLine: 1, TotalLines: 2, Truncated: true}
		wantNote := "line 1 is 1601 bytes long, more than the 1000 bytes one read returns: only its first 1000 bytes are shown, and the rest of that line cannot be read with this tool"
		if got.readOut != want || got.Note != wantNote {
			t.Errorf("read long.txt:\n got %+v\nwant %+v, note %q", got, want, wantNote)
		}
		// The workspace's real path is accepted as well as the advertised root.
		real, _ := filepath.EvalSymlinks(ws)
		if got := ok[readOut](t, cs, protocol.ToolReadFile, map[string]any{"path": real + "/a.txt"}); got.Path != "a.txt" {
			t.Errorf("read by real path: got %q", got.Path)
		}

		outside := filepath.Join(filepath.Dir(ws), "outside")
		files(t, outside, map[string]string{"secret.txt": "secret\n"})
		if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../outside/secret.txt", filepath.Join(ws, "rel-escape")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("a.txt", filepath.Join(ws, "inside-link")); err != nil {
			t.Fatal(err)
		}
		if got := ok[readOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "inside-link"}); got.Content != "one\ntwo\nthree\n" {
			t.Errorf("a symlink inside the workspace should be followed, got %+v", got)
		}
		failures := []struct {
			args map[string]any
			want []string
		}{
			{map[string]any{"path": "missing.txt"}, []string{`"missing.txt"`, "not found"}},
			{map[string]any{"path": "dir"}, []string{"folder"}},
			{map[string]any{"path": ""}, []string{"path is required"}},
			{map[string]any{}, []string{"path"}},
			{map[string]any{"path": "has_nul.bin"}, []string{"binary", "9 bytes", "NUL"}},
			{map[string]any{"path": "latin1.txt"}, []string{"binary", "5 bytes", "UTF-8"}},
			{map[string]any{"path": "late-bad.txt", "offset": 2990}, []string{"not text", "UTF-8", "2990-3001"}},
			{map[string]any{"path": "a.txt", "offset": 4}, []string{"offset 4 is past the end", "3 lines"}},
			{map[string]any{"path": "a.txt", "offset": -1}, []string{"must not be negative"}},
			{map[string]any{"path": "a.txt", "limit": -5}, []string{"must not be negative"}},
			{map[string]any{"path": "a.txt", "offset": "two"}, []string{"offset"}},
			{map[string]any{"path": "../outside/secret.txt"}, []string{"outside the workspace"}},
			{map[string]any{"path": "/etc/passwd"}, []string{"outside the workspace", "/workspace"}},
			// CVE-2025-53110: a sibling whose name starts with the root's is not under it.
			{map[string]any{"path": "/workspace_evil/secret.txt"}, []string{"outside the workspace"}},
			{map[string]any{"path": real + "_evil/secret.txt"}, []string{"outside the workspace"}},
			// CVE-2025-53109: symlinks that lead out are refused, absolute or relative.
			{map[string]any{"path": "escape/secret.txt"}, []string{"outside the workspace"}},
			{map[string]any{"path": "rel-escape"}, []string{"outside the workspace"}},
			{map[string]any{"path": "a.txt\x00.png"}, []string{"NUL"}},
			// A path that ends in /, /. or /.. names a folder, as open(2) reads it; a file is not one.
			{map[string]any{"path": "a.txt/"}, []string{"not a folder", "names a folder"}},
			{map[string]any{"path": "a.txt/."}, []string{"not a folder", "names a folder"}},
			{map[string]any{"path": "dir/b.txt/.."}, []string{"not a folder", "names a folder"}},
		}
		for _, f := range failures {
			msg := fails(t, cs, protocol.ToolReadFile, f.args, f.want...)
			if strings.Contains(msg, outside) || strings.Contains(msg, "secret\n") {
				t.Errorf("read %v: the error leaks the host path or content outside: %q", f.args, msg)
			}
		}
	})
}

// lines is "line a\n" through "line b\n".
func lines(a, b int) string {
	var s strings.Builder
	for i := a; i <= b; i++ {
		fmt.Fprintf(&s, "line %d\n", i)
	}
	return s.String()
}

// TestReadLargeFile reads a few lines of a 12 MiB file (over the 10 MiB whole-file cap, which a streamed read does
// not need) and still counts all its lines, including a last line without a newline.
func TestReadLargeFile(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		f, err := os.Create(filepath.Join(ws, "big.log"))
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Repeat("0123456789abcdef", 7) + "\n" // 113 bytes
		n := (12 << 20) / len(line)
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(line)
		}
		b.WriteString("last")
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
		f.Close()
		got := ok[readOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "big.log", "offset": 1000, "limit": 20})
		want := readOut{Path: "big.log", Content: strings.Repeat(line, 20), StartLine: 1000, EndLine: 1019, TotalLines: n + 1, Truncated: true}
		if got != want {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
		got = ok[readOut](t, cs, protocol.ToolReadFile, map[string]any{"path": "big.log", "offset": n + 1})
		if got.Content != "last" || got.EndLine != n+1 || got.Truncated {
			t.Errorf("last line: got %+v", got)
		}
	})
}
