//go:build unix

package fsserver

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goalbox/goalbox/pkg/pathguard"
	"github.com/goalbox/goalbox/pkg/protocol"
	"golang.org/x/sys/unix"
)

// deepTree makes dir/name, a chain of levels nested folders "d", each holding a file "f.txt" next to it (so a walk
// must come back to every level, and search reads a file at each). It works from an open descriptor of each folder
// with mkdirat and openat, since a path of thousands of levels is longer than PATH_MAX.
func deepTree(t testing.TB, dir, name string, levels int) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < levels; i++ {
		f, err := unix.Openat(fd, "f.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(f, []byte("level\n")); err != nil {
			t.Fatal(err)
		}
		unix.Close(f)
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd)
}

// deepPath is "d/d/.../d", n levels.
func deepPath(n int) string { return strings.TrimSuffix(strings.Repeat("d/", n), "/") }

// treeOps are the tools that walk a tree, each run on a fresh tree of the given depth in folder "tree".
var treeOps = []struct {
	name string
	run  func(s *Filesystem, levels int) error
}{
	{"search", func(s *Filesystem, _ int) error {
		_, err := s.search(context.Background(), protocol.SearchFilesInput{Pattern: "absent", Path: "tree"})
		return err
	}},
	{"list", func(s *Filesystem, levels int) error {
		// The deepest folders, named by their whole path, ten levels down from there.
		_, err := s.list(context.Background(), protocol.ListFilesInput{Path: "tree/" + deepPath(levels-10), Depth: 10})
		return err
	}},
	{"move", func(s *Filesystem, _ int) error {
		_, err := s.move(context.Background(), protocol.MovePathInput{Source: "tree/d", Destination: "moved/d"})
		return err
	}},
	{"delete", func(s *Filesystem, _ int) error {
		_, err := s.delete(context.Background(), protocol.DeletePathInput{Path: "tree", Recursive: true})
		return err
	}},
}

// treeCost runs op on a fresh tree of levels levels and returns the path components it had the kernel resolve.
func treeCost(t *testing.T, opts pathguard.Options, levels int, op func(*Filesystem, int) error) (int64, error) {
	ws := t.TempDir()
	deepTree(t, ws, "tree", levels)
	g, err := pathguard.Open(ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := &Filesystem{g: g, opts: Options{}.withDefaults(), seed: maphash.MakeSeed()}
	before := g.ResolvedNames()
	err = op(s, levels)
	return g.ResolvedNames() - before, err
}

// TestTreeOpsLinear is the deep-tree attack, measured in work rather than time: search, list, move and delete
// of a tree twice as deep must cost at most about twice as much (a search of 3,000 levels took 16 s and a move of
// 5,000 levels 73 s when every folder and file was opened by its path from the workspace, which costs the sum of
// the depths). The work is the number of path components handed to the kernel (Guard.ResolvedNames).
//
// With protected project files (the servers' configuration) the move and the delete also check every entry of the
// tree against the patterns: that check must be linear too.
func TestTreeOpsLinear(t *testing.T) {
	const n = 1000
	prot, err := pathguard.NewProtection(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*pathguard.Protection{nil, prot} {
		opts := pathguard.Options{MaxTreeDepth: 2*n + 10, Protection: p} // both depths within the cap: the whole tree is walked
		for _, op := range treeOps {
			c1, err := treeCost(t, opts, n, op.run)
			if err != nil {
				t.Fatalf("%s of %d levels: %v", op.name, n, err)
			}
			c2, err := treeCost(t, opts, 2*n, op.run)
			if err != nil {
				t.Fatalf("%s of %d levels: %v", op.name, 2*n, err)
			}
			t.Logf("%s (protected %v): %d levels %d names, %d levels %d names (%.2fx)", op.name, p != nil, n, c1, 2*n, c2, float64(c2)/float64(c1))
			if c2 > 2*c1+100 || c1 > 10*n {
				t.Errorf("%s costs more than linear in its levels: %d names resolved at %d levels, %d at %d levels", op.name, c1, n, c2, 2*n)
			}
		}
	}
}

// TestTreeOpsDeep runs the tree tools with the default caps on trees deeper than the walk cap (1024 levels): 3,000
// levels, as in the deep-tree attack, and 10,000 (a path of it is 20,000 bytes, past PATH_MAX). Search and move must stop at the
// cap with an error that says so, having done work bounded by the cap, not by the tree; list (ten levels at most)
// and delete (which needs no cap: it moves deep folders up rather than hold a handle per level) must succeed. The
// tools run in that order on one tree: the refused ones leave it as it was.
//
// With protected project files (the servers' configuration), a delete first walks the folder for protected paths
// (nothing is deleted when it holds one), within the walk cap: a tree deeper than the cap is refused whole, with the
// cap's error and what to do instead, after work bounded by the cap, and is left as it was.
func TestTreeOpsDeep(t *testing.T) {
	prot, err := pathguard.NewProtection(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, levels := range []int{3000, 10000} {
		ws := t.TempDir()
		deepTree(t, ws, "tree", levels)
		pg, err := pathguard.Open(ws, pathguard.Options{Protection: prot})
		if err != nil {
			t.Fatal(err)
		}
		ps := &Filesystem{g: pg, opts: Options{}.withDefaults(), seed: maphash.MakeSeed()}
		before := pg.ResolvedNames()
		_, err = ps.delete(context.Background(), protocol.DeletePathInput{Path: "tree", Recursive: true})
		cost := pg.ResolvedNames() - before
		if !pathguard.IsReason(err, pathguard.ReasonTooDeep) || !strings.Contains(err.Error(), "protected project files") ||
			!strings.Contains(err.Error(), "delete it with a command") || !strings.HasPrefix(err.Error(), "delete") {
			t.Errorf("protected delete of %d levels: %v, want the depth cap's error", levels, err)
		}
		if cost > 10*pathguard.DefaultMaxTreeDepth {
			t.Errorf("protected delete of %d levels resolved %d names before stopping at the cap", levels, cost)
		}
		if _, err := os.Stat(filepath.Join(ws, "tree", "d", "f.txt")); err != nil {
			t.Errorf("a refused delete deleted: %v", err)
		}
		pg.Close()
		g, err := pathguard.Open(ws, pathguard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := &Filesystem{g: g, opts: Options{}.withDefaults(), seed: maphash.MakeSeed()}
		for _, op := range treeOps {
			before := g.ResolvedNames()
			err := op.run(s, levels)
			cost := g.ResolvedNames() - before
			t.Logf("%s of %d levels: %d names resolved, %v", op.name, levels, cost, err)
			switch op.name {
			case "search", "move":
				if !pathguard.IsReason(err, pathguard.ReasonTooDeep) || !strings.Contains(err.Error(), "more than 1024 folders deep") || !strings.HasPrefix(err.Error(), op.name) {
					t.Errorf("%s of %d levels: %v, want the depth cap's error", op.name, levels, err)
				}
				if cost > 10*pathguard.DefaultMaxTreeDepth {
					t.Errorf("%s of %d levels resolved %d names before stopping at the cap", op.name, levels, cost)
				}
			default:
				if err != nil {
					t.Errorf("%s of %d levels: %v", op.name, levels, err)
				}
				if cost > int64(10*levels) {
					t.Errorf("%s of %d levels resolved %d names", op.name, levels, cost)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(ws, "tree")); !os.IsNotExist(err) {
			t.Errorf("after the delete of %d levels: %v", levels, err)
		}
		g.Close()
	}
}

// BenchmarkTreeOps runs each tree tool on a chain of 1,000 and of 2,000 levels (the walk cap raised to allow both):
// the time per call, and the names resolved per call (names/op), should double, not quadruple. Each call gets a
// fresh tree, built with the timer stopped.
//
//	go test -run '^$' -bench TreeOps -benchtime 3x ./fsserver
func BenchmarkTreeOps(b *testing.B) {
	for _, op := range treeOps {
		for _, levels := range []int{1000, 2000} {
			b.Run(fmt.Sprintf("%s/%d", op.name, levels), func(b *testing.B) {
				var names int64
				for range b.N {
					b.StopTimer()
					ws := b.TempDir()
					deepTree(b, ws, "tree", levels)
					g, err := pathguard.Open(ws, pathguard.Options{MaxTreeDepth: 2*levels + 10})
					if err != nil {
						b.Fatal(err)
					}
					s := &Filesystem{g: g, opts: Options{}.withDefaults(), seed: maphash.MakeSeed()}
					b.StartTimer()
					if err := op.run(s, levels); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					names += g.ResolvedNames()
					g.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(names)/float64(b.N), "names/op")
			})
		}
	}
}
