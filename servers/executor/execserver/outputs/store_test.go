package outputs

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memorySession is a live MCP session over in-memory transports, for the store to keep outputs for.
func memorySession(t *testing.T) *mcp.ServerSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "store-test", Version: "0"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss
}

// TestKeptStreamMemoryStaysSmall: keeping 48 MiB of output holds it on disk, not in the heap: the heap grows by
// far less than what was kept. (Measured here: well under 1 MiB for 48 MiB kept.)
func TestKeptStreamMemoryStaysSmall(t *testing.T) {
	o := New(DefaultBudget, DefaultTotal, 0, nil)
	ss := memorySession(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const threshold = 256 << 10 // the executor's default output cap, as its commands keep their streams
	k := o.Keep(SessionOwner(ss), "stdout", threshold)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 2048) // 32 KiB
	for range 48 << 20 / len(chunk) {
		k.Write(chunk)
	}
	k.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d bytes for %d kept", grown, k.Total())
	if grown > 2<<20 {
		t.Errorf("keeping 48 MiB grew the heap by %d bytes; the bytes should be on disk", grown)
	}
	if h := o.Health(); h.Bytes != 48<<20 || h.Sessions != 1 {
		t.Errorf("health %+v, want 48 MiB in one session", h)
	}
	id := strings.TrimPrefix(k.URI(), "goalbox-output://")
	p, err := o.session(ss, false).read(id, 48<<20-16, 100)
	if err != nil || string(p.data) != "0123456789abcdef" || !p.complete {
		t.Errorf("the last 16 bytes: %q, %v, complete %v", p.data, err, p.complete)
	}
}

// TestKeptStreamWhileRunning: a stream still being written (a process's) is readable as far as it goes, says it is
// not complete, and becomes complete when closed; under its threshold it costs no store at all.
func TestKeptStreamWhileRunning(t *testing.T) { synctest.Test(t, testKeptStreamWhileRunning) }

func testKeptStreamWhileRunning(t *testing.T) {
	o := New(DefaultBudget, DefaultTotal, 0, nil)
	ss := memorySession(t)
	small := o.Keep(SessionOwner(ss), "stdout", 10)
	small.Write([]byte("0123456789"))
	if small.URI() != "" || o.Health().Sessions != 0 {
		t.Fatalf("a stream within its threshold is kept: %q, %+v", small.URI(), o.Health())
	}
	k := o.Keep(SessionOwner(ss), "stderr", 0)
	k.Write([]byte("first"))
	id := strings.TrimPrefix(k.URI(), "goalbox-output://")
	s := o.session(ss, false)
	p, err := s.read(id, 0, 100)
	if err != nil || string(p.data) != "first" || p.complete {
		t.Fatalf("while running: %q %v complete %v", p.data, err, p.complete)
	}
	if _, err := s.read(id, 5, 100); err == nil || !strings.Contains(err.Error(), "still being written") {
		t.Errorf("read at the end while running: %v", err)
	}
	k.Write([]byte(" second"))
	k.Close()
	p, err = s.read(id, 5, 100)
	if err != nil || string(p.data) != " second" || !p.complete {
		t.Errorf("after close: %q %v complete %v", p.data, err, p.complete)
	}
	if link := k.Link(); link == nil || link.URI != k.URI() || *link.Size != 12 {
		t.Errorf("link %+v", link)
	}

	ss.Close()
	synctest.Wait() // the store drops the session's outputs when its end reaches it
	if h := o.Health(); h.Sessions != 0 || h.Bytes != 0 || k.URI() != "" {
		t.Errorf("after the session ended: %+v, URI %q", h, k.URI())
	}
	k.Write([]byte("after the end")) // dropped, no panic
	if _, err := s.read(id, 0, 10); !errors.Is(err, errNoSuchOutput) {
		t.Errorf("read after the session ended: %v", err)
	}
}

// TestTextPrefix: a page is text up to a character split at its end; bytes that are not UTF-8 make it a blob.
func TestTextPrefix(t *testing.T) {
	for _, c := range []struct {
		data  string
		atEnd bool
		want  int
	}{
		{"abc", false, 3},
		{"ab\xc3", false, 2},         // é split after its first byte
		{"ab\xe2\x9c", false, 2},     // ✓ split after two bytes
		{"ab\xc3", true, 0},          // the stream ends there: not text
		{"a\xffb", false, 0},         // not UTF-8
		{"\xc3", false, 0},           // nothing left once cut
		{"\xa9bc", false, 0},         // starts inside a character
		{"ok\xf0\x9f\x98", false, 2}, // an emoji split after three bytes
	} {
		if got := textPrefix([]byte(c.data), c.atEnd); got != c.want {
			t.Errorf("textPrefix(%q, %v) = %d, want %d", c.data, c.atEnd, got, c.want)
		}
	}
}

// TestOutputTotalAcrossSessions: all sessions together keep at most the executor's total. A session that needs room
// while it is full evicts its own oldest outputs, never another session's, and an output that finds no room at all
// is not kept, with an error that names -output-total; the total frees when a session ends. The control, a total
// as large as two budgets, evicts only for the session's own budget.
func TestOutputTotalAcrossSessions(t *testing.T) { synctest.Test(t, testOutputTotalAcrossSessions) }

func testOutputTotalAcrossSessions(t *testing.T) {
	const block = outputBlock
	blocks := func(n int) []byte { return bytes.Repeat([]byte("x"), n*block) }
	idOf := func(k *Stream) string { return strings.TrimPrefix(k.URI(), "goalbox-output://") }
	for _, control := range []bool{false, true} {
		total := int64(6 * block)
		if control {
			total = 8 * block
		}
		o := New(4*block, total, 0, nil)
		a, b := memorySession(t), memorySession(t)
		keep := func(ss *mcp.ServerSession, n int) (*Stream, string) {
			k := o.Keep(SessionOwner(ss), "stdout", 0)
			k.Write(blocks(n))
			k.Close()
			return k, idOf(k)
		}
		_, a1 := keep(a, 4) // A at its budget: 4 of 6
		_, b1 := keep(b, 2) // the total is full
		_, b2 := keep(b, 1) // B evicts its own b1, not A's a1
		k3, _ := keep(b, 3) // B evicts b2, then has no room left for b3 itself
		sa, sb := o.session(a, false), o.session(b, false)
		if _, err := sa.read(a1, 0, 1); err != nil {
			t.Fatalf("control %v: A's output was evicted by B: %v", control, err)
		}
		_, err1 := sb.read(b1, 0, 1)
		_, err2 := sb.read(b2, 0, 1)
		if control {
			// B's own budget (4 blocks) still evicts b1 for b3, but the total takes everything else.
			if err1 == nil || !strings.Contains(err1.Error(), "-output-budget") || err2 != nil || k3.URI() == "" {
				t.Fatalf("control: a total of two budgets: b1 %v (want evicted by the budget), b2 %v, b3 %q", err1, err2, k3.URI())
			}
			continue
		}
		if err1 == nil || !strings.Contains(err1.Error(), "-output-total") || !strings.Contains(err1.Error(), "its own oldest first") {
			t.Errorf("B's oldest: %v, want evicted for the total", err1)
		}
		if err2 == nil || !strings.Contains(err2.Error(), "was evicted") {
			t.Errorf("B's second: %v, want evicted", err2)
		}
		if k3.URI() != "" {
			t.Errorf("b3 kept with no room in the total")
		}
		if h := o.Health(); h.Bytes > total || h.Total != total {
			t.Errorf("health %+v: over the total %d", h, total)
		}

		a.Close() // A ends: its 4 blocks go back to the total
		synctest.Wait()
		if k4, id := keep(b, 3); k4.URI() == "" {
			t.Errorf("B could not keep 3 blocks once A ended: health %+v", o.Health())
		} else if _, err := sb.read(id, 3*block-1, 1); err != nil {
			t.Errorf("B's output after A ended: %v", err)
		}
	}
}
