package pathguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walked lists what Walk visits under p as "path:type" (d, f, l, o), in order.
func walked(t *testing.T, g *Guard, p string, opts WalkOptions, fn func(*Entry) error) ([]string, error) {
	t.Helper()
	var got []string
	err := g.Walk(context.Background(), p, opts, func(e *Entry) error {
		typ := "o"
		switch {
		case e.IsDir():
			typ = "d"
		case e.Type.IsRegular():
			typ = "f"
		case e.Type&fs.ModeSymlink != 0:
			typ = "l"
		}
		got = append(got, fmt.Sprintf("%s:%s:%d", e.Path(), typ, e.Depth))
		if fn != nil {
			return fn(e)
		}
		return nil
	})
	return got, err
}

func TestWalk(t *testing.T) {
	f := newFixture(t)
	for name, content := range map[string]string{"b/z.txt": "z", "b/a.txt": "aa", "a.txt": "a", "b/c/d.txt": "d"} {
		if _, _, err := f.g.WriteFile(name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	f.link(t, "b", "link-to-b")
	f.link(t, "../outside", "link-out")
	must(t, mkfifoAt(filepath.Join(f.ws, "b", "pipe"), 0o644))
	must(t, os.WriteFile(filepath.Join(f.ws, "b", tempPrefix+"x"), []byte("tmp"), 0o644))

	// Sorted, depth first, symlinks reported and never followed, temporary files left out.
	got, err := walked(t, f.g, ".", WalkOptions{}, nil)
	want := []string{"a.txt:f:1", "b:d:1", "b/a.txt:f:2", "b/c:d:2", "b/c/d.txt:f:3", "b/pipe:o:2", "b/z.txt:f:2",
		"file.txt:f:1", "link-out:l:1", "link-to-b:l:1", "sub:d:1", "sub/deep:d:2", "sub/deep/x.txt:f:3", "sub/inner.txt:f:2"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk(.) = %v, %v\nwant %v", got, err, want)
	}
	// From a folder, named through a symlink inside; SkipDir; an unsorted walk sees the same entries.
	got, err = walked(t, f.g, "/workspace/link-to-b", WalkOptions{}, func(e *Entry) error {
		if e.Name == "c" {
			return fs.SkipDir
		}
		return nil
	})
	if want := []string{"link-to-b/a.txt:f:1", "link-to-b/c:d:1", "link-to-b/pipe:o:1", "link-to-b/z.txt:f:1"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk(link-to-b) = %v, %v\nwant %v", got, err, want)
	}
	got, err = walked(t, f.g, "b", WalkOptions{Unsorted: true}, nil)
	slices.Sort(got)
	if want := []string{"b/a.txt:f:1", "b/c/d.txt:f:2", "b/c:d:1", "b/pipe:o:1", "b/z.txt:f:1"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Walk(b, unsorted) = %v, %v\nwant %v", got, err, want)
	}
	// SkipAll ends the walk without an error; another error ends it with that error.
	n := 0
	got, err = walked(t, f.g, ".", WalkOptions{}, func(*Entry) error {
		if n++; n == 2 {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || len(got) != 2 {
		t.Errorf("SkipAll: %v, %v", got, err)
	}
	stop := errors.New("stop")
	if _, err := walked(t, f.g, ".", WalkOptions{}, func(*Entry) error { return stop }); err != stop {
		t.Errorf("an error from fn: %v", err)
	}
	// Entry.Open reads a listed regular file and nothing else; sizes come from the listing.
	err = f.g.Walk(context.Background(), "b", WalkOptions{}, func(e *Entry) error {
		file, err := e.Open()
		switch {
		case e.Name == "a.txt" && (err != nil || e.Size != 2):
			return fmt.Errorf("open a.txt: %v, size %d", err, e.Size)
		case e.Type.IsRegular():
			if err != nil {
				return fmt.Errorf("open %s: %v", e.Name, err)
			}
			file.Close()
		case err == nil:
			file.Close()
			return fmt.Errorf("opened %s, a %v", e.Name, e.Type)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// What is not a folder, or not there, or outside, is refused by its path.
	for p, reason := range map[string]string{"a.txt": ReasonNotDir, "nothing": ReasonNotFound, "link-out": ReasonOutside, "../x": ReasonOutside} {
		if _, err := walked(t, f.g, p, WalkOptions{}, nil); !IsReason(err, reason) {
			t.Errorf("Walk(%q) = %v, want %s", p, err, reason)
		}
	}
}

// TestWalkCaps: a walk stops at the depth and entry caps with an error that says which, and within the handle
// budget with an error that says so; SkipUnreadable never skips a cap.
func TestWalkCaps(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir, Options{MaxTreeDepth: 3, MaxTreeEntries: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	must(t, os.MkdirAll(filepath.Join(dir, "deep/1/2/3/4"), 0o755))
	if _, err := walked(t, g, "deep/1", WalkOptions{}, nil); err != nil {
		t.Errorf("a walk 3 levels deep: %v", err)
	}
	for _, opts := range []WalkOptions{{}, {SkipUnreadable: true}, {Unsorted: true}} {
		_, err := walked(t, g, "deep", opts, nil)
		if !IsReason(err, ReasonTooDeep) || !strings.Contains(err.Error(), `"deep": too deep (the tree under it is more than 3 folders deep`) {
			t.Errorf("a walk 4 levels deep (%+v): %v", opts, err)
		}
	}
	must(t, os.Mkdir(filepath.Join(dir, "many"), 0o755))
	for i := range 11 {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("many/%02d", i)), nil, 0o644))
	}
	for _, opts := range []WalkOptions{{}, {SkipUnreadable: true}, {Unsorted: true}} {
		_, err := walked(t, g, "many", opts, nil)
		if !IsReason(err, ReasonTooMany) || !strings.Contains(err.Error(), "more than 10 entries under it") {
			t.Errorf("a walk of 11 entries (%+v): %v", opts, err)
		}
	}
	if _, err := walked(t, g, "many", WalkOptions{Unsorted: true, NoEntryCap: true}, nil); err != nil {
		t.Errorf("an unsorted walk without the entry cap: %v", err)
	}
	g.handles.max = 3 // a walk holds two handles while it reads a folder, one per level below it
	if _, err := walked(t, g, "deep", WalkOptions{SkipUnreadable: true}, nil); !IsReason(err, ReasonBusy) || !strings.Contains(err.Error(), "try again") {
		t.Errorf("a walk past the handle budget: %v", err)
	}
	if used := g.handles.used.Load(); used != 0 {
		t.Errorf("%d handles still counted after the walks", used)
	}
}

// TestRemoveDeep deletes trees deeper than a delete holds open (maxRemoveLevels), with a file beside every folder:
// the deeper parts are moved up and deleted from there, nothing is left, and the delete never holds more than its
// share of descriptors.
func TestRemoveDeep(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, levels := range []int{maxRemoveLevels - 1, maxRemoveLevels, 5*maxRemoveLevels + 3} {
		p := filepath.Join(dir, "t")
		for i := 0; i < levels; i++ {
			p = filepath.Join(p, "d")
			must(t, os.MkdirAll(p, 0o755))
			must(t, os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o644))
		}
		fdsBefore := openFDs(t)
		if _, deleted, err := g.Remove("t", true); err != nil || !deleted {
			t.Fatalf("Remove of %d levels: %v, %v", levels, deleted, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "t")); !os.IsNotExist(err) {
			t.Errorf("%d levels: still there (%v)", levels, err)
		}
		if n := openFDs(t); n != fdsBefore {
			t.Errorf("%d levels: %d descriptors open after the delete, %d before", levels, n, fdsBefore)
		}
	}
	if used := g.handles.used.Load(); used != 0 {
		t.Errorf("%d handles still counted after the deletes", used)
	}
	// A delete that cannot finish says what it deleted: as root nothing refuses, so make an entry that cannot go.
	if os.Geteuid() != 0 {
		must(t, os.MkdirAll(filepath.Join(dir, "ro/locked/x"), 0o755))
		must(t, os.Chmod(filepath.Join(dir, "ro/locked"), 0o555))
		defer os.Chmod(filepath.Join(dir, "ro/locked"), 0o755)
		if _, _, err := g.Remove("ro", true); err == nil || !strings.Contains(err.Error(), "part of it may be deleted") || strings.Contains(err.Error(), dir) {
			t.Errorf("a delete refused by the file system: %v", err)
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(entries)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWalkOpenAfterReplace: a file a walk listed and that a write then replaced (a new file renamed over it, as
// every write through the guard does) opens as the new version; one replaced by a symlink or a FIFO does not open.
// Searches over a busy workspace skipped such files before (found by the load test).
func TestWalkOpenAfterReplace(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, name := range []string{"renamed", "symlinked", "fifo"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	replace := map[string]func(p string) error{
		"renamed": func(p string) error {
			if err := os.WriteFile(p+".tmp", []byte("new"), 0o644); err != nil {
				return err
			}
			return os.Rename(p+".tmp", p)
		},
		"symlinked": func(p string) error { os.Remove(p); return os.Symlink("other", p) },
		"fifo":      func(p string) error { os.Remove(p); return mkfifoAt(p, 0o644) },
	}
	got := map[string]string{}
	err = g.Walk(context.Background(), ".", WalkOptions{}, func(e *Entry) error {
		fn, ok := replace[e.Name]
		if !ok {
			return nil
		}
		if err := fn(filepath.Join(dir, e.Name)); err != nil {
			t.Fatal(err)
		}
		f, err := e.Open()
		if err != nil {
			got[e.Name] = "error: " + err.Error()
			return nil
		}
		defer f.Close()
		b := make([]byte, 16)
		n, _ := f.Read(b)
		got[e.Name] = string(b[:n])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["renamed"] != "new" {
		t.Errorf("a file replaced by a rename: %q, want the new version", got["renamed"])
	}
	for _, name := range []string{"symlinked", "fifo"} {
		if !strings.Contains(got[name], ReasonChanged) {
			t.Errorf("%s: %q, want a %q error", name, got[name], ReasonChanged)
		}
	}
}

// TestWalkOpenUnderConstantReplacement: a file that writers replace over and over (as the load test's shared files
// are) still opens from a walk every time: the name may hold a newer file at each look, and Open looks again.
func TestWalkOpenUnderConstantReplacement(t *testing.T) {
	dir := t.TempDir()
	g, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	p := filepath.Join(dir, "busy")
	must(t, os.WriteFile(p, []byte("v"), 0o644))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := fmt.Sprintf("%s.%d", p, i%4)
			if os.WriteFile(tmp, []byte("v"), 0o644) == nil {
				_ = os.Rename(tmp, p)
			}
		}
	}()
	failed := 0
	const walks = 3000
	for range walks {
		err := g.Walk(context.Background(), ".", WalkOptions{}, func(e *Entry) error {
			if e.Name != "busy" {
				return nil
			}
			f, err := e.Open()
			if err != nil {
				failed++
				return nil
			}
			return f.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	if failed > 0 {
		t.Errorf("%d of %d opens of a file being replaced failed", failed, walks)
	}
}
