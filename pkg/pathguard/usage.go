package pathguard

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The disk cap (Options.MaxWorkspaceBytes) bounds what the workspace holds, counted as the sizes of its regular files
// (the apparent size, as ls -l shows it: a sparse file counts its whole length; folders and symlinks count nothing).
// Counting means walking the whole workspace, too slow for every write, so the guard keeps a figure: counted by a walk
// when the guard opens, moved by every write it makes, and counted again when it is older than usageMaxAge, since
// commands change the tree too. A write that would take the figure past the cap is refused; one that shrinks the
// workspace never is.
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

// count walks the workspace and adds up its regular files. The caller holds u.mu.
func (g *Guard) count(u *usage) {
	var total int64
	err := g.Walk(context.Background(), ".", WalkOptions{Unsorted: true, NoEntryCap: true, SkipUnreadable: true}, func(e *Entry) error {
		total += e.Size
		return nil
	})
	u.at, u.done, u.err = now(), 0, err
	if err == nil {
		u.counted = total
	}
}

// reserveSpace checks that a write of rel that turns old bytes into new keeps the workspace within the disk cap,
// and reserves the difference. The returned func must be called when the write is over, with whether it happened.
func (g *Guard) reserveSpace(op, rel string, old, new int64) (func(ok bool), error) {
	max := g.opts.MaxWorkspaceBytes
	if max <= 0 {
		return func(bool) {}, nil
	}
	delta := new - old
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
			Detail: fmt.Sprintf("the workspace holds %d bytes and this write would add %d; the cap is %d bytes; delete files to make room",
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

// freed records bytes a delete or an overwriting move removed.
func (g *Guard) freed(n int64) {
	if g.opts.MaxWorkspaceBytes <= 0 || n == 0 {
		return
	}
	g.usage.mu.Lock()
	g.usage.done -= n
	g.usage.mu.Unlock()
}

// Usage is the guard's figure of the bytes the workspace holds and when it was last counted by a walk (zero when
// there is no disk cap, or no count yet).
func (g *Guard) Usage() (int64, time.Time) {
	g.usage.mu.Lock()
	defer g.usage.mu.Unlock()
	return g.usage.counted + g.usage.done + g.usage.pending, g.usage.at
}
