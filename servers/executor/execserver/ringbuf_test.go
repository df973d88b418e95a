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
