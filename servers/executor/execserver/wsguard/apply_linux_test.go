package wsguard

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"golang.org/x/sys/unix"
)

func newTestGuard(t *testing.T, ws string) *Guard {
	t.Helper()
	prot, err := pathguard.NewProtection(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ws, prot)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestUnchangedSkipSeesEveryChange: once a file is found the same in the layer and the workspace with settled
// stamps, the next apply skips it without reading it (the control: the session holds its stamps) — and still
// applies a change of the same size made in the layer afterwards, and puts the layer's bytes back over a change
// made to the workspace's file behind the guard's back.
func TestUnchangedSkipSeesEveryChange(t *testing.T) {
	defer func(d time.Duration) { settleTime = d }(settleTime)
	settleTime = 50 * time.Millisecond
	ws, upper := t.TempDir(), t.TempDir()
	write(t, upper, "d/a.txt", "one", 0o644)
	s := newTestGuard(t, ws).Session()
	read := func() string { b, _ := os.ReadFile(filepath.Join(ws, "d/a.txt")); return string(b) }
	settle := func() { time.Sleep(3 * settleTime) }
	apply := func() {
		t.Helper()
		if r := s.Apply(upper); len(r) != 0 {
			t.Fatalf("refused: %v", r)
		}
	}
	apply()
	settle()
	apply()
	if _, ok := s.unchanged["d/a.txt"]; !ok || read() != "one" {
		t.Fatalf("control: a settled, unchanged file should be recorded for skipping (recorded %v, content %q)", ok, read())
	}
	write(t, upper, "d/a.txt", "two", 0o644)
	apply()
	if read() != "two" {
		t.Fatalf("a change of the same size in the layer was skipped: %q", read())
	}
	settle()
	apply()
	apply()
	if err := os.WriteFile(filepath.Join(ws, "d/a.txt"), []byte("xxx"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply()
	if read() != "two" {
		t.Fatalf("a change to the workspace's file hid the layer's: %q", read())
	}
}

// TestLayerFIFODoesNotBlock: a regular file a running command swaps for a FIFO between the apply's look and its
// open is refused at once; an apply that blocked there would hold the workspace's guard, and every command's
// result, until something wrote to the FIFO. Control: the plain open of the same FIFO blocks.
func TestLayerFIFODoesNotBlock(t *testing.T) {
	upper := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(upper, "p"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := &here{a: &apply{layer: r}, rel: "."}
	defer h.close()
	done := make(chan error, 1)
	go func() {
		f, err := h.openLayerFile("p")
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was opened as a layer's file")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a FIFO in the layer blocked")
	}
	plain := make(chan struct{})
	go func() {
		if f, err := r.Open("p"); err == nil {
			f.Close()
		}
		close(plain)
	}()
	select {
	case <-plain:
		t.Fatal("control: the plain open of a FIFO should block until a writer comes")
	case <-time.After(300 * time.Millisecond):
	}
	w, err := os.OpenFile(filepath.Join(upper, "p"), os.O_WRONLY, 0) // releases the control's open
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-plain
}
