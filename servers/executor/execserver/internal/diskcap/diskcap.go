// Package diskcap is the disk cap both backends share: while a command runs, the backend measures the folders the
// command can keep bytes in (the workspace and, per backend, its private home, temp or cache folders) every
// CheckEvery, and kills the command when together they pass the cap. No kernel quota is needed (none is
// configurable on an arbitrary folder without root and a prepared filesystem), at the price of a window: between
// two checks a command may write at the disk's speed.
package diskcap

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"time"
)

// DefaultMax is the default disk cap: 16 GiB for a backend's counted folders together.
const DefaultMax = 16 << 30

// DefaultMaxInodes is the default inode cap: files, folders and links of a backend's counted folders together.
// Each is some hundred bytes of kernel memory on the host (100,000 empty files made by one command cost 100,681
// inodes of the host's root filesystem before the cap).
const DefaultMaxInodes = 1_000_000

// CheckEvery is how often a running command's disk use is measured.
const CheckEvery = 500 * time.Millisecond

// Usage is the space the files under dirs take on disk (allocated blocks, so sparse files count for what they hold
// and fallocate for what it reserves). Hard links are counted once. Symlinks are not followed. A folder a command
// made unreadable (chmod 000) is still counted when it belongs to the server's user: it is opened for the count and
// its mode put back (unlockedUsage); a root server reads it anyway.
func Usage(dirs ...string) int64 {
	total, _ := UsageInodes(dirs...)
	return total
}

// UsageInodes is Usage and the number of inodes under dirs (files, folders, links: each name that is not a hard
// link to one already counted).
func UsageInodes(dirs ...string) (total, inodes int64) {
	seen := map[[2]uint64]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if e != nil && e.IsDir() && p != d {
					total += unlockedUsage(p) // unreadable: counted all the same where it is the server's own
				}
				return nil // vanished or unreadable: skip
			}
			inodes++
			fi, err := e.Info()
			if err != nil {
				return nil
			}
			key, nlink, blocks, ok := fileBlocks(fi)
			if !ok {
				total += fi.Size()
				return nil
			}
			if nlink > 1 {
				if seen[key] {
					inodes--
					return nil
				}
				seen[key] = true
			}
			total += blocks * 512
			return nil
		})
	}
	return total, inodes
}

// Meter remembers the last usage measured of one backend's folders, so that a command need not walk them when it
// starts: most commands end before the first check.
type Meter struct {
	last atomic.Int64 // bytes; -1 until the first measurement
}

// NewMeter is a meter that has measured nothing yet.
func NewMeter() *Meter {
	m := &Meter{}
	m.last.Store(-1)
	return m
}

// Arm begins the watch of one command, before the command starts: it takes the usage to compare against, the last
// one this meter measured (it may be older than the files the filesystem server wrote since), so a command shorter
// than CheckEvery costs no walk at all, or the first time, measured now. Measured after the command started, it
// would count what the command wrote in its first moments as the workspace's own, and a command that fills the disk
// at once (fallocate) would never pass it. A limit of 0 or less arms nothing and walks nothing.
func (m *Meter) Arm(limit int64, dirs []string) Armed {
	if limit <= 0 {
		return Armed{}
	}
	base := m.last.Load()
	if base < 0 {
		base = Usage(dirs...)
		m.last.Store(base)
	}
	return Armed{meter: m, limit: limit, base: base, dirs: dirs}
}

// Armed is one command's watch, armed before it started (Meter.Arm).
type Armed struct {
	meter       *Meter
	limit, base int64
	dirs        []string
}

// Watch calls kill, once, when the usage of the armed folders, plus extra (when not nil: what the backend's
// commands hold that no folder shows, files deleted while open), passes the limit and is more than when the command
// was armed (so a command that cleans up a workspace already over the cap may run). It returns a function that
// stops watching and says whether it killed (with the usage it saw).
func (a Armed) Watch(ctx context.Context, extra func() int64, kill func()) (stop func() (killed bool, used int64)) {
	if a.meter == nil {
		return func() (bool, int64) { return false, 0 }
	}
	ctx, cancel := context.WithCancel(ctx)
	type verdict struct {
		killed bool
		used   int64
	}
	done := make(chan verdict, 1)
	go func() {
		t := time.NewTicker(CheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- verdict{}
				return
			case <-t.C:
				used := Usage(a.dirs...)
				a.meter.last.Store(used)
				if extra != nil {
					used += extra()
				}
				if used > a.limit && used > a.base {
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
