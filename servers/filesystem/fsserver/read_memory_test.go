package fsserver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
)

// hugeSize is the size of the sparse files of the memory tests: 768 MiB, as in the long-line attack.
const hugeSize = 768 << 20

// sparseFile makes a file of size bytes that starts with head and ends with tail, with a hole (zero bytes, no disk
// blocks) between: a huge file in no time and no space.
func sparseFile(t *testing.T, p, head, tail string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
}

// allocated runs f and returns how many bytes of heap it allocated in all (runtime.MemStats.TotalAlloc, which only
// grows, so a collection in between cannot hide a peak).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadLongLineMemory is the long-line read attack: a 768 MiB file with no newline, read at offset 1, limit 1.
// The read must stream: its memory is bounded by the content cap (32 KiB), not by the length of the line it cuts,
// nor by a long line before offset that it skips. A read that pieces such a line together whole allocates about
// 1.5 GB here.
func TestReadLongLineMemory(t *testing.T) {
	ws := t.TempDir()
	head := strings.Repeat("a", 1<<20) // text where the read looks (the sniffed head, the returned content); zeros after
	sparseFile(t, filepath.Join(ws, "one-line.txt"), head, "z", hugeSize)
	sparseFile(t, filepath.Join(ws, "two-lines.txt"), head, "\nsecond\n", hugeSize)
	g, err := pathguard.Open(ws, pathguard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := &Filesystem{g: g, opts: Options{}.withDefaults()}
	// The content, its copy into the result, the 64 KiB read buffer and buffer growth: well under this.
	const bound = 4*DefaultMaxReadContentBytes + 256<<10

	var out readOutput
	var rerr error
	n := allocated(func() {
		out, rerr = readText(s, protocol.ReadFileInput{Path: "one-line.txt", Offset: 1, Limit: 1})
	})
	if rerr != nil {
		t.Fatal(rerr)
	}
	t.Logf("read 1 line of a %d-byte line: %d bytes allocated", hugeSize, n)
	if n > bound {
		t.Errorf("reading one cut line of a %d MiB file allocated %d bytes; the bound is %d", hugeSize>>20, n, bound)
	}
	if len(out.Content) != DefaultMaxReadContentBytes || strings.Trim(out.Content, "a") != "" || out.StartLine != 1 ||
		out.EndLine != 1 || out.TotalLines != 1 || !out.Truncated {
		t.Errorf("got %d bytes of content, lines %d-%d of %d, truncated %v", len(out.Content), out.StartLine, out.EndLine, out.TotalLines, out.Truncated)
	}
	if !strings.Contains(out.Note, "line 1 is 805306368 bytes long") || !strings.Contains(out.Note, fmt.Sprintf("first %d bytes", DefaultMaxReadContentBytes)) {
		t.Errorf("note %q should say how long the line is and how much is shown", out.Note)
	}

	// The huge line is before offset: skipped piece by piece, never held.
	n = allocated(func() {
		out, rerr = readText(s, protocol.ReadFileInput{Path: "two-lines.txt", Offset: 2})
	})
	if rerr != nil {
		t.Fatal(rerr)
	}
	t.Logf("read the line after a %d-byte line: %d bytes allocated", hugeSize, n)
	if n > bound {
		t.Errorf("skipping a %d MiB line allocated %d bytes; the bound is %d", hugeSize>>20, n, bound)
	}
	if out.Content != "second\n" || out.StartLine != 2 || out.EndLine != 2 || out.TotalLines != 2 || out.Truncated || out.Note != "" {
		t.Errorf("got %+v", out)
	}
}
