package wsguard

import (
	"sync"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// ApplyEvery is how often the layer of a command that is still running is applied to the workspace, on every
// backend: what a dev server writes reaches the workspace (and the filesystem server, and the person) within this
// time.
const ApplyEvery = 2 * time.Second

// Watch applies a running command's layer every ApplyEvery until finish is called; finish stops the ticker, applies
// once more and returns what that last apply refused (later calls return the same). Call finish only once nothing
// runs in the command's sandbox any more, so that the last apply sees every change.
func Watch(apply func() []protocol.WorkspaceRefusal) (finish func() []protocol.WorkspaceRefusal) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(ApplyEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				apply()
			}
		}
	}()
	var once sync.Once
	var refused []protocol.WorkspaceRefusal
	return func() []protocol.WorkspaceRefusal {
		once.Do(func() {
			close(stop)
			<-stopped
			refused = apply()
		})
		return refused
	}
}

// Fallback is the guard for requests that bring no Apply of their own (a caller of a backend without the
// executor's server): the workspace with the default protected paths, opened on first use. A workspace it cannot
// open refuses every change: nothing lands unguarded. The zero value is ready.
type Fallback struct {
	once sync.Once
	g    *Guard
}

// Apply returns the function that applies an upper folder to the workspace dir; the first call opens the guard
// (and tells log if it cannot), later calls reuse it.
func (f *Fallback) Apply(dir string, log func(error)) func(upper string) []protocol.WorkspaceRefusal {
	f.once.Do(func() {
		prot, err := pathguard.NewProtection(nil, nil)
		if err == nil {
			f.g, err = New(dir, prot)
		}
		if err != nil {
			log(err)
		}
	})
	if f.g == nil {
		return func(string) []protocol.WorkspaceRefusal {
			return []protocol.WorkspaceRefusal{{Path: ".", Reason: "the workspace guard could not open the workspace; no change was applied"}}
		}
	}
	return f.g.Session().Apply
}

// Close closes the guard if Apply opened one.
func (f *Fallback) Close() error {
	if f.g != nil {
		return f.g.Close()
	}
	return nil
}
