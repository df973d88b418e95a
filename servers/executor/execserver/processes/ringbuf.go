package processes

import (
	"io"
	"sync"
)

// ringBuffer keeps the last bytes of a stream, up to max, and counts every byte, so a reader that asks from a byte
// offset (counted from the stream's start) gets what is still held and learns how much it missed. Its memory grows
// with what the stream printed, never past max, and only as far as the executor's pool of buffer bytes allows: a
// quiet process costs next to nothing, and all processes together stay within the pool (Config.ProcessBufferTotal),
// whatever the number of sessions. When the pool is spent a buffer keeps what it has and wraps within it, dropping
// the oldest bytes sooner.
type ringBuffer struct {
	mu      sync.Mutex
	buf     []byte // holds bytes [total-held, total), the oldest at start; grows up to max
	max     int
	pool    *bufferPool // nil: no total
	start   int
	held    int
	total   int64
	changed chan struct{} // closed and replaced on every write and at close

	// overflow, when set, gets the whole stream once it outgrows the buffer: at the first write that would drop
	// bytes, every byte so far (the buffer still holds them all), then every later write. Its Write must not fail
	// or block for long: it runs under mu.
	overflow io.Writer
	spilling bool
}

func newRingBuffer(max int, pool *bufferPool) *ringBuffer {
	return &ringBuffer{max: max, pool: pool, changed: make(chan struct{})}
}

// ringGrowMin is the least a buffer grows by, so a chatty stream does not reallocate at every line. It is also
// every buffer's floor: the first ringGrowMin bytes come outside the pool, so a process started when the pool is
// spent still shows its last lines. (At -max-sessions × -max-processes × two streams, the floors are bounded too.)
const ringGrowMin = 4 << 10

// fromPool is how many of a buffer's size bytes count against the pool: those above the floor.
func fromPool(size int) int { return max(0, size-ringGrowMin) }

// growFor makes room for n more bytes, up to max and as far as the pool allows (r.mu held). The held bytes are laid
// out from the buffer's start again.
func (r *ringBuffer) growFor(n int) {
	size := len(r.buf)
	if size >= r.max || r.held+n <= size {
		return
	}
	want := min(r.max, max(r.held+n, 2*size, ringGrowMin))
	free := max(0, min(want, ringGrowMin)-size)
	extra := free + r.pool.take(fromPool(want)-fromPool(size))
	if extra == 0 {
		return
	}
	nb := make([]byte, size+extra)
	r.copyHeld(nb)
	r.buf, r.start = nb, 0
}

// copyHeld copies the held bytes, oldest first, to the start of dst (r.mu held).
func (r *ringBuffer) copyHeld(dst []byte) {
	if r.held == 0 {
		return
	}
	k := copy(dst, r.buf[r.start:min(len(r.buf), r.start+r.held)])
	copy(dst[k:], r.buf[:r.held-k])
}

// shrink gives the pool back what the buffer holds no bytes in: an ended process keeps only its output.
func (r *ringBuffer) shrink() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) <= r.held {
		return
	}
	nb := make([]byte, r.held)
	r.copyHeld(nb)
	r.pool.give(fromPool(len(r.buf)) - fromPool(r.held))
	r.buf, r.start = nb, 0
}

// release gives the pool back the whole buffer; nothing is held after it. For a process no one can read any more.
func (r *ringBuffer) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pool.give(fromPool(len(r.buf)))
	r.buf, r.start, r.held = nil, 0, 0
}

// bufferPool is how many bytes all of an executor's ring buffers may hold together.
type bufferPool struct {
	mu          sync.Mutex
	total, used int
}

func newBufferPool(total int) *bufferPool { return &bufferPool{total: total} }

// take grants up to n bytes; a nil pool grants all.
func (p *bufferPool) take(n int) int {
	if p == nil {
		return n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n = max(0, min(n, p.total-p.used))
	p.used += n
	return n
}

func (p *bufferPool) give(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used -= n
}

// inUse is how many bytes the buffers hold now.
func (p *bufferPool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Write keeps p, dropping the oldest bytes past the size. It never fails: a process is never blocked for printing.
func (r *ringBuffer) Write(p []byte) (int, error) {
	n := len(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.growFor(n)
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
	// Only the tail of p can be held; none when the pool is spent and this buffer has nothing (the bytes are
	// counted, and dropped).
	if len(p) > size {
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
	if n == 0 {
		return data, offset, dropped
	}
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
