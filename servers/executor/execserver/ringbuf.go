package execserver

import (
	"io"
	"sync"
)

// ringBuffer keeps the last size bytes of a stream and counts every byte, so a reader that asks from a byte offset
// (counted from the stream's start) gets what is still held and learns how much it missed.
type ringBuffer struct {
	mu      sync.Mutex
	buf     []byte // capacity size; holds bytes [total-len(held), total)
	start   int    // where the oldest held byte is in buf
	held    int
	total   int64
	changed chan struct{} // closed and replaced on every write and at close

	// overflow, when set, gets the whole stream once it outgrows the buffer: at the first write that would drop
	// bytes, every byte so far (the buffer still holds them all), then every later write. Its Write must not fail
	// or block for long: it runs under mu.
	overflow io.Writer
	spilling bool
}

func newRingBuffer(size int) *ringBuffer {
	return &ringBuffer{buf: make([]byte, size), changed: make(chan struct{})}
}

// Write keeps p, dropping the oldest bytes past the size. It never fails: a process is never blocked for printing.
func (r *ringBuffer) Write(p []byte) (int, error) {
	n := len(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	size := len(r.buf)
	if r.overflow != nil {
		if !r.spilling && r.total+int64(n) > int64(size) {
			// Nothing was dropped yet, so the oldest byte is at buf[0] and the buffer holds the stream from its start.
			r.spilling = true
			_, _ = r.overflow.Write(r.buf[:r.held])
		}
		if r.spilling {
			_, _ = r.overflow.Write(p)
		}
	}
	r.total += int64(n)
	if len(p) > size { // only the tail of p can be held
		p = p[len(p)-size:]
	}
	for len(p) > 0 {
		// Written in order from just after the newest byte, so what is overwritten is always the oldest.
		end := (r.start + r.held) % size
		k := copy(r.buf[end:], p)
		p = p[k:]
		if over := r.held + k - size; over > 0 {
			r.start, r.held = (r.start+over)%size, size
		} else {
			r.held += k
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return n, nil
}

// readFrom returns what is held from offset on (at most max bytes), the offset after it, and how many bytes after
// offset were dropped before it could be read.
func (r *ringBuffer) readFrom(offset int64, max int) (data []byte, next, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := r.total - int64(r.held)
	if offset < oldest {
		dropped, offset = oldest-offset, oldest
	}
	if offset > r.total {
		offset = r.total
	}
	n := int(min(r.total-offset, int64(max)))
	data = make([]byte, n)
	size := len(r.buf)
	from := (r.start + int(offset-oldest)) % size
	k := copy(data, r.buf[from:min(size, from+n)])
	copy(data[k:], r.buf[:n-k])
	return data, offset + int64(n), dropped
}

// wait returns a channel closed at the next write.
func (r *ringBuffer) wait() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// length is how many bytes were ever written.
func (r *ringBuffer) length() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
