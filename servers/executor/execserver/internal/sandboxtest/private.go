//go:build linux

package sandboxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/protocol"
)

// The private home, temp and cache folders bounded at the act (finding 4: "400 MiB written into $XDG_CACHE_HOME is
// stopped but kept"). A backend that layers them makes every write there count against the same bound as the
// workspace's, in the command's own layer; one that does not leaves them to the disk cap's poll.

// privateDirsOf asks a command where its home, temp and cache folders are: the same paths on the host.
func privateDirsOf(t *testing.T, srv *Server) map[string]string {
	t.Helper()
	out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `printf '%s\n%s\n%s\n' "$HOME" "$TMPDIR" "$XDG_CACHE_HOME"`})
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("the command's home, temp and cache: %q", out.Stdout)
	}
	return map[string]string{"HOME": lines[0], "TMPDIR": lines[1], "XDG_CACHE_HOME": lines[2]}
}

// blocksOf is what path takes on disk, in bytes (0 when it is not there).
func blocksOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// RunPrivateDirsAtTheAct: under a cap of 100 MiB and 3,000 inodes, a quick `fallocate -l 1G` into $XDG_CACHE_HOME,
// $HOME and $TMPDIR, and 4,500 empty files into the cache. Guarded: each fallocate fails with ENOSPC in the command
// and nothing of it is kept; the files stop at the inode cap; a command started while the cache holds more than
// the cap adds nothing past the layer's floor and is told so, and can still clean the cache. Off (the positive
// control): the gigabytes and the 4,500 files are kept, and the command over the cap adds its 5 MB.
func RunPrivateDirsAtTheAct(t *testing.T, newBackend GuardBackend) {
	const maxBytes, maxInodes, files = 100 << 20, 3_000, 4_500
	for _, off := range []bool{false, true} {
		t.Run(offName[off], func(t *testing.T) {
			srv, _, _ := guardServer(t, newBackend, GuardOptions{Off: off, MaxBytes: maxBytes, MaxInodes: maxInodes}, false)
			dirs := privateDirsOf(t, srv)
			for _, name := range []string{"XDG_CACHE_HOME", "HOME", "TMPDIR"} {
				out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(`mkdir -p "$%s" && fallocate -l 1G "$%[1]s/big"; echo "exit $?"`, name)})
				big := filepath.Join(dirs[name], "big")
				kept := blocksOf(big)
				switch {
				case off && kept < 1<<30:
					t.Errorf("positive control: without the guard the 1 GiB in $%s is kept; %d bytes are (%q %q)", name, kept, out.Stdout, Clip(out.Stderr))
				case !off && kept > 0:
					t.Errorf("$%s keeps %d bytes of a 1 GiB fallocate past a cap of %d bytes", name, kept, maxBytes)
				case !off && (!strings.Contains(out.Stdout, "exit 1") || !strings.Contains(out.Stderr, "No space left")):
					t.Errorf("the fallocate into $%s was not refused at the act: %q %q", name, out.Stdout, Clip(out.Stderr))
				}
				_ = os.Remove(big)
			}

			out := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 300, Command: fmt.Sprintf(`mkdir -p "$XDG_CACHE_HOME/many" && cd "$XDG_CACHE_HOME/many" && seq %d | xargs touch; echo "exit $?"`, files)})
			ents, _ := os.ReadDir(filepath.Join(dirs["XDG_CACHE_HOME"], "many"))
			switch {
			case off && len(ents) != files:
				t.Errorf("positive control: without the guard all %d files land in the cache; %d did (%q)", files, len(ents), Clip(out.Stderr))
			case !off && len(ents) >= maxInodes:
				t.Errorf("%d files landed in the cache past the inode cap of %d", len(ents), maxInodes)
			case !off && !strings.Contains(out.Stderr, "No space left"):
				t.Errorf("the files past the inode cap were not refused at the act: %q", Clip(out.Stderr))
			}
			_ = os.RemoveAll(filepath.Join(dirs["XDG_CACHE_HOME"], "many"))

			// Over the cap from outside (an earlier run's cache, the person).
			filler := filepath.Join(dirs["XDG_CACHE_HOME"], "filler")
			if err := os.WriteFile(filler, make([]byte, 120<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			giveToOwner(t, dirs["XDG_CACHE_HOME"])
			time.Sleep(1100 * time.Millisecond) // a sandbox made ahead is made again once it is a second old
			more := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `head -c 5000000 /dev/zero > "$XDG_CACHE_HOME/more"; echo "exit $?"`})
			added := blocksOf(filepath.Join(dirs["XDG_CACHE_HOME"], "more")) >= 5000000
			if off != added {
				t.Errorf("guard off %v: a command over the cap added 5 MB to the cache: %v (%q %q)", off, added, more.Stdout, Clip(more.Stderr))
			}
			if !off && !strings.Contains(more.Stderr, "at the executor's cap") {
				t.Errorf("the command over the cap was not told: %q", Clip(more.Stderr))
			}
			clean := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `rm -f "$XDG_CACHE_HOME/filler" "$XDG_CACHE_HOME/more"; echo cleaned`})
			if _, err := os.Stat(filler); err == nil || clean.Stdout != "cleaned\n" {
				t.Errorf("the cleanup of the cache over the cap did not land: %+v", clean)
			}
		})
	}
}

// RunPrivateDirsKept: what commands write into the private folders is there for the next command, as a warm build
// needs: a file in each folder, the Go build cache of a real `go build` (of a package with no imports: the
// standard library's thousands of cache files would cost a minute of applying), and npm's cache of a real `npm cache add`
// of a package packed here (no network). Two commands that write the same cache file at once: the folder keeps one
// of the two versions whole (the later apply's), never a mix or nothing.
func RunPrivateDirsKept(t *testing.T, newBackend GuardBackend) {
	srv, _, _ := guardServer(t, newBackend, GuardOptions{}, false)
	dirs := privateDirsOf(t, srv)
	MustRun(t, srv.Session, protocol.RunCommandInput{Command: `for d in "$HOME" "$TMPDIR" "$XDG_CACHE_HOME"; do mkdir -p "$d/kept" && echo v1 > "$d/kept/f"; done`})
	out := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `cat "$HOME/kept/f" "$TMPDIR/kept/f" /tmp/kept/f "$XDG_CACHE_HOME/kept/f"`})
	if out.Stdout != "v1\nv1\nv1\nv1\n" {
		t.Errorf("the next command does not see the files of home, temp (at $TMPDIR and /tmp) and cache: %q %q", out.Stdout, Clip(out.Stderr))
	}
	for name, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "kept/f")); err != nil || string(b) != "v1\n" {
			t.Errorf("$%s/kept/f on the host: %q %v", name, b, err)
		}
	}

	{
		const project = `export PATH=/usr/local/go/bin:$PATH && mkdir -p "$HOME/proj" && cd "$HOME/proj" && printf 'module x\n\ngo 1.21\n' > go.mod && printf 'package x\n\nfunc F() int { return 1 }\n' > x.go && `
		build := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 300, Command: project + `go build -x . 2>&1 | grep -c /compile`})
		if strings.TrimSpace(build.Stdout) != "1" {
			t.Fatalf("go build in a command compiles once: %q %q", build.Stdout, Clip(build.Stderr))
		}
		again := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 300, Command: project + `go build -x . 2>&1 | grep -c /compile`})
		if strings.TrimSpace(again.Stdout) != "0" {
			t.Errorf("the next command's go build compiles again (%q): the first one's build cache was not kept", again.Stdout)
		}
	}
	{
		pack := MustRun(t, srv.Session, protocol.RunCommandInput{TimeoutSeconds: 300, Command: `cd "$(mktemp -d)" && printf '{"name":"goalbox-cache-probe","version":"1.0.0"}' > package.json && npm pack --silent >/dev/null && npm cache add ./goalbox-cache-probe-1.0.0.tgz && echo cached`})
		if !strings.HasSuffix(pack.Stdout, "cached\n") {
			t.Fatalf("npm cache add in a command: %q %q", pack.Stdout, Clip(pack.Stderr))
		}
		ls := MustRun(t, srv.Session, protocol.RunCommandInput{Command: `find "$npm_config_cache/_cacache" -type f | wc -l`})
		if n := strings.TrimSpace(ls.Stdout); n == "0" || n == "" {
			t.Errorf("the next command finds no file in npm's cache: %q %q", ls.Stdout, Clip(ls.Stderr))
		}
	}

	var wg sync.WaitGroup
	for _, v := range []string{"A", "B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			MustRun(t, srv.Session, protocol.RunCommandInput{Command: fmt.Sprintf(`head -c 1000000 /dev/zero | tr '\0' %s > "$XDG_CACHE_HOME/same"; sleep 0.3`, v)})
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(dirs["XDG_CACHE_HOME"], "same"))
	if err != nil || len(b) != 1000000 || (strings.Trim(string(b), "A") != "" && strings.Trim(string(b), "B") != "") {
		t.Errorf("two commands writing the same cache file: the folder keeps %d bytes, not one version whole (%v)", len(b), err)
	}
}
