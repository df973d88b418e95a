package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskCap: a write that would take the workspace past MaxWorkspaceBytes is refused with the usage and the cap;
// one that shrinks it never is; the figure follows the guard's own writes, deletes and moves at once, and what
// commands do at the next count (at most usageMaxAge later, or usageRecheck before a refusal).
func TestDiskCap(t *testing.T) {
	clock := time.Now()
	now = func() time.Time { return clock }
	defer func() { now = time.Now }()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "old.txt"), make([]byte, 600), 0o644))
	g, err := Open(dir, Options{MaxWorkspaceBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write := func(name string, n int) error {
		_, _, err := g.WriteFile(name, []byte(strings.Repeat("x", n)))
		return err
	}
	if n, _ := g.Usage(); n != 600 {
		t.Fatalf("usage at start %d, want 600", n)
	}
	must(t, write("a.txt", 300))
	err = write("b.txt", 101)
	if !IsReason(err, ReasonNoSpace) || !strings.Contains(err.Error(), `write "b.txt": over the workspace's disk cap (the workspace holds 900 bytes and this write would add 101; the cap is 1000 bytes; delete files to make room)`) {
		t.Fatalf("a write past the cap: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("the refused write left a file")
	}
	must(t, write("b.txt", 100)) // exactly the cap
	must(t, write("a.txt", 200)) // overwrites count the difference: 100 bytes freed
	must(t, write("c.txt", 100))
	if n, _ := g.Usage(); n != 1000 {
		t.Fatalf("usage %d, want 1000", n)
	}
	// Deletes and overwriting moves free bytes at once.
	if _, _, err := g.Remove("c.txt", false); err != nil {
		t.Fatal(err)
	}
	must(t, write("d.txt", 100))
	if _, _, err := g.Rename("d.txt", "b.txt", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Usage(); n != 900 {
		t.Fatalf("usage after a delete and an overwriting move %d, want 900", n)
	}
	// A command fills the workspace: the figure does not know until it is counted again. A write the old figure
	// lets through passes while the figure is fresh (the residual window)...
	must(t, os.WriteFile(filepath.Join(dir, "cmd.bin"), make([]byte, 5000), 0o644))
	must(t, write("e.txt", 50))
	// ... and once the figure is older than usageMaxAge, the next write counts again and is refused.
	clock = clock.Add(usageMaxAge + time.Second)
	if err := write("f.txt", 1); !IsReason(err, ReasonNoSpace) || !strings.Contains(err.Error(), "holds 5950 bytes") {
		t.Fatalf("after a command filled the workspace: %v", err)
	}
	// Over the cap, a write that shrinks the workspace is still allowed.
	must(t, write("old.txt", 10))
	// The command deletes its file: a refusal is only made on a count under usageRecheck old, so room made by
	// commands is seen a second later.
	must(t, os.Remove(filepath.Join(dir, "cmd.bin")))
	if err := write("g.txt", 10); !IsReason(err, ReasonNoSpace) {
		t.Fatalf("a write on a fresh figure that says full: %v", err)
	}
	clock = clock.Add(usageRecheck + time.Millisecond)
	must(t, write("g.txt", 10))
	// A recursive delete makes the next write count again.
	must(t, write("sub/big.txt", 300))
	if _, _, err := g.Remove("sub", true); err != nil {
		t.Fatal(err)
	}
	if _, at := g.Usage(); !at.IsZero() {
		t.Fatal("a recursive delete left the figure as it was")
	}
	must(t, write("h.txt", 300))
}

// TestDiskCapUncountable: a workspace the walk cannot count (here deeper than the walk cap) cannot be held to the
// cap, so writes that add bytes are refused with the reason; writes that shrink files still work.
func TestDiskCapUncountable(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b/c/d"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("12345"), 0o644))
	g, err := Open(dir, Options{MaxWorkspaceBytes: 1 << 20, MaxTreeDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, _, err = g.WriteFile("new.txt", []byte("x"))
	if !IsReason(err, ReasonNoSpace) || !strings.Contains(err.Error(), "usage cannot be counted") || !strings.Contains(err.Error(), "too deep") {
		t.Fatalf("a write when the workspace cannot be counted: %v", err)
	}
	if _, _, err := g.WriteFile("f.txt", []byte("1")); err != nil {
		t.Fatalf("a write that shrinks a file: %v", err)
	}
}

// TestNoDiskCap: without a cap nothing is counted.
func TestNoDiskCap(t *testing.T) {
	g, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	before := g.ResolvedNames()
	if _, _, err := g.WriteFile("a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, at := g.Usage(); n != 0 || !at.IsZero() || g.ResolvedNames()-before > 5 {
		t.Errorf("without a cap: usage %d at %v, %d names resolved by a write", n, at, g.ResolvedNames()-before)
	}
}
