package wsguard

// What applying a command's layer costs per file: an upper layer of 10,000 small files in one folder and one of a
// single 500 MB file, each applied to an empty workspace by the guard with the default protected paths (what every
// command in the namespace mode pays when it ends), beside the anchor, a plain copy of the same tree with os calls
// (open, copy, close; no protection, no fsync), in the same iterations. Then the same layer applied again, what
// Watch pays every ApplyEvery while a command runs: "compare" a second later (each file compared by content with the
// workspace's, and found the same), "unchanged" once more (each file skipped by its stat stamps):
//
//	cd servers/executor && go test ./execserver/wsguard -run '^$' -bench ApplyLayer -benchtime 5x -count 1
//
// Each is reported as wall time per file and as CPU time per file (user and system, getrusage of the process): on a
// machine whose disk others share, the CPU time is the steadier figure of what the guard itself costs. The layers
// are made in /dev/shm when it is a tmpfs (the commands' layers are one), else in the test's temp folder.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
)

func BenchmarkApplyLayer(b *testing.B) {
	for _, c := range []struct {
		name  string
		files int
		size  int
	}{{"10000-small-files", 10_000, 12}, {"one-500MB-file", 1, 500_000_000}} {
		b.Run(c.name, func(b *testing.B) {
			upper := layerOf(b, c.files, c.size)
			prot, err := pathguard.NewProtection(nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			var guarded, compare, unchanged, anchor time.Duration
			var guardedCPU, compareCPU, unchangedCPU, anchorCPU time.Duration
			n := 0
			for b.Loop() {
				n++
				ws, plain := b.TempDir(), b.TempDir()
				g, err := New(ws, prot)
				if err != nil {
					b.Fatal(err)
				}
				s := g.Session()
				timed(&guarded, &guardedCPU, func() {
					if r := s.Apply(upper); len(r) != 0 {
						b.Fatalf("refused: %v", r)
					}
				})
				timed(&anchor, &anchorCPU, func() { copyTree(b, upper, plain) })
				time.Sleep(settleTime) // what the workspace's files were written with settles
				for _, d := range [][2]*time.Duration{{&compare, &compareCPU}, {&unchanged, &unchangedCPU}} {
					timed(d[0], d[1], func() {
						if r := s.Apply(upper); len(r) != 0 {
							b.Fatalf("refused again: %v", r)
						}
					})
				}
				g.Close()
				b.StopTimer()
				os.RemoveAll(ws)
				os.RemoveAll(plain)
				b.StartTimer()
			}
			per := float64(n * c.files)
			b.ReportMetric(float64(guarded.Microseconds())/per, "apply-µs/file")
			b.ReportMetric(float64(compare.Microseconds())/per, "compare-µs/file")
			b.ReportMetric(float64(unchanged.Microseconds())/per, "unchanged-µs/file")
			b.ReportMetric(float64(anchor.Microseconds())/per, "copy-µs/file")
			b.ReportMetric(float64(guarded)/float64(anchor), "apply/copy")
			b.ReportMetric(float64(guardedCPU.Microseconds())/per, "apply-cpu-µs/file")
			b.ReportMetric(float64(compareCPU.Microseconds())/per, "compare-cpu-µs/file")
			b.ReportMetric(float64(unchangedCPU.Microseconds())/per, "unchanged-cpu-µs/file")
			b.ReportMetric(float64(anchorCPU.Microseconds())/per, "copy-cpu-µs/file")
		})
	}
}

// timed adds f's wall time to wall and the process's CPU time over it to cpu.
func timed(wall, cpu *time.Duration, f func()) {
	c0, t0 := cpuTime(), time.Now()
	f()
	*wall += time.Since(t0)
	*cpu += cpuTime() - c0
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// layerOf writes an upper layer of files files of size bytes each under d/ (one file: d/big), and returns its folder.
func layerOf(b *testing.B, files, size int) string {
	b.Helper()
	base := b.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "wsguard-bench-"); err == nil {
			base = d
			b.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	if err := os.Mkdir(filepath.Join(base, "d"), 0o755); err != nil {
		b.Fatal(err)
	}
	content := make([]byte, size)
	for i := range content {
		content[i] = byte('a' + i%26)
	}
	for i := range files {
		name := fmt.Sprint("f", i)
		if files == 1 {
			name = "big"
		}
		if err := os.WriteFile(filepath.Join(base, "d", name), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return base
}

// copyTree is the anchor: the layer's one folder copied to dst with plain os calls.
func copyTree(b *testing.B, upper, dst string) {
	ents, err := os.ReadDir(filepath.Join(upper, "d"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dst, "d"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		src, err := os.Open(filepath.Join(upper, "d", e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.OpenFile(filepath.Join(dst, "d", e.Name()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(out, src); err != nil {
			b.Fatal(err)
		}
		src.Close()
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
