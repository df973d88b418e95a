//go:build unix

package pathguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// du is what dir takes on disk as du counts it: the blocks of every entry, a file with several links once.
func du(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !d.IsDir() && st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	})
	must(t, err)
	return total
}

// blockSize is the file system's block size under dir: files take whole blocks of it.
func blockSize(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	must(t, syscall.Statfs(dir, &st))
	return int64(st.Bsize) // uint32 on darwin, int64 on linux
}

// TestDiskCap: a write that would take the workspace past MaxWorkspaceBytes is refused with the usage and the cap;
// one that shrinks it never is; the figure follows the guard's own writes, deletes and moves at once, and what
// commands do at the next count (at most usageMaxAge later, or usageRecheck before a refusal). Sizes are in blocks:
// the cap counts what files take on disk, as du does and as the executor's cap does.
func TestDiskCap(t *testing.T) {
	clock := time.Now()
	now = func() time.Time { return clock }
	defer func() { now = time.Now }()
	dir := t.TempDir()
	B := blockSize(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, "old.txt"), make([]byte, 6*B), 0o644))
	start := du(t, dir)
	max := start + 4*B
	g, err := Open(dir, Options{MaxWorkspaceBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write := func(name string, n int64) error {
		_, _, err := g.WriteFile(name, []byte(strings.Repeat("x", int(n))))
		return err
	}
	usage := func() int64 { n, _ := g.Usage(); return n }
	if usage() != start {
		t.Fatalf("usage at start %d, want %d (du)", usage(), start)
	}
	must(t, write("a.txt", 3*B))
	err = write("b.txt", B+1) // two blocks
	want := fmt.Sprintf(`write "b.txt": over the workspace's disk cap (the workspace takes %d bytes on disk and this write would add %d; the cap is %d bytes; delete files to make room)`, start+3*B, 2*B, max)
	if !IsReason(err, ReasonNoSpace) || err.Error() != want {
		t.Fatalf("a write past the cap:\n got %v\nwant %s", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("the refused write left a file")
	}
	must(t, write("b.txt", B)) // exactly the cap
	must(t, write("a.txt", 2*B))
	must(t, write("c.txt", B))
	if usage() != max || du(t, dir) != max {
		t.Fatalf("usage %d, du %d, want both %d", usage(), du(t, dir), max)
	}
	// Deletes and overwriting moves free blocks at once.
	if _, _, err := g.Remove("c.txt", false); err != nil {
		t.Fatal(err)
	}
	must(t, write("d.txt", B))
	if _, _, err := g.Rename("d.txt", "b.txt", true); err != nil {
		t.Fatal(err)
	}
	if usage() != max-B || du(t, dir) != max-B {
		t.Fatalf("after a delete and an overwriting move: usage %d, du %d, want both %d", usage(), du(t, dir), max-B)
	}
	// A command fills the workspace: the figure does not know until it is counted again. A write the old figure
	// lets through passes while the figure is fresh (the residual window)...
	must(t, os.WriteFile(filepath.Join(dir, "cmd.bin"), make([]byte, 10*B), 0o644))
	must(t, write("e.txt", B))
	// ... and once the figure is older than usageMaxAge, the next write counts again and is refused.
	clock = clock.Add(usageMaxAge + time.Second)
	if err := write("f.txt", 1); !IsReason(err, ReasonNoSpace) || !strings.Contains(err.Error(), fmt.Sprintf("takes %d bytes", du(t, dir))) {
		t.Fatalf("after a command filled the workspace (du %d): %v", du(t, dir), err)
	}
	// Over the cap, a write that shrinks the workspace is still allowed.
	must(t, write("old.txt", 10))
	// The command deletes its file: a refusal is only made on a count under usageRecheck old, so room made by
	// commands is seen a second later.
	must(t, os.Remove(filepath.Join(dir, "cmd.bin")))
	if err := write("g.txt", B); !IsReason(err, ReasonNoSpace) {
		t.Fatalf("a write on a fresh figure that says full: %v", err)
	}
	clock = clock.Add(usageRecheck + time.Millisecond)
	must(t, write("g.txt", B))
	// A second link to a file takes no more space, and is counted once.
	clock = clock.Add(usageMaxAge + time.Second)
	before := du(t, dir)
	must(t, os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "a-link.txt")))
	must(t, write("h.txt", 0))
	if usage() != before {
		t.Fatalf("with a hard link: usage %d, want %d", usage(), before)
	}
	// A recursive delete makes the next write count again.
	must(t, write("sub/big.txt", B))
	if _, _, err := g.Remove("sub", true); err != nil {
		t.Fatal(err)
	}
	if _, at := g.Usage(); !at.IsZero() {
		t.Fatal("a recursive delete left the figure as it was")
	}
	must(t, write("i.txt", B))
	if usage() != du(t, dir) {
		t.Fatalf("usage %d after a recount, du %d", usage(), du(t, dir))
	}
}

// TestDiskCapUncountable: a workspace the walk cannot count (here deeper than the walk cap) cannot be held to the
// cap, so writes that add bytes are refused with the reason; writes that shrink files still work.
func TestDiskCapUncountable(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b/c/d"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), make([]byte, 3*blockSize(t, dir)), 0o644))
	g, err := Open(dir, Options{MaxWorkspaceBytes: 1 << 30, MaxTreeDepth: 2})
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
