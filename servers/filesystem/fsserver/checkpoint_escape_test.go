//go:build unix

package fsserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The escape corpus against restore and diff: links planted in the workspace after the checkpoint, a folder
// renamed and a link put in its place, and a workspace changed while a restore runs. Each attack has its positive
// control: the restore or diff did its work on the workspace itself.

// outsideDir is a folder outside the workspace with a secret file in it.
func outsideDir(t *testing.T) (dir, secret string) {
	dir = t.TempDir()
	secret = "SECRET-" + t.Name()
	files(t, dir, map[string]string{"a.txt": secret, "src/a.txt": secret})
	return dir, secret
}

// TestRestoreThroughPlantedLinks: after the checkpoint, files and folders are replaced by symlinks that lead out of
// the workspace, or to another file inside it. A restore writes the workspace's own paths: outside is untouched,
// the other file inside is untouched, and the paths are regular files and folders again with their content.
func TestRestoreThroughPlantedLinks(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		out, secret := outsideDir(t)
		files(t, ws, map[string]string{"a.txt": "mine\n", "src/a.txt": "src\n", "b.txt": "b\n", "c.txt": "c\n"})
		before := tree(t, ws)
		cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})

		// a.txt → a file outside; src → a folder outside; c.txt → b.txt inside.
		must(t, os.Remove(filepath.Join(ws, "a.txt")))
		must(t, os.Symlink(filepath.Join(out, "a.txt"), filepath.Join(ws, "a.txt")))
		must(t, os.RemoveAll(filepath.Join(ws, "src")))
		must(t, os.Symlink(filepath.Join(out, "src"), filepath.Join(ws, "src")))
		must(t, os.Remove(filepath.Join(ws, "c.txt")))
		must(t, os.Symlink("b.txt", filepath.Join(ws, "c.txt")))

		d := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": cp.ID})
		if strings.Contains(d.Diff, secret) {
			t.Fatalf("the diff shows a file outside the workspace:\n%s", d.Diff)
		}
		if !strings.Contains(d.Diff, "symlink to ") || len(d.Files) != 4 { // control: the diff saw the changes
			t.Errorf("diff: %+v\n%s", d.Files, d.Diff)
		}
		r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp.ID})
		if got := readHost(t, filepath.Join(out, "a.txt")); got != secret {
			t.Fatalf("the restore wrote outside the workspace: %q", got)
		}
		if got := readHost(t, filepath.Join(out, "src", "a.txt")); got != secret {
			t.Fatalf("the restore wrote through a folder link outside the workspace: %q", got)
		}
		if got := readHost(t, filepath.Join(ws, "b.txt")); got != "b\n" {
			t.Fatalf("the restore wrote through a link to another file: b.txt is %q", got)
		}
		if len(r.NotRestored) != 0 {
			t.Errorf("not restored: %+v", r.NotRestored)
		}
		equalTrees(t, "restored", tree(t, ws), before) // control: every path is its own file again
	})
}

// TestDiffDoesNotFollowLinksOut: a checkpoint taken while a symlink leads out holds the link, never what it points
// to, and a diff of it shows the link's target path, never the outside file's content; the control is a plain
// file whose change the same diff shows.
func TestDiffDoesNotFollowLinksOut(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		out, secret := outsideDir(t)
		files(t, ws, map[string]string{"plain.txt": "one\n"})
		must(t, os.Symlink(filepath.Join(out, "a.txt"), filepath.Join(ws, "leak.txt")))
		must(t, os.Symlink(out, filepath.Join(ws, "leakdir")))
		cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		if cp.Files != 1 {
			t.Errorf("the checkpoint holds %d files; only plain.txt is one", cp.Files)
		}
		files(t, ws, map[string]string{"plain.txt": "two\n"})
		must(t, os.Remove(filepath.Join(ws, "leak.txt")))
		must(t, os.RemoveAll(filepath.Join(ws, "leakdir")))
		d := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": cp.ID})
		if strings.Contains(d.Diff, secret) {
			t.Fatalf("the diff shows a file outside the workspace:\n%s", d.Diff)
		}
		if !strings.Contains(d.Diff, "-one\n+two\n") {
			t.Errorf("control: the plain change is missing:\n%s", d.Diff)
		}
		// A restore does not recreate the links (it says so) and writes nothing outside.
		r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp.ID})
		if len(r.NotRestored) != 2 || !strings.Contains(r.NotRestored[0].Reason, "do not create symlinks") {
			t.Errorf("not restored: %+v", r.NotRestored)
		}
		if _, err := os.Lstat(filepath.Join(ws, "leak.txt")); !os.IsNotExist(err) {
			t.Errorf("leak.txt was recreated: %v", err)
		}
		if got := readHost(t, filepath.Join(out, "a.txt")); got != secret {
			t.Fatalf("outside changed: %q", got)
		}
	})
}

// TestRestoreRenamedFolder: a folder renamed after the checkpoint, with a symlink in its old place pointing to its
// new one (inside the workspace). The restore puts the folder back as a folder and removes the renamed copy; the
// files reached through the link are never written in the renamed folder's place.
func TestRestoreRenamedFolder(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{"src/a.go": "package a\n", "src/deep/b.go": "package deep\n", "main.go": "package main\n"})
		before := tree(t, ws)
		cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		must(t, os.Rename(filepath.Join(ws, "src"), filepath.Join(ws, "lib")))
		files(t, ws, map[string]string{"lib/a.go": "package changed\n"})
		must(t, os.Symlink("lib", filepath.Join(ws, "src")))
		r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp.ID})
		if len(r.NotRestored) != 0 {
			t.Errorf("not restored: %+v", r.NotRestored)
		}
		equalTrees(t, "after the restore", tree(t, ws), before)
		// And back: the saved state has the renamed folder and the link, which is not recreated.
		r = ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": r.SavedAs})
		if len(r.NotRestored) != 1 || r.NotRestored[0].Path != "src" {
			t.Errorf("undo: %+v", r)
		}
		if got := readHost(t, filepath.Join(ws, "lib", "a.go")); got != "package changed\n" {
			t.Errorf("undo: lib/a.go is %q", got)
		}
	})
}

// TestRestoreUnderChange: while restores run, another writer keeps swapping a folder of the workspace for a
// symlink out of it and back, and a file for a link out. Whatever interleaving happens, nothing outside the
// workspace is written or created, and the restores keep working (the control: they wrote files).
func TestRestoreUnderChange(t *testing.T) {
	ws := t.TempDir()
	_, run := startHTTP(t, ws, setup{}, mcpserve.Config{})
	cs := connectURL(t, run.URL)
	out, secret := outsideDir(t)
	outBefore := tree(t, out)
	files(t, ws, map[string]string{"src/a.txt": "a\n", "src/b.txt": "b\n", "a.txt": "top\n"})
	cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src, a := filepath.Join(ws, "src"), filepath.Join(ws, "a.txt")
			os.RemoveAll(src)
			os.Remove(a)
			if i%2 == 0 {
				os.Symlink(filepath.Join(out, "src"), src)
				os.Symlink(filepath.Join(out, "a.txt"), a)
			} else {
				os.MkdirAll(src, 0o755)
				os.WriteFile(filepath.Join(src, "a.txt"), []byte("changed\n"), 0o644)
			}
			swaps.Add(1)
		}
	}()
	written := 0
	for range 30 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: protocol.ToolRestore, Arguments: map[string]any{"id": cp.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError {
			var r protocol.RestoreOutput
			raw := res.Content[0].(*mcp.TextContent).Text
			if err := jsonUnmarshal(raw, &r); err == nil {
				written += r.Written
			}
		} else if txt := res.Content[0].(*mcp.TextContent).Text; strings.Contains(txt, out) {
			t.Errorf("an error names a host path outside the workspace: %s", txt)
		}
	}
	close(stop)
	wg.Wait()
	equalTrees(t, "outside the workspace", tree(t, out), outBefore)
	if got := readHost(t, filepath.Join(out, "a.txt")); got != secret {
		t.Fatalf("outside changed: %q", got)
	}
	if written == 0 || swaps.Load() == 0 {
		t.Errorf("control: the restores wrote %d files while %d swaps ran", written, swaps.Load())
	}
	// Once left alone, a restore brings the whole tree back.
	r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp.ID})
	if got := readHost(t, filepath.Join(ws, "src", "b.txt")); got != "b\n" || len(r.NotRestored) != 0 {
		t.Errorf("final restore: %q %+v", got, r)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
