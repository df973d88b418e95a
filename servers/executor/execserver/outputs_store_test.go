package execserver

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

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
	o := newOutputs(DefaultOutputBudget, nil)
	ss := memorySession(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	k := o.Keep(ss, "stdout", DefaultOutputCap)
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
	if h := o.health(); h.Bytes != 48<<20 || h.Sessions != 1 {
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
func TestKeptStreamWhileRunning(t *testing.T) {
	o := newOutputs(DefaultOutputBudget, nil)
	ss := memorySession(t)
	small := o.Keep(ss, "stdout", 10)
	small.Write([]byte("0123456789"))
	if small.URI() != "" || o.health().Sessions != 0 {
		t.Fatalf("a stream within its threshold is kept: %q, %+v", small.URI(), o.health())
	}
	k := o.Keep(ss, "stderr", 0)
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
	deadline := time.Now().Add(5 * time.Second)
	for o.health().Sessions != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h := o.health(); h.Sessions != 0 || h.Bytes != 0 || k.URI() != "" {
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
