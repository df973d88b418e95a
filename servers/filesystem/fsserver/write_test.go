//go:build unix

package fsserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/goalbox/goalbox/pkg/ciskip"
	"github.com/goalbox/goalbox/pkg/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestWrite(t *testing.T) {
	s := setup{}
	s.guard.MaxWriteBytes = 1000
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		type out = protocol.WriteFileOutput
		if got := ok[out](t, cs, protocol.ToolWriteFile, map[string]any{"path": "new.txt", "content": "hello\n"}); got != (out{Path: "new.txt", BytesWritten: 6, Created: true}) {
			t.Errorf("create: %+v", got)
		}
		if got := ok[out](t, cs, protocol.ToolWriteFile, map[string]any{"path": "/workspace/new.txt", "content": "bye"}); got != (out{Path: "new.txt", BytesWritten: 3, Created: false}) {
			t.Errorf("overwrite: %+v", got)
		}
		if got := readHost(t, filepath.Join(ws, "new.txt")); got != "bye" {
			t.Errorf("content on disk %q", got)
		}
		if got := ok[out](t, cs, protocol.ToolWriteFile, map[string]any{"path": "a/b/c/deep.txt", "content": "ü"}); got != (out{Path: "a/b/c/deep.txt", BytesWritten: 2, Created: true}) {
			t.Errorf("parents: %+v", got)
		}
		if got := ok[out](t, cs, protocol.ToolWriteFile, map[string]any{"path": "empty.txt", "content": ""}); !got.Created || got.BytesWritten != 0 {
			t.Errorf("empty: %+v", got)
		}
		// An existing file keeps its permission bits.
		if err := os.Chmod(filepath.Join(ws, "new.txt"), 0o755); err != nil {
			t.Fatal(err)
		}
		ok[out](t, cs, protocol.ToolWriteFile, map[string]any{"path": "new.txt", "content": "#!/bin/sh\n"})
		if fi, _ := os.Stat(filepath.Join(ws, "new.txt")); fi.Mode().Perm() != 0o755 {
			t.Errorf("mode after write %v, want 0755", fi.Mode().Perm())
		}

		outside := filepath.Join(filepath.Dir(ws), "outside")
		files(t, outside, map[string]string{"victim.txt": "untouched"})
		if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../outside/victim.txt", filepath.Join(ws, "victim-link")); err != nil {
			t.Fatal(err)
		}
		failures := []struct {
			args map[string]any
			want []string
		}{
			{map[string]any{"path": "a", "content": "x"}, []string{"folder"}},
			{map[string]any{"path": "new.txt/sub", "content": "x"}, []string{"not a folder"}},
			{map[string]any{"path": "dir/", "content": "x"}, []string{"folder"}},
			{map[string]any{"path": "new.txt/.", "content": "x"}, []string{"is a folder", "names a folder"}},
			{map[string]any{"path": "fresh.txt/.", "content": "x"}, []string{"is a folder", "names a folder"}},
			{map[string]any{"path": ".", "content": "x"}, []string{"folder"}},
			{map[string]any{"path": "", "content": "x"}, []string{"path is required"}},
			{map[string]any{"path": "x.txt"}, []string{"content"}},
			{map[string]any{"path": "big.txt", "content": strings.Repeat("x", 1001)}, []string{"too large", "1001 bytes", "limit is 1000"}},
			{map[string]any{"path": "../outside/victim.txt", "content": "x"}, []string{"outside the workspace"}},
			{map[string]any{"path": "escape/victim.txt", "content": "x"}, []string{"outside the workspace"}},
			{map[string]any{"path": "escape/new.txt", "content": "x"}, []string{"outside the workspace"}},
			{map[string]any{"path": "victim-link", "content": "x"}, []string{"outside the workspace"}},
			{map[string]any{"path": "/workspace_evil/x", "content": "x"}, []string{"outside the workspace"}},
		}
		for _, f := range failures {
			msg := fails(t, cs, protocol.ToolWriteFile, f.args, f.want...)
			if strings.Contains(msg, outside) {
				t.Errorf("write %v: the error names the host path outside: %q", f.args, msg)
			}
		}
		if got := readHost(t, filepath.Join(outside, "victim.txt")); got != "untouched" {
			t.Errorf("a write escaped the workspace: victim is %q", got)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
			t.Errorf("a write created a file outside the workspace")
		}
		if _, err := os.Stat(filepath.Join(ws, "big.txt")); err == nil {
			t.Errorf("a refused write left a file")
		}
		if got := readHost(t, filepath.Join(ws, "new.txt")); got != "#!/bin/sh\n" {
			t.Errorf("a write to new.txt/. changed new.txt: %q", got)
		}
		if _, err := os.Stat(filepath.Join(ws, "fresh.txt")); err == nil {
			t.Errorf("a write to fresh.txt/. created fresh.txt")
		}
	})
}

func TestDeleteAndMove(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{"a.txt": "a", "b.txt": "b", "d/x.txt": "x", "d/e/y.txt": "y", "empty/.keep": ""})
		os.Remove(filepath.Join(ws, "empty/.keep"))
		outside := filepath.Join(filepath.Dir(ws), "outside")
		files(t, outside, map[string]string{"victim.txt": "untouched"})
		if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
			t.Fatal(err)
		}

		type del = protocol.DeletePathOutput
		type mv = protocol.MovePathOutput
		// Moves.
		if got := ok[mv](t, cs, protocol.ToolMovePath, map[string]any{"source": "a.txt", "destination": "new/deeper/a2.txt"}); got != (mv{Source: "a.txt", Destination: "new/deeper/a2.txt"}) {
			t.Errorf("move: %+v", got)
		}
		if readHost(t, filepath.Join(ws, "new/deeper/a2.txt")) != "a" {
			t.Errorf("moved content wrong")
		}
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "b.txt", "destination": "new/deeper/a2.txt"}, "already exists", "overwrite")
		ok[mv](t, cs, protocol.ToolMovePath, map[string]any{"source": "b.txt", "destination": "/workspace/new/deeper/a2.txt", "overwrite": true})
		if readHost(t, filepath.Join(ws, "new/deeper/a2.txt")) != "b" {
			t.Errorf("overwrite did not replace the file")
		}
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "d", "destination": "d/e/d2"}, "into itself")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "new/deeper/a2.txt", "destination": "d", "overwrite": true}, "folder")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "missing", "destination": "m2"}, "not found")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "d/x.txt", "destination": "../outside/x.txt"}, "outside the workspace")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "d/x.txt", "destination": "escape/x.txt"}, "outside the workspace")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "escape/victim.txt", "destination": "stolen.txt"}, "outside the workspace")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": ".", "destination": "w2"}, "workspace itself")
		fails(t, cs, protocol.ToolMovePath, map[string]any{"source": "", "destination": "w2"}, "required")
		ok[mv](t, cs, protocol.ToolMovePath, map[string]any{"source": "d", "destination": "d3"})
		if readHost(t, filepath.Join(ws, "d3/e/y.txt")) != "y" {
			t.Errorf("folder move lost its contents")
		}

		// Deletes.
		if got := ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "new/deeper/a2.txt"}); got != (del{Path: "new/deeper/a2.txt", Deleted: true}) {
			t.Errorf("delete: %+v", got)
		}
		if got := ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "new/deeper/a2.txt"}); got != (del{Path: "new/deeper/a2.txt", Deleted: false}) {
			t.Errorf("delete again: %+v", got)
		}
		ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "empty"})
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": "d3"}, "not empty", "recursive")
		if got := ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "d3", "recursive": true}); !got.Deleted {
			t.Errorf("recursive delete: %+v", got)
		}
		if _, err := os.Stat(filepath.Join(ws, "d3")); !os.IsNotExist(err) {
			t.Errorf("d3 still there: %v", err)
		}
		// Deleting the symlink removes the link, never what it points to.
		ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "escape", "recursive": true})
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": "."}, "workspace itself")
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": "/workspace", "recursive": true}, "workspace itself")
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": "../outside", "recursive": true}, "outside the workspace")
		must(t, os.Symlink(outside, filepath.Join(ws, "escape2")))
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": "escape2/victim.txt"}, "outside the workspace")
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "escape2/victim.txt", "old_text": "untouched", "new_text": "owned"}, "outside the workspace")
		// With a trailing slash (where rm -r would empty the target), the link itself is removed, never what it points to.
		if got := ok[del](t, cs, protocol.ToolDeletePath, map[string]any{"path": "escape2/", "recursive": true}); !got.Deleted {
			t.Errorf("delete escape2/: %+v", got)
		}
		if _, err := os.Lstat(filepath.Join(ws, "escape2")); !os.IsNotExist(err) {
			t.Errorf("the link escape2 is still there: %v", err)
		}
		fails(t, cs, protocol.ToolDeletePath, map[string]any{"path": ""}, "required")
		if readHost(t, filepath.Join(outside, "victim.txt")) != "untouched" {
			t.Errorf("a delete reached outside the workspace")
		}
		if _, err := os.Stat(ws); err != nil {
			t.Errorf("workspace gone: %v", err)
		}
	})
}

// TestWriteStripsSetuid: writing or editing over a setuid or setgid file keeps its permission bits but never the
// setuid and setgid bits (nor sticky): a sandbox must never leave a setuid file behind, even one a command made.
func TestWriteStripsSetuid(t *testing.T) {
	eachTransport(t, setup{}, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		files(t, ws, map[string]string{"w.sh": "#!/bin/sh\n", "e.sh": "#!/bin/sh\necho hi\n"})
		for _, name := range []string{"w.sh", "e.sh"} {
			if err := os.Chmod(filepath.Join(ws, name), os.ModeSetuid|os.ModeSetgid|os.ModeSticky|0o750); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(filepath.Join(ws, name)); fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != os.ModeSetuid|os.ModeSetgid {
				ciskip.Skipf(t, "this file system does not keep setuid/setgid bits (%v)", fi.Mode())
			}
		}
		ok[protocol.WriteFileOutput](t, cs, protocol.ToolWriteFile, map[string]any{"path": "w.sh", "content": "#!/bin/sh\necho new\n"})
		ok[protocol.EditFileOutput](t, cs, protocol.ToolEditFile, map[string]any{"path": "e.sh", "old_text": "hi", "new_text": "there"})
		for _, name := range []string{"w.sh", "e.sh"} {
			fi, err := os.Stat(filepath.Join(ws, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o750 {
				t.Errorf("%s: mode after the write is %v, want -rwxr-x--- (permission bits kept, setuid/setgid/sticky dropped)", name, fi.Mode())
			}
		}
	})
}

// TestDiskCapTools: with -max-workspace-bytes a write or an edit that would take the workspace past the cap is
// refused with the usage and the cap, and leaves the file as it was; edits that shrink files, moves (which add no
// bytes) and deletes always work, and deletes make room at once. The cap counts what files take on disk, in blocks.
func TestDiskCapTools(t *testing.T) {
	probe := t.TempDir() // a fresh folder, like each workspace: what one takes before anything is in it
	var st syscall.Stat_t
	var fsst syscall.Statfs_t
	if err := syscall.Stat(probe, &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Statfs(probe, &fsst); err != nil {
		t.Fatal(err)
	}
	empty, B := st.Blocks*512, int(fsst.Bsize)
	s := setup{}
	s.guard.MaxWorkspaceBytes = empty + int64(10*B)
	eachTransport(t, s, func(t *testing.T, ws string, cs *mcp.ClientSession) {
		type wout = protocol.WriteFileOutput
		ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": "a.txt", "content": strings.Repeat("x", 6*B)})
		fails(t, cs, protocol.ToolWriteFile, map[string]any{"path": "b.txt", "content": strings.Repeat("y", 5*B)},
			`write "b.txt": over the workspace's disk cap`,
			fmt.Sprintf("the workspace takes %d bytes on disk and this write would add %d", empty+int64(6*B), 5*B),
			fmt.Sprintf("the cap is %d bytes", s.guard.MaxWorkspaceBytes))
		if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
			t.Error("the refused write left b.txt")
		}
		ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": "b.txt", "content": strings.Repeat("y", 4*B)})
		fails(t, cs, protocol.ToolEditFile, map[string]any{"path": "a.txt", "old_text": "x", "new_text": "xx", "replace_all": true},
			`edit "a.txt": over the workspace's disk cap`, fmt.Sprintf("would add %d", 6*B))
		if readHost(t, filepath.Join(ws, "a.txt")) != strings.Repeat("x", 6*B) {
			t.Error("the refused edit changed a.txt")
		}
		ok[editOut](t, cs, protocol.ToolEditFile, map[string]any{"path": "a.txt", "old_text": "xx", "new_text": "x", "replace_all": true})
		ok[protocol.MovePathOutput](t, cs, protocol.ToolMovePath, map[string]any{"source": "b.txt", "destination": "b2.txt"})
		ok[protocol.DeletePathOutput](t, cs, protocol.ToolDeletePath, map[string]any{"path": "b2.txt"})
		ok[wout](t, cs, protocol.ToolWriteFile, map[string]any{"path": "c.txt", "content": strings.Repeat("z", 7*B)})
	})
}
