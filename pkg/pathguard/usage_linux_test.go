package pathguard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestDiskCapSparse: what counts is what files take on disk, so a sparse file of a terabyte does not fill the
// workspace and space reserved with fallocate does, even beyond the file's size.
func TestDiskCapSparse(t *testing.T) {
	dir := t.TempDir()
	B := blockSize(t, dir)
	f, err := os.Create(filepath.Join(dir, "sparse"))
	must(t, err)
	must(t, f.Truncate(1<<40))
	f.Close()
	g, err := Open(dir, Options{MaxWorkspaceBytes: du(t, dir) + 100*B})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, _, err := g.WriteFile("a.txt", make([]byte, 50*B)); err != nil {
		t.Fatalf("beside a sparse terabyte: %v", err)
	}
	f, err = os.Create(filepath.Join(dir, "reserved"))
	must(t, err)
	defer f.Close()
	const keepSize = 1 // FALLOC_FL_KEEP_SIZE: the file stays empty, its blocks are reserved
	if err := syscall.Fallocate(int(f.Fd()), keepSize, 0, 60*B); err != nil {
		t.Skipf("fallocate: %v", err)
	}
	g.usage.mu.Lock()
	g.usage.at = time.Time{}
	g.usage.mu.Unlock()
	if _, _, err := g.WriteFile("b.txt", make([]byte, B)); !IsReason(err, ReasonNoSpace) {
		t.Fatalf("after fallocate reserved 60 blocks in an empty file: %v", err)
	}
}
