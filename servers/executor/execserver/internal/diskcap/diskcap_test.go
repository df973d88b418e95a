package diskcap

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestArmedBeforeTheCommandWrites: a command that fills the disk at once, before the watch's first check, is still
// killed, because the usage it is compared against was taken when the watch was armed, before the command started.
// Positive control: armed after the write (what measuring in the watch's goroutine amounted to when the command
// was quicker), the same bytes are the baseline and nothing is killed.
func TestArmedBeforeTheCommandWrites(t *testing.T) {
	const limit = 1 << 20
	fill := func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	watch := func(armed Armed) bool {
		var kills atomic.Int32
		stop := armed.Watch(context.Background(), nil, func() { kills.Add(1) })
		time.Sleep(3 * CheckEvery)
		killed, _ := stop()
		if killed != (kills.Load() == 1) {
			t.Fatalf("stop says killed %v, kill ran %d times", killed, kills.Load())
		}
		return killed
	}

	dir := t.TempDir()
	armed := NewMeter().Arm(limit, []string{dir})
	fill(dir) // the command's first moment
	if !watch(armed) {
		t.Error("a command that wrote 4 MiB at once, past a cap of 1 MiB, was not killed")
	}

	control := t.TempDir()
	fill(control)
	if watch(NewMeter().Arm(limit, []string{control})) {
		t.Error("control: armed after the write, the write is the baseline and nothing should be killed")
	}
}

// TestArmWithoutALimitWalksNothing: a limit of 0 or less arms nothing (no walk, no meter reading) and never kills.
func TestArmWithoutALimitWalksNothing(t *testing.T) {
	dir := t.TempDir()
	m := NewMeter()
	armed := m.Arm(-1, []string{dir})
	if m.last.Load() != -1 {
		t.Error("a watch without a limit measured the folders")
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := armed.Watch(context.Background(), nil, func() { t.Error("killed without a limit") })
	time.Sleep(2 * CheckEvery)
	if killed, _ := stop(); killed {
		t.Error("killed without a limit")
	}
}
