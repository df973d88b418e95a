package pathguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSwapRace swaps, on disk, a folder for a symlink to outside and a file for a symlink to a secret outside,
// as a hostile command running next to the server could, while other goroutines read, write, list, link, make and
// delete through the guard. os.Root resolves each path component by file descriptor, so whichever side of a swap
// an operation lands on, nothing outside may be read or written.
func TestSwapRace(t *testing.T) {
	f := newFixtureIn(t, ramDir(t))
	box := filepath.Join(f.ws, "box")
	if err := os.Mkdir(box, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(box, "secret.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(f.ws, "target.txt"), []byte("inside"), 0o644)
	before := f.hashOutside(t)

	const swaps = 2000
	var stop atomic.Bool
	var wg sync.WaitGroup
	swap := func(name, linkTarget string) {
		defer wg.Done()
		p, aside := filepath.Join(f.ws, name), filepath.Join(f.ws, name+".aside")
		for range swaps {
			if err := os.Rename(p, aside); err != nil {
				t.Error(err)
				return
			}
			os.Symlink(linkTarget, p)
			for range 10 { // leave the link in place a little, so the readers meet it often
				os.Lstat(p)
			}
			// The guard's writers may have made a fresh folder or file here meanwhile (inside, legitimately).
			var err error
			for range 1000 {
				os.RemoveAll(p)
				if err = os.Rename(aside, p); err == nil {
					break
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(2)
	go swap("box", "../outside")
	go swap("target.txt", "../outside/secret.txt")

	var reads, leaks atomic.Int64
	var workers sync.WaitGroup
	ops := []func(i int){
		func(int) {
			if _, b, err := f.g.ReadFile("box/secret.txt"); err == nil {
				reads.Add(1)
				if bytes.Contains(b, []byte(f.marker)) {
					leaks.Add(1)
				}
			}
		},
		func(int) {
			if _, b, err := f.g.ReadFile("target.txt"); err == nil && bytes.Contains(b, []byte(f.marker)) {
				leaks.Add(1)
			}
		},
		func(i int) { f.g.WriteFile("box/secret.txt", []byte(fmt.Sprint("w", i))) },
		func(i int) { f.g.WriteFile("box/new.txt", []byte(fmt.Sprint("n", i))) },
		func(i int) { f.g.WriteFile("target.txt", []byte(fmt.Sprint("t", i))) },
		func(int) {
			_, entries, _ := f.g.ReadDir("box")
			for _, e := range entries {
				if e.Name() == "dir" || e.Name() == "hard.txt" { // names that exist only in outside/
					leaks.Add(1)
				}
			}
		},
		func(int) { f.g.MkdirAll("box/made/deeper") },
		func(int) { f.g.Remove("box/new.txt", false) },
		func(int) {
			f.g.Rename("box/secret.txt", "box/secret.txt.moved", true)
			f.g.Rename("box/secret.txt.moved", "box/secret.txt", true)
		},
		func(int) { f.g.Stat("box/secret.txt") },
	}
	ops = append(ops, ops[0], ops[0], ops[1], ops[1]) // more readers: they are the ones a leak would show in
	for _, op := range ops {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := 0; !stop.Load(); i++ {
				op(i)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	workers.Wait()

	if after := f.hashOutside(t); after != before {
		t.Fatalf("something outside the workspace changed during the race:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n := leaks.Load(); n > 0 {
		t.Fatalf("%d reads or listings saw what is outside", n)
	}
	if reads.Load() == 0 {
		t.Fatal("no read ever succeeded: the race did not exercise the inside path")
	}
	t.Logf("%d swaps per target, %d successful reads of box/secret.txt, outside untouched", swaps, reads.Load())
}

// TestConcurrentWholeVersions: 16 writers and 16 readers on one file through the guard. Every read must see one
// writer's version, whole: the atomic rename never exposes a torn or partial file.
func TestConcurrentWholeVersions(t *testing.T) {
	f := newFixture(t)
	const size, writers, readers, perWriter = 64 << 10, 16, 16, 25
	version := func(v int) []byte {
		head := fmt.Sprintf("v%07d|", v)
		return bytes.Repeat([]byte(head), size/len(head))
	}
	if _, _, err := f.g.WriteFile("shared.txt", version(0)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var torn, reads atomic.Int64
	var wg, rg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if _, _, err := f.g.WriteFile("shared.txt", version(1+w*perWriter+i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for !stop.Load() {
				_, b, err := f.g.ReadFile("shared.txt")
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				var v int
				if _, err := fmt.Sscanf(string(b), "v%07d|", &v); err != nil || !bytes.Equal(b, version(v)) {
					torn.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	rg.Wait()
	if n := torn.Load(); n > 0 {
		t.Fatalf("%d of %d reads saw a torn or partial file", n, reads.Load())
	}
	entries, _ := os.ReadDir(f.ws)
	for _, e := range entries {
		if IsTempName(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	t.Logf("%d writes, %d reads, all whole", writers*perWriter, reads.Load())
}
