package pathguard

import (
	"fmt"
	"sync/atomic"
)

// handles caps the folder handles that the walks and deletes of one guard hold at once. A walk holds a handle per
// level it is down, so a few concurrent walks of deep trees could otherwise use up the process's descriptors and
// make every other call fail with "too many open files".
type handles struct {
	used atomic.Int64
	max  int64
}

// acquireHandles takes n handles from the budget, or says why it cannot.
func (g *Guard) acquireHandles(n int) error {
	if used := g.handles.used.Add(int64(n)); used > g.handles.max {
		g.handles.used.Add(int64(-n))
		return fmt.Errorf("the server holds %d folder handles for other calls, its limit (half its open-file limit); try again when they are done", used-int64(n))
	}
	return nil
}

func (g *Guard) releaseHandles(n int) { g.handles.used.Add(int64(-n)) }
