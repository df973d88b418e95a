package rootfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlanHoldsOnlyTheLayout: the plan binds the layout's paths at their own paths (read folders read-only, write
// folders and the private temp folder at /tmp read-write), leaves out the read folders it builds or hides (/sys),
// masks /etc's secrets, and ends in the pivot. The control: a read folder outside the hidden list is bound.
func TestPlanHoldsOnlyTheLayout(t *testing.T) {
	tmp, write := t.TempDir(), t.TempDir()
	p := New(Layout{UID: os.Getuid(), GID: os.Getgid(), Tmp: tmp, ReadDirs: []string{"/usr", "/sys", "/etc"},
		WriteDirs: []string{write}, Devices: []string{"/dev/null"}, EtcHidden: map[string]bool{"shadow": true}})
	find := func(kind, target string) *Op {
		for i, op := range p.Ops {
			if op.Kind == kind && op.Target == target {
				return &p.Ops[i]
			}
		}
		return nil
	}
	if op := find("bind", "/usr"); op == nil || op.Write {
		t.Errorf("control: /usr is not bound read-only: %+v", op)
	}
	if op := find("bind", "/sys"); op != nil {
		t.Errorf("/sys is bound: %+v", op)
	}
	if op := find("bind", write); op == nil || !op.Write {
		t.Errorf("the write folder is not bound read-write: %+v", op)
	}
	if op := find("bind", "/tmp"); op == nil || op.Source != tmp || !op.Write {
		t.Errorf("the private temp folder is not bound at /tmp: %+v", op)
	}
	if _, err := os.Lstat("/etc/shadow"); err == nil {
		if op := find("bind", "/etc/shadow"); op == nil || op.Source != "/dev/null" {
			t.Errorf("/etc/shadow is not masked: %+v", op)
		}
	}
	if last := p.Ops[len(p.Ops)-1]; last.Kind != "pivot" {
		t.Errorf("the plan ends in %+v, not the pivot", last)
	}
	ro := p.Paths()
	if !slices.Contains(ro[0], "/usr") || !slices.Contains(ro[1], write) || slices.Contains(ro[0], "/dev/null") {
		t.Errorf("the plan's paths: %v", ro)
	}
}

// TestClosedAncestor: a folder the user may not pass through is named; the control: opened, nothing is.
func TestClosedAncestor(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // the test's own folders, made 0700 by package testing
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	closed := filepath.Join(base, "closed")
	inner := filepath.Join(closed, "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	const stranger = 54321 // neither the owner nor the group of the folders
	if got := ClosedAncestor(inner, stranger, stranger); got != closed {
		t.Errorf("ClosedAncestor(%s) = %q, want %s", inner, got, closed)
	}
	if err := os.Chmod(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	if got := ClosedAncestor(inner, stranger, stranger); got != "" {
		t.Errorf("control: with %s open to pass through, ClosedAncestor says %q", closed, got)
	}
}
