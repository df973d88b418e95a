package fsserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/mcpserve"
	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/goalbox/goalbox/servers/filesystem/fsserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tree reads every regular file under dir (skipping nothing), for comparing whole workspaces.
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "-> " + target
		case d.Type().IsRegular():
			out[filepath.ToSlash(rel)] = readHost(t, p)
		case d.IsDir() && rel != ".":
			out[filepath.ToSlash(rel)+"/"] = ""
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalTrees(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			diffs = append(diffs, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+" (extra)")
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Errorf("%s: the trees differ at %v", what, diffs)
	}
}

// TestCheckpointRoundTrip takes a checkpoint, changes the workspace every way (edit, add, delete, a new folder,
// a folder replaced by a file), shows the changes with sandbox_diff against the workspace and between checkpoints,
// restores, and gets exactly the first tree back; a restore of given paths restores only those.
func TestCheckpointRoundTrip(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{
			"src/app.py":    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
			"src/util.py":   "X = 1\n",
			"README.md":     "hello\n",
			"data/keep.txt": "kept\n",
			"old/gone.txt":  "gone\n",
		})
		must(t, os.MkdirAll(filepath.Join(ws, "empty"), 0o755))
		before := tree(t, ws)
		cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{"label": "all green"})
		if cp.ID != "cp-1" || cp.Label != "all green" || cp.Files != 5 || cp.NewBytes == 0 || cp.CreatedAt == "" {
			t.Fatalf("checkpoint: %+v", cp)
		}
		// An unchanged workspace stores nothing new.
		again := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		if again.ID != "cp-2" || again.NewBytes != 0 {
			t.Errorf("second checkpoint of the same tree: %+v", again)
		}

		files(t, ws, map[string]string{
			"src/app.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return b - a\n",
			"new.txt":    "new\n",
			"newdir/x":   "x\n",
		})
		must(t, os.Remove(filepath.Join(ws, "README.md")))
		must(t, os.RemoveAll(filepath.Join(ws, "old")))
		must(t, os.WriteFile(filepath.Join(ws, "old"), []byte("a file now\n"), 0o644))

		d := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1"})
		var got []string
		for _, f := range d.Files {
			got = append(got, f.Path+":"+f.Change)
		}
		want := []string{"README.md:deleted", "new.txt:added", "newdir/x:added", "old:added", "old/gone.txt:deleted", "src/app.py:modified"}
		if strings.Join(got, " ") != strings.Join(want, " ") || d.To != "workspace" || d.From != "cp-1" || d.Truncated {
			t.Errorf("diff files: %v (to %q)", got, d.To)
		}
		for _, w := range []string{"--- a/src/app.py\n+++ b/src/app.py\n@@ -3,4 +3,4 @@\n \n \n def sub(a, b):\n-    return a - b\n+    return b - a\n",
			"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n", "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-hello\n"} {
			if !strings.Contains(d.Diff, w) {
				t.Errorf("diff lacks\n%s\nin\n%s", w, d.Diff)
			}
		}
		only := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1", "paths": []string{"src"}})
		if len(only.Files) != 1 || only.Files[0].Path != "src/app.py" {
			t.Errorf("diff of src: %+v", only.Files)
		}

		cp3 := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{"label": "broken"})
		between := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1", "to": cp3.ID})
		if between.Diff != d.Diff || between.To != cp3.ID {
			t.Errorf("diff between checkpoints differs from the diff with the workspace:\n%s\n---\n%s", between.Diff, d.Diff)
		}
		changed := tree(t, ws)

		r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": "cp-1"})
		if r.SavedAs != cp3.ID || len(r.NotRestored) != 0 || r.Written == 0 || r.Deleted == 0 {
			t.Errorf("restore: %+v", r)
		}
		equalTrees(t, "after restoring cp-1", tree(t, ws), before)
		if d := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1"}); len(d.Files) != 0 || d.Diff != "" {
			t.Errorf("diff after the restore: %+v", d)
		}

		// Given paths: only they come back from cp-3.
		r = ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp3.ID, "paths": []string{"new.txt", "src"}})
		if r.SavedAs != "cp-4" { // the workspace is cp-1's tree, and cp-1 is not the newest: a new checkpoint holds it
			t.Errorf("saved_as %q", r.SavedAs)
		}
		now := tree(t, ws)
		if now["new.txt"] != changed["new.txt"] || now["src/app.py"] != changed["src/app.py"] || now["README.md"] != before["README.md"] {
			t.Errorf("partial restore: %v", now)
		}
		list := ok[protocol.ListCheckpointsOutput](t, cs, protocol.ToolListCheckpoints, map[string]any{})
		var ids []string
		for _, c := range list.Checkpoints {
			ids = append(ids, c.ID+"="+c.Label)
		}
		if strings.Join(ids, ",") != "cp-1=all green,cp-2=,cp-3=broken,cp-4=before restoring cp-3" || list.StoreBytes == 0 ||
			list.MaxBytes != fsserver.DefaultCheckpointMaxBytes || list.MaxCheckpoints != fsserver.DefaultCheckpointMaxCount {
			t.Errorf("list: %v %+v", ids, list)
		}
		// Undo: saved_as holds what was there.
		ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": "cp-4"})
		equalTrees(t, "after undoing the partial restore", tree(t, ws), before)
	})
}

// TestCheckpointErrors: every bad input is a tool error that says what was wrong and what is allowed.
func TestCheckpointErrors(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{"a.txt": "a\n"})
		fails(t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1"}, `no checkpoint "cp-1"`, "there are none yet", protocol.ToolCheckpoint)
		ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		fails(t, cs, protocol.ToolCheckpoint, map[string]any{"label": "two\nlines"}, "one line")
		fails(t, cs, protocol.ToolCheckpoint, map[string]any{"label": strings.Repeat("x", 201)}, "at most 200")
		fails(t, cs, protocol.ToolDiff, map[string]any{}, "missing properties", "from")
		fails(t, cs, protocol.ToolRestore, map[string]any{}, "missing properties", "id")
		for _, bad := range []string{"cp-9", "../../etc/passwd", "cp-1/../../x", "cp-1.json", "CP-1"} {
			fails(t, cs, protocol.ToolRestore, map[string]any{"id": bad}, "no checkpoint", "the checkpoints are cp-1")
			fails(t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1", "to": bad}, "no checkpoint")
		}
		fails(t, cs, protocol.ToolRestore, map[string]any{"id": "cp-1", "paths": []string{"../x"}}, "outside the workspace")
		fails(t, cs, protocol.ToolRestore, map[string]any{"id": "cp-1", "paths": []string{"/etc"}}, "outside the workspace")
		fails(t, cs, protocol.ToolRestore, map[string]any{"id": "cp-1", "paths": []string{"nope"}}, "neither checkpoint cp-1 nor the workspace holds it")
		fails(t, cs, protocol.ToolDiff, map[string]any{"from": "cp-1", "paths": []string{""}}, "empty path")
	})
}

// TestCheckpointLeavesOut: .git, protected project files, files over the write cap and FIFOs are not in a
// checkpoint, and a restore leaves them exactly as they are (the positive control: an ordinary file beside them is
// restored).
func TestCheckpointLeavesOut(t *testing.T) {
	eachTransport(t, setup{guard: pathguard.Options{MaxWriteBytes: 1000}}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{
			".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", ".vscode/tasks.json": "{}", ".envrc": "export A=1\n",
			"sub/.git/hooks/pre-commit": "#!/bin/sh\n", "big.bin": strings.Repeat("b", 2000), "a.txt": "a\n",
		})
		cp := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
		if cp.Files != 1 || cp.SkippedCount != 1 || len(cp.Skipped) != 1 || !strings.HasPrefix(cp.Skipped[0], "big.bin (") {
			t.Errorf("checkpoint: %+v", cp)
		}
		changed := map[string]string{".git/config": "[core]\n\tfsmonitor = x\n", ".git/HEAD": "x\n", ".vscode/tasks.json": "{\"x\":1}",
			".envrc": "export B=2\n", "sub/.git/hooks/pre-commit": "#!/bin/sh\necho\n", "big.bin": strings.Repeat("c", 3000), "a.txt": "changed\n"}
		files(t, ws, changed)
		files(t, ws, map[string]string{".vscode/new.json": "{}", ".git/new": "n"})
		before := tree(t, ws)
		d := ok[protocol.DiffOutput](t, cs, protocol.ToolDiff, map[string]any{"from": cp.ID})
		if len(d.Files) != 1 || d.Files[0].Path != "a.txt" {
			t.Errorf("diff: %+v", d.Files)
		}
		r := ok[protocol.RestoreOutput](t, cs, protocol.ToolRestore, map[string]any{"id": cp.ID})
		after := tree(t, ws)
		if after["a.txt"] != "a\n" || r.Written != 1 {
			t.Errorf("control: a.txt not restored: %q %+v", after["a.txt"], r)
		}
		delete(before, "a.txt")
		delete(after, "a.txt")
		equalTrees(t, "what checkpoints leave out", after, before)
	})
}

// manifestBytes is what the manifests in store take on disk.
func manifestBytes(t *testing.T, store string) int64 {
	t.Helper()
	var n int64
	_ = filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if fi, ierr := d.Info(); err == nil && ierr == nil && filepath.Base(filepath.Dir(p)) == "checkpoints" && strings.HasSuffix(p, ".json") {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestCheckpointCountsManifests: a workspace of 3,000 empty files has no content to store, and its manifest is
// what the checkpoint costs: the store counts it, and a cap below it refuses the checkpoint. Control: the content
// alone is 0 bytes, which is what the store reported before it counted manifests.
func TestCheckpointCountsManifests(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	_, run := startHTTP(t, ws, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: store}}}, mcpserve.Config{})
	cs := connectURL(t, run.URL)
	many := map[string]string{}
	for i := range 3000 {
		many[fmt.Sprintf("d%d/f%d", i%30, i)] = ""
	}
	files(t, ws, many)
	ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
	list := ok[protocol.ListCheckpointsOutput](t, cs, protocol.ToolListCheckpoints, map[string]any{})
	onDisk := manifestBytes(t, store)
	if onDisk == 0 || list.StoreBytes != onDisk {
		t.Errorf("the store reports %d bytes; its manifest takes %d on disk (the content is 0 bytes)", list.StoreBytes, onDisk)
	}
	ws2, store2 := t.TempDir(), t.TempDir()
	_, run2 := startHTTP(t, ws2, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: store2, MaxBytes: onDisk / 2}}}, mcpserve.Config{})
	files(t, ws2, many)
	fails(t, connectURL(t, run2.URL), protocol.ToolCheckpoint, map[string]any{}, "more than the checkpoint store's cap")
}

// TestCheckpointCap: past the count cap the oldest checkpoint is dropped and reported, and the blobs only it held
// go with it; a workspace larger than the byte cap is refused without dropping anything.
func TestCheckpointCap(t *testing.T) {
	ws := t.TempDir()
	store := t.TempDir()
	_, run := startHTTP(t, ws, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: store, MaxCount: 2, MaxBytes: 4000}}}, mcpserve.Config{})
	cs := connectURL(t, run.URL)
	files(t, ws, map[string]string{"a.txt": "one\n"})
	ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
	files(t, ws, map[string]string{"a.txt": "two\n"})
	ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
	files(t, ws, map[string]string{"a.txt": "three\n"})
	third := ok[protocol.CheckpointOutput](t, cs, protocol.ToolCheckpoint, map[string]any{})
	if third.ID != "cp-3" || strings.Join(third.Dropped, ",") != "cp-1" {
		t.Errorf("third checkpoint: %+v", third)
	}
	list := ok[protocol.ListCheckpointsOutput](t, cs, protocol.ToolListCheckpoints, map[string]any{})
	// The store's bytes are the content and the manifests on disk.
	if len(list.Checkpoints) != 2 || list.Checkpoints[0].ID != "cp-2" || list.StoreBytes != int64(len("two\nthree\n"))+manifestBytes(t, store) {
		t.Errorf("list: %+v (manifests %d bytes)", list, manifestBytes(t, store))
	}
	blobs := 0
	filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Base(filepath.Dir(filepath.Dir(p))) == "blobs" {
			blobs++
		}
		return nil
	})
	if blobs != 2 {
		t.Errorf("%d blobs in the store, want 2 (cp-1's content deleted with it)", blobs)
	}
	files(t, ws, map[string]string{"big.txt": strings.Repeat("x", 5000)})
	fails(t, cs, protocol.ToolCheckpoint, map[string]any{}, "more than the checkpoint store's cap of 4000 bytes", "none was dropped", "-checkpoint-max-bytes")
	if list := ok[protocol.ListCheckpointsOutput](t, cs, protocol.ToolListCheckpoints, map[string]any{}); len(list.Checkpoints) != 2 {
		t.Errorf("a refused checkpoint dropped others: %+v", list)
	}
	// Restarted on the same store, the server finds its checkpoints and goes on numbering them.
	_, run2 := startHTTP(t, ws, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: store, MaxCount: 2, MaxBytes: 8000}}}, mcpserve.Config{})
	cs2 := connectURL(t, run2.URL)
	if next := ok[protocol.CheckpointOutput](t, cs2, protocol.ToolCheckpoint, map[string]any{}); next.ID != "cp-4" {
		t.Errorf("after a restart: %+v", next)
	}
}

// TestCheckpointStoreInsideWorkspace: a store the workspace's commands could rewrite is refused, and the message
// names no host path; the positive control is the same server with the store outside.
func TestCheckpointStoreInsideWorkspace(t *testing.T) {
	ws := t.TempDir()
	files(t, ws, map[string]string{"a.txt": "a\n"})
	_, run := startHTTP(t, ws, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: filepath.Join(ws, ".store")}}}, mcpserve.Config{})
	msg := fails(t, connectURL(t, run.URL), protocol.ToolCheckpoint, map[string]any{}, "inside the workspace", "-checkpoint-dir")
	if strings.Contains(msg, ws) {
		t.Errorf("the error names a host path: %s", msg)
	}
	_, run = startHTTP(t, ws, setup{opts: fsserver.Options{Checkpoints: fsserver.CheckpointOptions{Dir: t.TempDir()}}}, mcpserve.Config{})
	ok[protocol.CheckpointOutput](t, connectURL(t, run.URL), protocol.ToolCheckpoint, map[string]any{})
}
