package pathguard

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"time"
)

// The disk cap (Options.MaxWorkspaceBytes) bounds what the workspace takes on disk: the blocks its entries hold
// (st_blocks, as du counts them: a sparse file counts what it holds, a file with space reserved by fallocate what it
// reserves, folders their blocks too, a file with several hard links once), which is how the executor's own disk
// cap counts the same workspace. Counting means walking the whole workspace, too slow for every write, so the
// guard keeps a figure: counted by a walk when the guard opens, moved by every write it makes (by the blocks the new
// content will take, rounded up to whole blocks, less those of the file it replaces), and counted again when it is
// older than usageMaxAge, since commands change the tree too. A write that would take the figure past the cap is
// refused; one that shrinks the workspace never is.
//
// What the figure can miss (the residual window, stated in docs/filesystem.md): what commands wrote since the last
// count (at most usageMaxAge old when a write is let through; a refusal is always made on a count at most
// usageRecheck old); folders the walk could not read; and, while a write is in progress, its temporary file (the
// old file and the new one exist together until the rename).

// usageMaxAge is how old the figure may be when a write is let through on it.
const usageMaxAge = 5 * time.Second

// usageRecheck is how old the figure may be when a write is refused on it: an older one is counted again first, in
// case commands have made room since.
const usageRecheck = time.Second

// now is the clock of the usage figure's age; tests move it.
var now = time.Now

// usage is the guard's figure of the bytes the workspace holds.
type usage struct {
	mu      sync.Mutex
	counted int64     // what the last count found
	at      time.Time // when it was made; zero before the first, or after a change the guard cannot size (a delete)
	err     error     // why the last count failed, if it did
	done    int64     // bytes the guard's writes added (or removed) since that count
	pending int64     // bytes the writes in progress will add, reserved before they write
}

// count walks the workspace and adds up the blocks of its entries. The caller holds u.mu.
func (g *Guard) count(u *usage) {
	total := g.root.allocated(".")
	linked := map[fileID]bool{} // files with more than one link, counted once
	err := g.Walk(context.Background(), ".", WalkOptions{Unsorted: true, NoEntryCap: true, SkipUnreadable: true}, func(e *Entry) error {
		if e.nlink > 1 && !e.IsDir() {
			if linked[e.id] {
				return nil
			}
			linked[e.id] = true
		}
		total += e.Allocated
		return nil
	})
	u.at, u.done, u.err = now(), 0, err
	if err == nil {
		u.counted = total
	}
}

// diskBytes is what a file of size bytes will take on disk: whole blocks of the file system's block size.
func diskBytes(size int64, old fs.FileInfo) int64 {
	block := int64(4096)
	if st, ok := sysInfoOf(old); ok && st.blksize > 0 {
		block = st.blksize
	}
	return (size + block - 1) / block * block
}

// allocatedBytes is what the file old takes on disk (0 for none).
func allocatedBytes(old fs.FileInfo) int64 {
	if st, ok := sysInfoOf(old); ok {
		return st.blocks * 512
	}
	if old != nil {
		return old.Size()
	}
	return 0
}

// reserveSpace checks that a write of rel of size bytes, over the file old (nil when there is none), keeps the
// workspace within the disk cap, and reserves the difference. The returned func must be called when the write is
// over, with whether it happened.
func (g *Guard) reserveSpace(op, rel string, old fs.FileInfo, size int64) (func(ok bool), error) {
	max := g.opts.MaxWorkspaceBytes
	if max <= 0 {
		return func(bool) {}, nil
	}
	delta := diskBytes(size, old) - allocatedBytes(old)
	u := &g.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if now().Sub(u.at) > usageMaxAge {
		g.count(u)
	}
	over := func() bool { return delta > 0 && u.counted+u.done+u.pending+delta > max }
	if (over() || u.err != nil) && delta > 0 && now().Sub(u.at) > usageRecheck {
		g.count(u)
	}
	if u.err != nil && delta > 0 {
		return nil, &Error{Op: op, Path: rel, Reason: ReasonNoSpace,
			Detail: fmt.Sprintf("the workspace's usage cannot be counted (%v), so no write may add bytes while its cap of %d bytes is set", u.err, max)}
	}
	if over() {
		return nil, &Error{Op: op, Path: rel, Reason: ReasonNoSpace,
			Detail: fmt.Sprintf("the workspace takes %d bytes on disk and this write would add %d; the cap is %d bytes; delete files to make room",
				u.counted+u.done+u.pending, delta, max)}
	}
	u.pending += delta
	return func(ok bool) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.pending -= delta
		if ok {
			u.done += delta
		}
	}, nil
}

// forgetUsage makes the next write count the workspace again: after a change the guard cannot size cheaply.
func (g *Guard) forgetUsage() {
	if g.opts.MaxWorkspaceBytes <= 0 {
		return
	}
	g.usage.mu.Lock()
	g.usage.at = time.Time{}
	g.usage.mu.Unlock()
}

// freed records that a delete or an overwriting move removed the file fi (unless it has other links).
func (g *Guard) freed(fi fs.FileInfo) {
	if g.opts.MaxWorkspaceBytes <= 0 || fi == nil {
		return
	}
	if st, ok := sysInfoOf(fi); ok && st.nlink > 1 {
		return
	}
	g.usage.mu.Lock()
	g.usage.done -= allocatedBytes(fi)
	g.usage.mu.Unlock()
}

// Usage is the guard's figure of the bytes the workspace takes on disk and when it was last counted by a walk (zero when
// there is no disk cap, or no count yet).
func (g *Guard) Usage() (int64, time.Time) {
	g.usage.mu.Lock()
	defer g.usage.mu.Unlock()
	return g.usage.counted + g.usage.done + g.usage.pending, g.usage.at
}
