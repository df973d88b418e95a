package local

// The disk cap of the local backend: while a command runs, the server measures the workspace and the command's
// private home and temp folders every diskCheckEvery, and kills the command when together they pass the cap. No
// kernel quota is needed (none is configurable on an arbitrary folder without root and a prepared filesystem), at
// the price of a window: between two checks a command may write at the disk's speed (RLIMIT_FSIZE still bounds
// each file). Build caches are not counted: they are shared, kept, and pruned by their own tools.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxWorkspaceBytes is the default disk cap: 16 GiB for the workspace, home and temp together.
const DefaultMaxWorkspaceBytes = 16 << 30

// diskCheckEvery is how often a running command's disk use is measured.
const diskCheckEvery = 500 * time.Millisecond

// diskUsage is the space the files under dirs take on disk (allocated blocks, so sparse files count for what they
// hold and fallocate for what it reserves). Hard links are counted once.
func diskUsage(dirs ...string) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil // vanished or unreadable: skip
			}
			fi, err := e.Info()
			if err != nil {
				return nil
			}
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				total += fi.Size()
				return nil
			}
			if st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), st.Ino}
				if seen[key] {
					return nil
				}
				seen[key] = true
			}
			total += st.Blocks * 512
			return nil
		})
	}
	return total
}

// diskMeter remembers the last usage measured of one backend's folders, so that a command need not walk them when
// it starts: most commands end before the first check.
type diskMeter struct {
	last atomic.Int64 // bytes; -1 until the first measurement
}

func newDiskMeter() *diskMeter {
	m := &diskMeter{}
	m.last.Store(-1)
	return m
}

// watchDisk calls kill, once, when the usage of dirs passes limit and is more than when the command started (so a
// command that cleans up a workspace already over the cap may run), and returns a function that stops watching and
// says whether it killed (with the usage it saw). The usage at the start is the last one this backend measured
// (it may be older than the files the filesystem server wrote since), so a command shorter than diskCheckEvery
// costs no walk at all.
func watchDisk(ctx context.Context, limit int64, dirs []string, meter *diskMeter, kill func()) (stop func() (killed bool, used int64)) {
	if limit <= 0 {
		return func() (bool, int64) { return false, 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	type verdict struct {
		killed bool
		used   int64
	}
	done := make(chan verdict, 1)
	go func() {
		// The usage when the command started: the last one measured (by this backend's earlier commands), or,
		// the first time, measured now.
		base := meter.last.Load()
		if base < 0 {
			base = diskUsage(dirs...)
			meter.last.Store(base)
		}
		t := time.NewTicker(diskCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- verdict{}
				return
			case <-t.C:
				used := diskUsage(dirs...)
				meter.last.Store(used)
				if used > limit && used > base {
					kill()
					done <- verdict{true, used}
					return
				}
			}
		}
	}()
	return func() (bool, int64) {
		cancel()
		v := <-done
		return v.killed, v.used
	}
}

// diskCapNote is what a command killed by the disk cap finds at the end of its stderr.
func diskCapNote(used, limit int64) string {
	return fmt.Sprintf("\n[goalbox: the command was killed: the workspace, home and temp folders use %d bytes, past the disk cap of %d bytes (-max-workspace-bytes)]\n", used, limit)
}
