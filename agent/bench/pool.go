package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// A run works through a pool of sandboxes: each exercise takes a free one, is worked on and graded there, and
// gives it back. The local mode is a pool of in-process sandboxes (one per worker, each starting the servers over
// the exercise's folder); -sandbox-pool makes a pool of remote ones (see RemoteSandbox). A sandbox that fails is
// drained: taken out of the pool for the rest of the run, its exercise started again on another, without counting
// a try. The run ends with an error only when no sandbox is left.

// PoolSandbox is one sandbox of a pool.
type PoolSandbox struct {
	// Name is how results and messages name it.
	Name string
	// Grade opens the grader's view of the sandbox over an exercise's copy (a remote sandbox resets its workspace
	// and uploads the copy); Agent opens the model's. Agent may be nil in a pool only the selftest uses.
	Grade, Agent SandboxFactory
}

// SandboxFailure is an error that is the sandbox's and not the exercise's: a server that is down or unhealthy, a
// broken connection, a workspace that cannot be reset. The pool drains the sandbox and the exercise runs again
// on another.
type SandboxFailure struct {
	Sandbox string
	Err     error
}

func (e *SandboxFailure) Error() string { return "sandbox " + e.Sandbox + ": " + e.Err.Error() }
func (e *SandboxFailure) Unwrap() error { return e.Err }

// asSandboxFailure is err's SandboxFailure, or nil.
func asSandboxFailure(err error) *SandboxFailure {
	var sf *SandboxFailure
	if errors.As(err, &sf) {
		return sf
	}
	return nil
}

// Pool hands out free sandboxes, one exercise at a time each.
type Pool struct {
	// OnDrain, when set, is told about each sandbox taken out of the pool and how many are left.
	OnDrain func(name string, err error, left int)

	mu      sync.Mutex
	all     int
	free    []*PoolSandbox // first in, first out: work spreads over every sandbox
	alive   int
	drained []string      // "name: why"
	wake    chan struct{} // closed and replaced whenever free or alive changes
}

// NewPool makes a pool of the given sandboxes.
func NewPool(sandboxes ...PoolSandbox) *Pool {
	p := &Pool{all: len(sandboxes), alive: len(sandboxes), wake: make(chan struct{})}
	for i := range sandboxes {
		p.free = append(p.free, &sandboxes[i])
	}
	return p
}

// LocalPool is n in-process sandboxes, local-1 to local-n, each opening grade and agent over an exercise's copy.
func LocalPool(n int, grade, agent SandboxFactory) *Pool {
	sbs := make([]PoolSandbox, max(n, 1))
	for i := range sbs {
		sbs[i] = PoolSandbox{Name: fmt.Sprintf("local-%d", i+1), Grade: grade, Agent: agent}
	}
	return NewPool(sbs...)
}

// Size is how many sandboxes the pool was made with.
func (p *Pool) Size() int { return p.all }

// ErrPoolEmpty is the error of a run whose sandboxes have all failed.
var ErrPoolEmpty = errors.New("every sandbox of the pool failed")

// take waits for a free sandbox. It fails when ctx ends or when every sandbox has been drained.
func (p *Pool) take(ctx context.Context) (*PoolSandbox, error) {
	for {
		p.mu.Lock()
		if len(p.free) > 0 {
			sb := p.free[0]
			p.free = p.free[1:]
			p.mu.Unlock()
			return sb, nil
		}
		if p.alive == 0 {
			err := fmt.Errorf("%w (%s)", ErrPoolEmpty, strings.Join(p.drained, "; "))
			p.mu.Unlock()
			return nil, err
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// put gives a sandbox back.
func (p *Pool) put(sb *PoolSandbox) {
	p.mu.Lock()
	p.free = append(p.free, sb)
	p.signal()
	p.mu.Unlock()
}

// drain takes a sandbox out of the pool for good.
func (p *Pool) drain(sb *PoolSandbox, err error) {
	p.mu.Lock()
	p.alive--
	p.drained = append(p.drained, sb.Name+": "+err.Error())
	left := p.alive
	p.signal()
	p.mu.Unlock()
	if p.OnDrain != nil {
		p.OnDrain(sb.Name, err, left)
	}
}

// signal wakes every waiting take; the caller holds mu.
func (p *Pool) signal() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// maxSandboxFailures is how many sandboxes one exercise may take down before it is given up (ErrGaveUp): an
// exercise whose model's commands kill every sandbox they run in must not empty the pool.
const maxSandboxFailures = 2

// ErrGaveUp is the error of an exercise during which maxSandboxFailures sandboxes failed.
var ErrGaveUp = errors.New("given up")

// onPool runs work on free sandboxes until it ends without a SandboxFailure: a failed sandbox is drained and the
// work starts again on another, up to maxSandboxFailures times. The error is then ErrGaveUp, or the pool's being
// empty, or ctx's end; or work's own error that is not a SandboxFailure.
func onPool[T any](ctx context.Context, p *Pool, work func(sb *PoolSandbox) (T, error)) (T, error) {
	var failed []string
	for {
		sb, err := p.take(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := work(sb)
		if sf := asSandboxFailure(err); sf != nil && ctx.Err() == nil {
			p.drain(sb, sf.Err)
			failed = append(failed, sf.Error())
			if len(failed) >= maxSandboxFailures {
				var zero T
				return zero, fmt.Errorf("%w after %d sandboxes failed while they ran it (%s)", ErrGaveUp, len(failed), strings.Join(failed, "; "))
			}
			continue
		}
		p.put(sb)
		return v, err
	}
}
