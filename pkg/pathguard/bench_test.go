package pathguard

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Each benchmark runs the guard and its anchor (the plain os call on the same file) in alternating blocks inside
// one loop, so both see the same machine load, and reports both times and their ratio:
//
//	go test -run '^$' -bench . -count 5 ./pathguard/
//
// ns/op is the guard's time; anchor-ns/op the anchor's; ratio = guard / anchor.

// paired times anchor and guarded in alternating blocks of block calls, swapping which goes first each time.
func paired(b *testing.B, block int, anchor, guarded func(b *testing.B)) {
	b.Helper()
	var ta, tg time.Duration
	calls := 0
	run := func(f func(*testing.B)) time.Duration {
		t0 := time.Now()
		for range block {
			f(b)
		}
		return time.Since(t0)
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			ta += run(anchor)
			tg += run(guarded)
		} else {
			tg += run(guarded)
			ta += run(anchor)
		}
		calls += block
	}
	b.ReportMetric(float64(tg.Nanoseconds())/float64(calls), "ns/op")
	b.ReportMetric(float64(ta.Nanoseconds())/float64(calls), "anchor-ns/op")
	b.ReportMetric(float64(tg)/float64(ta), "ratio")
}

func benchWorkspace(b *testing.B) (*Guard, string) {
	b.Helper()
	g, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g, g.Dir()
}

// BenchmarkReadFile16K: Guard.ReadFile against os.ReadFile of the same 16 KiB file, at the top of the workspace
// and five folders down (os.Root opens each folder on the way).
func BenchmarkReadFile16K(b *testing.B) {
	for _, c := range []struct{ name, path string }{{"flat", "file.txt"}, {"depth5", "a/b/c/d/file.txt"}} {
		b.Run(c.name, func(b *testing.B) {
			g, dir := benchWorkspace(b)
			data := bytes.Repeat([]byte("0123456789abcdef"), 1024)
			if _, _, err := g.WriteFile(c.path, data); err != nil {
				b.Fatal(err)
			}
			full := filepath.Join(dir, c.path)
			paired(b, 64, func(b *testing.B) {
				if _, err := os.ReadFile(full); err != nil {
					b.Fatal(err)
				}
			}, func(b *testing.B) {
				if _, _, err := g.ReadFile(c.path); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkWriteFile4K: Guard.WriteFile (temp file, fsync, rename) against a plain os.WriteFile (not atomic),
// a plain temp+rename (atomic, not durable) and temp+fsync+rename (what the guard does, without the guard).
func BenchmarkWriteFile4K(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	tempRename := func(dir, full string, sync bool) func(b *testing.B) {
		return func(b *testing.B) {
			f, err := os.CreateTemp(dir, "tmp-")
			if err != nil {
				b.Fatal(err)
			}
			f.Write(data)
			if sync {
				f.Sync()
			}
			f.Close()
			if err := os.Rename(f.Name(), full); err != nil {
				b.Fatal(err)
			}
		}
	}
	anchors := []struct {
		name   string
		anchor func(dir, full string) func(*testing.B)
	}{
		{"vs-os.WriteFile", func(dir, full string) func(*testing.B) {
			return func(b *testing.B) {
				if err := os.WriteFile(full, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"vs-temp+rename", func(dir, full string) func(*testing.B) { return tempRename(dir, full, false) }},
		{"vs-temp+fsync+rename", func(dir, full string) func(*testing.B) { return tempRename(dir, full, true) }},
	}
	for _, a := range anchors {
		b.Run(a.name, func(b *testing.B) {
			g, dir := benchWorkspace(b)
			g.WriteFile("guarded.txt", data)
			paired(b, 8, a.anchor(dir, filepath.Join(dir, "plain.txt")), func(b *testing.B) {
				if _, _, err := g.WriteFile("guarded.txt", data); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkStat: Guard.Stat against os.Stat, three names deep.
func BenchmarkStat(b *testing.B) {
	g, dir := benchWorkspace(b)
	g.WriteFile("a/b/file.txt", nil)
	full := filepath.Join(dir, "a/b/file.txt")
	paired(b, 64, func(b *testing.B) {
		if _, err := os.Stat(full); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B) {
		if _, _, err := g.Stat("a/b/file.txt"); err != nil {
			b.Fatal(err)
		}
	})
}
