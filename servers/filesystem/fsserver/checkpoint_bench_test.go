package fsserver

// BenchmarkCheckpointVsGit times a checkpoint against `git add -A && git commit` on the same trees, side by side in
// one run: a small project (60 files, about 300 KB) and a large one (10,000 files, 200 MB), each taken first (an
// empty store, a fresh repository) and again after one file changed (what a checkpoint before each verify costs).
// The trees are text (lines of words from a seeded generator), so git's compression does what it does on code.
//
//	go test ./servers/filesystem/fsserver -run '^$' -bench CheckpointVsGit -benchtime 1x -count 1
//
// docs/BENCHMARKS.md has the figures and the ratios.

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/pathguard"
)

// benchTree writes n text files of about size bytes each under dir, spread over folders of 100.
func benchTree(b *testing.B, dir string, n, size int) {
	b.Helper()
	words := strings.Fields("func return if else for range var const type struct interface map chan go defer select case " +
		"switch package import nil true false err ctx value index count result buffer string int error byte len make")
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for i := range n {
		sb.Reset()
		for sb.Len() < size {
			for range 8 {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%d\n", rng.IntN(1_000_000))
		}
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func git(b *testing.B, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// touchOne rewrites one file of the tree with new content, as an edit between two verifies does.
func touchOne(b *testing.B, dir string, i int) {
	b.Helper()
	p := filepath.Join(dir, "pkg000", "file00000.go")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, append(data, fmt.Sprintf("// change %d\n", i)...), 0o644); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkCheckpointVsGit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	for _, size := range []struct {
		name        string
		files, each int
	}{{"small", 60, 5 << 10}, {"10k-200MB", 10_000, 20 << 10}} {
		ws := b.TempDir()
		benchTree(b, ws, size.files, size.each)
		// Past the racy window (checkpoint_scan.go), as a tree is by the time its first verify runs: otherwise the
		// files just written would be hashed again by the second checkpoint.
		time.Sleep(racyWindow + 100*time.Millisecond)
		g, err := pathguard.Open(ws, pathguard.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		ctx := context.Background()

		take := func(b *testing.B, st *ckStore) {
			st.mu.Lock()
			defer st.mu.Unlock()
			if _, _, _, err := st.take(ctx, g, ""); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(size.name+"/first/checkpoint", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st, err := openStore(g.Dir(), CheckpointOptions{Dir: b.TempDir()}, nopLogger)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				take(b, st)
				b.StopTimer()
				st.close()
				b.StartTimer()
			}
		})
		b.Run(size.name+"/first/git", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				os.RemoveAll(filepath.Join(ws, ".git"))
				git(b, ws, "init", "-q")
				b.StartTimer()
				git(b, ws, "add", "-A")
				git(b, ws, "commit", "-q", "-m", "checkpoint")
			}
		})
		st, err := openStore(g.Dir(), CheckpointOptions{Dir: b.TempDir()}, nopLogger)
		if err != nil {
			b.Fatal(err)
		}
		take(b, st) // the store now holds the tree, as at the second verify of a run
		i := 0
		b.Run(size.name+"/one-change/checkpoint", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				i++
				touchOne(b, ws, i)
				b.StartTimer()
				take(b, st)
			}
		})
		b.Run(size.name+"/one-change/git", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				i++
				touchOne(b, ws, i)
				b.StartTimer()
				git(b, ws, "add", "-A")
				git(b, ws, "commit", "-q", "-m", "checkpoint")
			}
		})
		st.close()
	}
}

var nopLogger = slog.New(slog.DiscardHandler)
