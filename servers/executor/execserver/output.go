package execserver

import (
	"sync"
	"sync/atomic"

	"github.com/goalbox/goalbox/pkg/headtail"
	"github.com/goalbox/goalbox/servers/executor/execserver/outputs"
)

// Output caps. The cap is per stream; the server never holds more than the cap of either stream in memory, however
// much a command prints. The default fits what the coding agents people use keep of one tool result, measured by
// tests/agents (docs/clients.md#what-each-client-keeps): Claude Code saves a result over its token limit (about
// 100,000 characters) to a file and shows its model a note without the facts, Gemini CLI keeps about 45 KB,
// opencode 50 KB, Codex about 12 KB as head and tail. Two full streams of 16 KiB come to about 40 KB of JSON,
// facts first; the whole output stays readable as a kept output.
const (
	DefaultOutputCap = 16 << 10
	MaxOutputCap     = 1 << 20
	minOutputCap     = 1 << 10
)

// The full outputs' budgets (Config.OutputBudget, Config.OutputTotal): the store's (package outputs) defaults.
const (
	DefaultOutputBudget = outputs.DefaultBudget
	DefaultOutputTotal  = outputs.DefaultTotal
	// minOutputBudget keeps at least one output of the largest cap (MaxOutputCap) and then some.
	minOutputBudget = 2 * MaxOutputCap
)

// cappedWriter keeps the first and the last bytes a stream wrote, up to cap in all, and counts the rest. Memory stays
// at cap bytes for gigabytes of output: the head is filled once, the tail is a ring buffer.
//
// Write is called by one goroutine (os/exec copies each pipe on its own); Total may be read by another (progress
// notifications), so it is atomic; String is called after the writer is done.
//
// Buffers grow with the output (most commands print little), up to headCap and tailCap.
type cappedWriter struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte // the first headCap bytes
	ring    []byte // the last tailCap bytes, a ring buffer once full
	start   int    // index of the oldest byte in ring when full
	full    bool
	total   atomic.Int64
}

func newCappedWriter(cap int) *cappedWriter {
	return &cappedWriter{headCap: cap / 2, tailCap: cap - cap/2}
}

// Write never fails: output past the cap is counted and dropped, so a chatty command is never blocked or killed for
// talking.
func (w *cappedWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total.Add(int64(n))
	if room := w.headCap - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	rc := w.tailCap
	if len(p) >= rc { // only the last rc bytes can survive
		if w.ring == nil {
			w.ring = make([]byte, 0, rc)
		}
		w.ring = append(w.ring[:0], p[len(p)-rc:]...)
		w.start, w.full = 0, true
		return n, nil
	}
	if !w.full {
		room := rc - len(w.ring)
		k := min(room, len(p))
		w.ring = append(w.ring, p[:k]...)
		p = p[k:]
		if len(w.ring) == rc {
			w.full = true
		}
	}
	for len(p) > 0 { // overwrite the oldest bytes
		k := copy(w.ring[w.start:], p)
		p = p[k:]
		w.start = (w.start + k) % rc
	}
	return n, nil
}

// Total is how many bytes were written so far.
func (w *cappedWriter) Total() int64 { return w.total.Load() }

// String is the kept output and whether some was left out. When it was, the head and the tail are joined by
// headtail's marker, which says how many bytes are missing; no UTF-8 character is split.
func (w *cappedWriter) String() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tail := w.ring
	if w.full && w.start > 0 {
		tail = append(append(make([]byte, 0, len(w.ring)), w.ring[w.start:]...), w.ring[:w.start]...)
	}
	kept := int64(len(w.head) + len(tail))
	omitted := w.total.Load() - kept
	if omitted <= 0 {
		return string(w.head) + string(tail), false
	}
	return headtail.Join(string(w.head), string(tail), omitted), true
}
