package pathguard

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks put the guard side by side with the plain os call on the same file in the same run; the docs report
// the ratio.
//
//	go test -run '^$' -bench . -benchmem -count 5 ./pathguard/

func benchWorkspace(b *testing.B) (*Guard, string) {
	b.Helper()
	dir := b.TempDir()
	g, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	return g, g.Dir()
}

func BenchmarkReadFile16K(b *testing.B) {
	for _, name := range []string{"file.txt", "a/b/c/d/file.txt"} {
		g, dir := benchWorkspace(b)
		data := bytes.Repeat([]byte("0123456789abcdef"), 1024)
		if _, _, err := g.WriteFile(name, data); err != nil {
			b.Fatal(err)
		}
		full := filepath.Join(dir, name)
		depth := "flat"
		if name != "file.txt" {
			depth = "depth5"
		}
		b.Run(depth+"/os.ReadFile", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := os.ReadFile(full); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(depth+"/pathguard", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, _, err := g.ReadFile(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteFile4K(b *testing.B) {
	g, dir := benchWorkspace(b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	full := filepath.Join(dir, "file.txt")
	tempRename := func(sync bool) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
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
	}
	b.Run("os.WriteFile", func(b *testing.B) {
		for b.Loop() {
			if err := os.WriteFile(full, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("temp+rename", tempRename(false))
	b.Run("temp+fsync+rename", tempRename(true))
	b.Run("pathguard", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := g.WriteFile("file.txt", data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkStat(b *testing.B) {
	g, dir := benchWorkspace(b)
	g.WriteFile("a/b/file.txt", nil)
	full := filepath.Join(dir, "a/b/file.txt")
	b.Run("os.Stat", func(b *testing.B) {
		for b.Loop() {
			os.Stat(full)
		}
	})
	b.Run("pathguard", func(b *testing.B) {
		for b.Loop() {
			g.Stat("a/b/file.txt")
		}
	})
}
