// Package readypool keeps sandboxes started ahead of need. Starting one is the slow part of a command in both modes (a
// re-exec of the server binary in the fallback; namespaces, a procfs, Landlock and seccomp in the namespace mode),
// while a started sandbox that waits for its command costs nothing. So size of them are kept ready, and each one
// taken is replaced in the background. Every sandbox serves exactly one command: nothing is reused.
//
// The local backend keeps its namespace mode's prepared sandboxes and its fallback's child inits in one.
package readypool

import "sync"

// Pool holds up to size sandboxes of type T, ready for a command.
type Pool[T any] struct {
	size    int
	spawn   func() (T, error)
	discard func(T) // ends a sandbox that never got a command

	mu      sync.Mutex
	ready   []T
	filling int // spawns under way in the background
	closed  bool
	// changed is closed and replaced whenever ready grows or the pool closes (for WaitReady).
	changed chan struct{}
}

// New starts filling a pool of size sandboxes made by spawn; discard ends one that never got a command.
func New[T any](size int, spawn func() (T, error), discard func(T)) *Pool[T] {
	p := &Pool[T]{size: size, spawn: spawn, discard: discard, changed: make(chan struct{})}
	p.Refill()
	return p
}

// Take returns a ready sandbox, or starts one now when none is. Its replacement is started by Refill, which the
// caller calls when the command has ended: made while the command runs, it would take CPU from it.
func (p *Pool[T]) Take() (T, error) {
	p.mu.Lock()
	n := len(p.ready)
	var s T
	var ok bool
	if n > 0 {
		s, p.ready, ok = p.ready[n-1], p.ready[:n-1], true
	}
	p.mu.Unlock()
	if ok {
		return s, nil
	}
	return p.spawn()
}

// Refill starts as many background spawns as the pool is short.
func (p *Pool[T]) Refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; !p.closed && len(p.ready)+p.filling < p.size; p.filling++ {
		go p.fillOne()
	}
}

func (p *Pool[T]) fillOne() {
	s, err := p.spawn()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.filling--
	if err != nil {
		return // the next take spawns in the foreground and reports the error
	}
	if p.closed || len(p.ready) >= p.size {
		go p.discard(s)
		return
	}
	p.ready = append(p.ready, s)
	close(p.changed)
	p.changed = make(chan struct{})
}

// WaitReady waits until the pool is full or closed (benchmarks use it to measure a command that finds its sandbox
// ready, as an agent's commands, seconds apart, do).
func (p *Pool[T]) WaitReady() {
	for {
		p.mu.Lock()
		full, ch := p.closed || len(p.ready) >= p.size, p.changed
		p.mu.Unlock()
		if full {
			return
		}
		<-ch
	}
}

// Close ends every ready sandbox; spawns still under way end theirs when they finish.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	ready := p.ready
	p.ready, p.closed = nil, true
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	for _, s := range ready {
		p.discard(s)
	}
}
