package layer

import (
	"slices"
	"testing"
)

// TestAttachOrder: the keeper attaches a layer's mounts parents first, so that a private folder or the workspace
// under /tmp (a test's are) is attached after temp's overlay covers /tmp, not hidden below it; temp's overlay is
// moved once and bound at its second path; a kept mount is put back after the overlay above it. Control: in the
// folders' own order, temp's second path (/tmp) would come after the folders below it.
func TestAttachOrder(t *testing.T) {
	private := []Private{{Dir: "/tmp/t1/cache/home"}, {Dir: "/tmp/t1/cache/tmp/i1", Also: "/tmp"}, {Dir: "/tmp/t1/cache/cache"}}
	got := AttachOrder("/tmp/t1/ws", private, nil)
	want := []Attach{{At: "/dev/shm", FD: 1}, {At: "/tmp", FD: 3}, {At: "/tmp/t1/cache/cache", FD: 4}, {At: "/tmp/t1/cache/home", FD: 2},
		{At: "/tmp/t1/cache/tmp/i1", FD: -1, From: "/tmp"}, {At: "/tmp/t1/ws", FD: 0}}
	if !slices.Equal(got, want) {
		t.Errorf("attach order\n%+v\nwant\n%+v", got, want)
	}
	if MountCount(len(private)) != 5 {
		t.Errorf("a layer with three private folders has %d mounts, want 5", MountCount(len(private)))
	}
	// The control: the folders' own order puts /tmp after what lies below it.
	var naive []string
	for _, l := range private {
		naive = append(naive, l.Dir, l.Also)
	}
	if slices.Index(naive, "/tmp") < slices.Index(naive, "/tmp/t1/cache/home") {
		t.Error("control: the folders' own order already attaches /tmp first; the test shows nothing")
	}
	order := AttachOrder("/tmp/t1/ws", private, []string{"/tmp/t1/cache/roots.pem", "/tmp/t1/ro"})
	tmpAt := slices.IndexFunc(order, func(a Attach) bool { return a.At == "/tmp" })
	keepAt := slices.IndexFunc(order, func(a Attach) bool { return a.At == "/tmp/t1/ro" && a.FD == -2 && a.From == KeepAt(1) })
	if tmpAt < 0 || keepAt < tmpAt {
		t.Errorf("the parked /tmp/t1/ro is not put back after /tmp's overlay: %+v", order)
	}
}
