package execserver

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCappedWriterKeepsHeadAndTail writes random chunks and compares with the whole output.
func TestCappedWriterKeepsHeadAndTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, capacity := range []int{1024, 1025, 4096, 65536} {
		for _, total := range []int{0, 1, 100, capacity - 1, capacity, capacity + 1, 3 * capacity, 50 * capacity} {
			var all bytes.Buffer
			w := newCappedWriter(capacity)
			for all.Len() < total {
				n := min(total-all.Len(), 1+r.IntN(2*capacity))
				chunk := make([]byte, n)
				for i := range chunk {
					chunk[i] = 'a' + byte(r.IntN(26))
				}
				all.Write(chunk)
				if k, err := w.Write(chunk); k != n || err != nil {
					t.Fatalf("Write = %d, %v", k, err)
				}
			}
			got, cut := w.String()
			if w.Total() != int64(total) {
				t.Fatalf("Total %d, want %d", w.Total(), total)
			}
			if total <= capacity {
				if cut || got != all.String() {
					t.Errorf("cap %d, %d bytes: kept %d bytes, cut %v; want all", capacity, total, len(got), cut)
				}
				continue
			}
			marker := fmt.Sprintf("\n[... %d bytes left out ...]\n", total-capacity)
			head, tail, ok := strings.Cut(got, marker)
			if !cut || !ok {
				t.Fatalf("cap %d, %d bytes: no marker %q in output", capacity, total, marker)
			}
			if head != all.String()[:capacity/2] || tail != all.String()[total-(capacity-capacity/2):] {
				t.Errorf("cap %d, %d bytes: head or tail wrong", capacity, total)
			}
		}
	}
}

func TestCappedWriterCutsOnRuneBoundaries(t *testing.T) {
	w := newCappedWriter(1024)
	s := strings.Repeat("é€😀", 1000) // 2-, 3- and 4-byte runes
	w.Write([]byte(s))
	got, cut := w.String()
	if !cut || !utf8.ValidString(got) {
		t.Fatalf("cut %v, valid UTF-8 %v", cut, utf8.ValidString(got))
	}
	head, tail, _ := strings.Cut(got, "\n[... ")
	_, tail, _ = strings.Cut(tail, "...]\n")
	var left int
	fmt.Sscanf(got[len(head)+len("\n[... "):], "%d", &left)
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) || len(head)+left+len(tail) != len(s) {
		t.Errorf("head %d + left %d + tail %d != %d", len(head), left, len(tail), len(s))
	}
}

func TestHideHostPaths(t *testing.T) {
	got := hideHostPaths(`start: mkdir /sys/fs/cgroup/pids/x: permission denied; chdir /ws/a/b: no such file; "/etc/passwd"`, "/ws")
	want := `start: mkdir <host path>: permission denied; chdir /ws/a/b: no such file; "<host path>"`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
