package execserver

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRingBuffer writes random chunks and reads from random offsets, against the whole stream kept aside: what is
// read is exactly the stream's bytes at those offsets, and what is no longer held is counted as dropped.
func TestRingBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 7, 64, 1000} {
		r := newRingBuffer(size)
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
		r := newRingBuffer(size)
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
