package processes

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRingBuffer writes random chunks and reads from random offsets, against the whole stream kept aside: what is
// read is exactly the stream's bytes at those offsets, and what is no longer held is counted as dropped.
func TestRingBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 7, 64, 1000} {
		r := newRingBuffer(size, nil)
		var all []byte
		for range 500 {
			chunk := make([]byte, rng.IntN(3*size))
			for i := range chunk {
				chunk[i] = byte(rng.IntN(256))
			}
			if n, err := r.Write(chunk); n != len(chunk) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			all = append(all, chunk...)
			off := rng.Int64N(int64(len(all)) + 2)
			most := rng.IntN(2*size + 1)
			data, next, dropped := r.readFrom(off, most)
			oldest := max(0, int64(len(all)-size))
			from := min(max(off, oldest), int64(len(all)))
			wantDropped := max(0, oldest-off)
			want := all[from:min(int64(len(all)), from+int64(most))]
			if !bytes.Equal(data, want) || next != from+int64(len(want)) || dropped != wantDropped {
				t.Fatalf("size %d, %d written, read from %d (at most %d): got %d bytes, next %d, dropped %d; want %d bytes, next %d, dropped %d",
					size, len(all), off, most, len(data), next, dropped, len(want), from+int64(len(want)), wantDropped)
			}
		}
		if r.length() != int64(len(all)) {
			t.Errorf("length %d, want %d", r.length(), len(all))
		}
	}
}

// TestRingBufferOverflow: a buffer with an overflow writer gives it nothing while it holds the whole stream, and the
// whole stream, from its first byte, once a write would drop one; a write that ends exactly at the size drops none.
func TestRingBufferOverflow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 7, 64, 4096} {
		r := newRingBuffer(size, nil)
		var spilled bytes.Buffer
		r.overflow = &spilled
		var all []byte
		write := func(n int) {
			chunk := make([]byte, n)
			for i := range chunk {
				chunk[i] = byte(rng.IntN(256))
			}
			r.Write(chunk)
			all = append(all, chunk...)
		}
		for len(all) < size { // fill it exactly, in chunks: nothing dropped, nothing spilled
			write(min(rng.IntN(size)+1, size-len(all)))
		}
		if spilled.Len() != 0 {
			t.Fatalf("size %d: %d bytes spilled while the buffer held the whole stream", size, spilled.Len())
		}
		if _, _, dropped := r.readFrom(0, size); dropped != 0 {
			t.Fatalf("size %d: %d dropped at exactly the size", size, dropped)
		}
		for range 50 {
			write(rng.IntN(3 * size))
			if !bytes.Equal(spilled.Bytes(), all) {
				t.Fatalf("size %d: spilled %d bytes, want the whole stream, %d bytes", size, spilled.Len(), len(all))
			}
		}
		if _, _, dropped := r.readFrom(0, size); dropped == 0 && len(all) > size {
			t.Fatalf("size %d: control: a stream of %d bytes dropped nothing", size, len(all))
		}
	}
}

// TestRingBuffersWithinTheirPool: a buffer costs what its stream printed, not its maximum; all buffers together stay
// within their pool, each still holding its stream's newest bytes and counting what it dropped; an ended process's
// buffer gives back what it holds no bytes in, and a forgotten one everything. Positive control: without a pool
// every buffer holds its whole maximum.
func TestRingBuffersWithinTheirPool(t *testing.T) {
	const size, rings = 1 << 20, 10
	quiet := newRingBuffer(size, nil)
	_, _ = quiet.Write([]byte("ten bytes\n"))
	if len(quiet.buf) > ringGrowMin {
		t.Errorf("a quiet buffer holds %d bytes of memory for 10 of output", len(quiet.buf))
	}

	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	fill := func(pool *bufferPool) []*ringBuffer {
		var rs []*ringBuffer
		for i := range rings {
			r := newRingBuffer(size, pool)
			for range 2 * size / len(chunk) {
				_, _ = r.Write(chunk)
			}
			_, _ = r.Write([]byte(fmt.Sprintf("end of %d\n", i)))
			rs = append(rs, r)
		}
		return rs
	}
	for i, r := range fill(nil) {
		if len(r.buf) != size {
			t.Errorf("positive control, no pool: buffer %d holds %d bytes, want %d", i, len(r.buf), size)
		}
	}
	pool := newBufferPool(2 * size)
	rs := fill(pool)
	if used := pool.inUse(); used > 2*size {
		t.Errorf("the buffers hold %d bytes together, past their pool of %d", used, 2*size)
	}
	for i, r := range rs {
		tail := fmt.Sprintf("end of %d\n", i)
		data, next, dropped := r.readFrom(0, size)
		if next != r.length() || dropped == 0 || (len(r.buf) > 0 && !bytes.HasSuffix(data, []byte(tail))) {
			t.Errorf("buffer %d: %d bytes ending %q, next %d of %d, %d dropped", i, len(data), data[max(0, len(data)-12):], next, r.length(), dropped)
		}
	}
	late := newRingBuffer(size, pool)
	for i := range 2000 {
		_, _ = late.Write([]byte(fmt.Sprintf("line %d\n", i)))
	}
	if data, _, dropped := late.readFrom(0, size); len(late.buf) != ringGrowMin || dropped == 0 || !bytes.HasSuffix(data, []byte("line 1999\n")) {
		t.Errorf("a buffer made when the pool is spent holds %d bytes (%d dropped), ending %q; want its floor of %d with the last line",
			len(late.buf), dropped, data[max(0, len(data)-12):], ringGrowMin)
	}
	late.release()
	for _, r := range rs {
		r.release()
	}
	if used := pool.inUse(); used != 0 {
		t.Errorf("released buffers still hold %d bytes of the pool", used)
	}
	small := newRingBuffer(size, pool)
	_, _ = small.Write(bytes.Repeat([]byte("y"), 5000))
	small.shrink()
	if len(small.buf) != 5000 || pool.inUse() != 5000-ringGrowMin {
		t.Errorf("shrunk: %d bytes held, %d of the pool used; want 5000 and %d", len(small.buf), pool.inUse(), 5000-ringGrowMin)
	}
	if data, _, _ := small.readFrom(0, 10000); len(data) != 5000 {
		t.Errorf("a shrunk buffer reads back %d bytes, want 5000", len(data))
	}
}
