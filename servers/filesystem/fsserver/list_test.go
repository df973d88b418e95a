package fsserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type listOut = protocol.ListFilesOutput

// names is a listing's paths and types, e.g. "a.txt:file".
func names(l listOut) []string {
	out := []string{}
	for _, e := range l.Entries {
		out = append(out, e.Path+":"+e.Type)
	}
	return out
}

func TestList(t *testing.T) {
	s := setup{}
	s.opts.MaxListEntries = 30
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{
			"b.go": "package b\n", "a.txt": "12345", "src/x.go": "x", "src/y.py": "y", "src/deep/z.go": "z",
			".git/HEAD": "ref", ".git/objects/ab/cd": "obj", ".goalbox-tmp-0123456789abcdef": "half-written",
		})
		outside := filepath.Join(filepath.Dir(ws), "outside")
		files(t, outside, map[string]string{"secret.go": "s"})
		must(t, os.Symlink(outside, filepath.Join(ws, "escape")))
		must(t, os.Symlink("src", filepath.Join(ws, "srclink")))

		got := ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{})
		want := []string{".git:dir", "a.txt:file", "b.go:file", "escape:symlink", "src:dir", "srclink:symlink"}
		if got.Path != "." || !reflect.DeepEqual(names(got), want) || got.Truncated {
			t.Errorf("list .: %v %v, want %v", got.Path, names(got), want)
		}
		for _, e := range got.Entries {
			if e.Path == "a.txt" && e.Size != 5 {
				t.Errorf("a.txt size %d", e.Size)
			}
		}
		// Depth descends in tree order, never into .git or through symlinks (escape's secret.go is not listed).
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"depth": 3})
		want = []string{".git:dir", "a.txt:file", "b.go:file", "escape:symlink", "src:dir", "src/deep:dir", "src/deep/z.go:file",
			"src/x.go:file", "src/y.py:file", "srclink:symlink"}
		if !reflect.DeepEqual(names(got), want) {
			t.Errorf("depth 3: %v\nwant %v", names(got), want)
		}
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"depth": 10, "pattern": "*.go"})
		want = []string{"b.go:file", "src/deep/z.go:file", "src/x.go:file"}
		if !reflect.DeepEqual(names(got), want) {
			t.Errorf("pattern: %v, want %v", names(got), want)
		}
		// A folder given directly, even through an inside symlink or .git itself, is listed.
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": "/workspace/srclink"})
		if want := []string{"srclink/deep:dir", "srclink/x.go:file", "srclink/y.py:file"}; got.Path != "srclink" || !reflect.DeepEqual(names(got), want) {
			t.Errorf("srclink: %s %v", got.Path, names(got))
		}
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": ".git", "depth": 3})
		if want := []string{".git/HEAD:file", ".git/objects:dir", ".git/objects/ab:dir", ".git/objects/ab/cd:file"}; !reflect.DeepEqual(names(got), want) {
			t.Errorf(".git: %v", names(got))
		}
		// A file lists as itself.
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": "a.txt"})
		if want := []string{"a.txt:file"}; !reflect.DeepEqual(names(got), want) {
			t.Errorf("file: %v", names(got))
		}
		// An empty folder has an empty (not null) list.
		must(t, os.Mkdir(filepath.Join(ws, "empty"), 0o755))
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": "empty"})
		if got.Entries == nil || len(got.Entries) != 0 {
			t.Errorf("empty: %#v", got.Entries)
		}

		// The cap (30 here) truncates.
		for i := 0; i < 40; i++ {
			files(t, ws, map[string]string{fmt.Sprintf("many/f%02d", i): ""})
		}
		got = ok[listOut](t, cs, protocol.ToolListFiles, map[string]any{"path": "many"})
		if len(got.Entries) != 30 || !got.Truncated || got.Entries[29].Path != "many/f29" {
			t.Errorf("cap: %d entries, truncated %v", len(got.Entries), got.Truncated)
		}

		fails(t, cs, protocol.ToolListFiles, map[string]any{"pattern": "[a-"}, "not a valid glob")
		fails(t, cs, protocol.ToolListFiles, map[string]any{"depth": -1}, "must not be negative")
		fails(t, cs, protocol.ToolListFiles, map[string]any{"path": "nope"}, "not found")
		fails(t, cs, protocol.ToolListFiles, map[string]any{"path": "escape"}, "outside the workspace")
		fails(t, cs, protocol.ToolListFiles, map[string]any{"path": ".."}, "outside the workspace")
		fails(t, cs, protocol.ToolListFiles, map[string]any{"path": "/tmp"}, "outside the workspace")
	})
}

func TestSearch(t *testing.T) {
	s := setup{}
	s.opts.MaxSearchResults = 5
	s.guard.MaxReadBytes = 4096
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{
			"a.go":          "package a\n\nfunc Alpha() {}\nfunc beta() {}\n",
			"sub/b.go":      "package sub\nfunc Gamma() {}\n",
			"sub/c.py":      "def func_py(): pass\n",
			"crlf.txt":      "func one\r\nfunc two\r\n",
			"bin.dat":       "func \x00 binary",
			"huge.go":       "func Huge() {}\n" + string(make([]byte, 5000)),
			"big-text.go":   "func TooBig() {}\n" + fmt.Sprintf("%5000s", "x"),
			".git/config":   "func inGit\n",
			"many.txt":      "m\nm\nm\nm\nm\nm\nm\n",
			"long-line.txt": "needle" + fmt.Sprintf("%1000s", "") + "end\n",
		})
		outside := filepath.Join(filepath.Dir(ws), "outside")
		files(t, outside, map[string]string{"secret.go": "func Secret() {}\n"})
		must(t, os.Symlink(outside, filepath.Join(ws, "escape")))
		must(t, os.Symlink("../outside/secret.go", filepath.Join(ws, "secret-link.go")))
		type out = protocol.SearchFilesOutput
		type m = protocol.SearchMatch

		got := ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `^func [A-Z]`, "include": "*.go"})
		want := out{Matches: []m{mt("a.go", 3, "func Alpha() {}"), mt("sub/b.go", 2, "func Gamma() {}")}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("search: %+v\nwant %+v", got, want)
		}
		// ^ and $ hold per line, also in files with CRLF endings.
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `two$`})
		if want := (out{Matches: []m{mt("crlf.txt", 2, "func two")}}); !reflect.DeepEqual(got, want) {
			t.Errorf("crlf: %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `(?i)GAMMA`, "path": "sub"})
		if want := (out{Matches: []m{mt("sub/b.go", 2, "func Gamma() {}")}}); !reflect.DeepEqual(got, want) {
			t.Errorf("path sub: %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `def`, "path": "/workspace/sub/c.py"})
		if want := (out{Matches: []m{mt("sub/c.py", 1, "def func_py(): pass")}}); !reflect.DeepEqual(got, want) {
			t.Errorf("path file: %+v", got)
		}
		// Binary files, files over the size cap (4096 here), .git and symlinks are skipped.
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `func (inGit|Huge|TooBig|Secret)|binary`})
		if len(got.Matches) != 0 {
			t.Errorf("skipped files matched: %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `inGit`, "path": ".git"})
		if len(got.Matches) != 1 {
			t.Errorf(".git searched directly: %+v", got)
		}
		// max_results: the server's maximum is 5 here.
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `^m$`, "max_results": 3})
		if len(got.Matches) != 3 || !got.Truncated || got.Matches[2].Line != 3 {
			t.Errorf("max_results 3: %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `^m$`, "max_results": 500})
		if len(got.Matches) != 5 || !got.Truncated {
			t.Errorf("max_results over the maximum: %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `^m$`, "path": "many.txt", "max_results": 7})
		if len(got.Matches) != 5 || !got.Truncated {
			t.Errorf("max_results 7 (held to 5): %+v", got)
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `needle`})
		if len(got.Matches) != 1 || len(got.Matches[0].Text) > 600 {
			t.Errorf("a long line should be cut: %d bytes", len(got.Matches[0].Text))
		}
		got = ok[out](t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `nothing-matches-this`})
		if got.Matches == nil || len(got.Matches) != 0 || got.Truncated {
			t.Errorf("no match: %#v", got)
		}

		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `func (`}, "not a valid RE2", "missing closing )")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `(a)\1`}, "not a valid RE2", "backreferences")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": ``}, "pattern is required")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `x`, "include": "[*.go"}, "not a valid glob")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `x`, "max_results": -1}, "must not be negative")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `x`, "path": "escape"}, "outside the workspace")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `x`, "path": "../outside"}, "outside the workspace")
		fails(t, cs, protocol.ToolSearchFiles, map[string]any{"pattern": `x`, "path": "missing"}, "not found")
	})
}

func mt(path string, line int, text string) protocol.SearchMatch {
	return protocol.SearchMatch{Path: path, Line: line, Text: text}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
