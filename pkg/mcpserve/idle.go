package mcpserve

import (
	"context"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// A server's heap grows with a burst of calls and the Go runtime gives the pages back to the system only slowly
// (its background scavenger keeps a margin above the heap goal). A sandbox server spends most of its life idle
// between an agent's calls, so after idleRelease without a request it returns what it can at once: its resident
// memory goes back to about where it started, which the load test checks.
const (
	idleRelease = 30 * time.Second
	idleCheck   = 5 * time.Second
)

// activity records when requests come, and whether memory was released since the last one.
type activity struct {
	last     atomic.Int64 // unix nanoseconds of the last request
	released atomic.Bool
}

func (a *activity) touch() {
	a.last.Store(time.Now().UnixNano())
	a.released.Store(false)
}

// releaseWhenIdle frees memory to the system once after each busy period, when idle for idleRelease.
func (a *activity) releaseWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			last := a.last.Load()
			if last != 0 && !a.released.Load() && time.Since(time.Unix(0, last)) >= idleRelease {
				a.released.Store(true)
				debug.FreeOSMemory()
			}
		}
	}
}
