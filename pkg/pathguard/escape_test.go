package pathguard

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goalbox/goalbox/pkg/ciskip"
)

// plantLinks puts on disk, inside the workspace, the symlinks a hostile command could leave there.
func plantLinks(t testing.TB, f *fixture) {
	t.Helper()
	for name, target := range map[string]string{
		"out_file":         "../outside/secret.txt",
		"out_abs":          f.base + "/outside/secret.txt",
		"out_dir":          "../outside",
		"out_dir_abs":      f.base + "/outside",
		"chain1":           "chain2",
		"chain2":           "sub/chain3",
		"sub/chain3":       "../out_file",
		"loop1":            "loop2",
		"loop2":            "loop1",
		"root_link":        "/",
		"dangling_out":     "../outside/created.txt",
		"dangling_dir_out": "../outside/newdir/created.txt",
		"evil":             "../ws_evil",
		"self":             ".",
		"sub/up":           "../file.txt",
		"sub/deep/up2":     "../../file.txt",
		"ws_abs_link":      f.ws + "/file.txt",
	} {
		f.link(t, target, name)
	}
}

// attack is one way out. run returns whatever data the operation handed back and its error.
type attack struct {
	name    string
	setup   func(t *testing.T, f *fixture)
	run     func(f *fixture) ([]byte, error)
	allowed bool                           // the operation may succeed: it is harmless (checked by check and the hash)
	check   func(t *testing.T, f *fixture) // extra proof after the attack
	echo    func(f *fixture) []string      // client inputs that may appear in the message (they hold host paths)
}

func read(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, b, err := f.g.ReadFile(p); return b, err }
}
func write(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, _, err := f.g.WriteFile(p, []byte("pwned")); return nil, err }
}
func list(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) {
		_, entries, err := f.g.ReadDir(p)
		var names []byte
		for _, e := range entries {
			names = append(names, e.Name()+"\n"...)
		}
		return names, err
	}
}
func stat(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, _, err := f.g.Stat(p); return nil, err }
}
func mkdir(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, err := f.g.MkdirAll(p); return nil, err }
}
func remove(p string, recursive bool) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, _, err := f.g.Remove(p, recursive); return nil, err }
}
func move(src, dst string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { _, _, err := f.g.Rename(src, dst, true); return nil, err }
}

// edit is the filesystem server's edit: read, change, write back. Both halves must refuse.
func edit(p string) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) {
		_, b, rerr := f.g.ReadFile(p)
		_, _, werr := f.g.WriteFile(p, append(b, "pwned"...))
		if rerr == nil || werr == nil {
			return b, nil
		}
		return b, werr
	}
}

// all runs several operations on one path; every one must refuse.
func all(ops ...func(*fixture) ([]byte, error)) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) {
		var out []byte
		var last error
		for _, op := range ops {
			b, err := op(f)
			out = append(out, b...)
			if err == nil {
				return out, nil
			}
			last = err
		}
		return out, last
	}
}

func withBase(build func(base string) func(*fixture) ([]byte, error)) func(*fixture) ([]byte, error) {
	return func(f *fixture) ([]byte, error) { return build(f.base)(f) }
}

func echoBase(f *fixture) []string {
	return []string{f.base + "/ws_evil/secret.txt", f.base + "/ws_evil/new.txt", f.base + "/ws_evil", f.base + "/secret.txt",
		f.ws + "/../ws_evil/secret.txt", f.base + "/outside/secret.txt", f.base + "/outside", f.base + "/ws_evil/made"}
}

func noLink(name string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		if _, err := os.Lstat(filepath.Join(f.ws, name)); err == nil {
			t.Fatalf("a refused symlink %s was created", name)
		}
	}
}

func mkfifo(name string) func(t *testing.T, f *fixture) {
	return func(t *testing.T, f *fixture) {
		if err := mkfifoAt(filepath.Join(f.ws, name), 0o644); err != nil {
			ciskip.Skipf(t, "cannot make a FIFO here: %v", err)
		}
	}
}

var escapeCorpus = []attack{
	// ".." in many spellings.
	{name: "dotdot file", run: read("../secret.txt")},
	{name: "dotdot after a name", run: read("sub/../../secret.txt")},
	{name: "dot then dotdot", run: read("./../secret.txt")},
	{name: "dotdot with trailing slash", run: list("../outside/")},
	{name: "two names three dotdots", run: read("a/b/../../../secret.txt")},
	{name: "doubled slashes", run: read("..//outside//secret.txt")},
	{name: "dotdot alone", run: all(stat(".."), list(".."), list("sub/deep/../../.."))},
	{name: "write via dotdot", run: write("../outside/new.txt")},
	{name: "mkdir via dotdot", run: mkdir("../outside/made")},
	{name: "remove via dotdot", run: remove("../outside/secret.txt", false)},
	{name: "move out via dotdot", run: move("file.txt", "../outside/stolen.txt")},
	{name: "move in via dotdot", run: move("../outside/secret.txt", "stolen.txt")},
	// Absolute paths.
	{name: "absolute outside", run: all(read("/etc/passwd"), write("/etc/passwd"), stat("/etc/passwd"))},
	{name: "advertised root prefix", run: all(read("/workspace_evil/x"), write("/workspace_evil/x"), list("/workspace_evil"))},
	{name: "advertised root dotdot", run: all(read("/workspace/../etc/passwd"), read("/workspace/../outside/secret.txt"))},
	// CVE-2025-53110: a sibling whose name starts with the workspace's.
	{name: "real path prefix read", run: withBase(func(b string) func(*fixture) ([]byte, error) { return read(b + "/ws_evil/secret.txt") }), echo: echoBase},
	{name: "real path prefix write", run: withBase(func(b string) func(*fixture) ([]byte, error) { return write(b + "/ws_evil/new.txt") }), echo: echoBase},
	{name: "real path prefix list", run: withBase(func(b string) func(*fixture) ([]byte, error) { return list(b + "/ws_evil") }), echo: echoBase},
	{name: "real path prefix mkdir", run: withBase(func(b string) func(*fixture) ([]byte, error) { return mkdir(b + "/ws_evil/made") }), echo: echoBase},
	{name: "sibling via dotdot", run: all(read("../ws_evil/secret.txt"), write("../ws_evil/new.txt"))},
	{name: "real path then dotdot", run: func(f *fixture) ([]byte, error) { return read(f.ws + "/../ws_evil/secret.txt")(f) }, echo: echoBase},
	{name: "real path of a file next to the workspace", run: withBase(func(b string) func(*fixture) ([]byte, error) { return read(b + "/secret.txt") }), echo: echoBase},
	// CVE-2025-53109: a symlink inside that points out.
	{name: "symlink file read", run: read("out_file")},
	{name: "symlink file write", run: write("out_file")},
	{name: "symlink file edit", run: edit("out_file")},
	{name: "symlink file stat", run: stat("out_file")},
	{name: "absolute symlink read", run: read("out_abs")},
	{name: "absolute symlink write", run: write("out_abs")},
	{name: "symlinked folder read", run: read("out_dir/secret.txt")},
	{name: "symlinked folder write", run: write("out_dir/new.txt")},
	{name: "symlinked folder list", run: all(list("out_dir"), list("out_dir/"), list("out_dir/dir"))},
	{name: "absolute symlinked folder list", run: all(list("out_dir_abs"), read("out_dir_abs/secret.txt"))},
	{name: "symlinked folder mkdir", run: mkdir("out_dir/made")},
	{name: "symlinked folder remove", run: all(remove("out_dir/secret.txt", false), remove("out_dir/dir", true))},
	{name: "rename the escaping link", run: move("out_file", "renamed")},
	{name: "rename through the link", run: move("out_dir/secret.txt", "stolen.txt")},
	{name: "rename into the link", run: move("file.txt", "out_dir/file.txt")},
	{name: "chained symlinks", run: all(read("chain1"), write("chain1"), stat("chain1"))},
	{name: "symlink loop", run: all(read("loop1"), write("loop1"), list("loop1"))},
	{name: "symlink to /", run: all(read("root_link/etc/passwd"), list("root_link"), list("root_link/"))},
	{
		name: "write under symlink to /", run: write("root_link/tmp/pathguard-escape-probe"),
		check: func(t *testing.T, f *fixture) {
			if _, err := os.Lstat("/tmp/pathguard-escape-probe"); err == nil {
				os.Remove("/tmp/pathguard-escape-probe")
				t.Fatal("a write through a link to / created /tmp/pathguard-escape-probe")
			}
		},
	},
	{name: "dangling symlink out", run: write("dangling_out")},
	{name: "mkdir at a dangling symlink out", run: all(mkdir("dangling_out"), mkdir("dangling_dir_out"), mkdir("dangling_out/x"))},
	{name: "move onto a dangling symlink out", run: move("file.txt", "dangling_out/x")},
	{name: "dangling symlink out, missing folder", run: write("dangling_dir_out")},
	{name: "symlink to sibling", run: all(read("evil/secret.txt"), list("evil"))},
	{name: "absolute symlink into the workspace", run: all(read("ws_abs_link"), write("ws_abs_link"))},
	// Creating symlinks that point out.
	// Moving links so that they lead out.
	{name: "move link up", run: move("sub/up", "up2")},
	{name: "move folder holding a link up", run: move("sub/deep", "d2")},
	{name: "move link into a linked folder", run: move("sub/up", "self/up3"), check: noLink("up3")},
	// Things that are not files or folders.
	{name: "FIFO", setup: mkfifo("fifo"), run: all(read("fifo"), write("fifo"), list("fifo"), edit("fifo"))},
	{name: "FIFO behind a link", setup: func(t *testing.T, f *fixture) { mkfifo("sub/fifo")(t, f); f.link(t, "sub/fifo", "to_fifo") },
		run: all(read("to_fifo"), write("to_fifo"))},
	{
		name: "device", run: all(read("null"), write("null"), edit("null")),
		setup: func(t *testing.T, f *fixture) {
			if err := mknodNull(filepath.Join(f.ws, "null")); err != nil {
				ciskip.Skipf(t, "cannot make a device node here (needs root with CAP_MKNOD): %v", err)
			}
		},
	},
	{
		name: "unix socket", run: all(read("sock"), write("sock")),
		setup: func(t *testing.T, f *fixture) {
			l, err := net.Listen("unix", filepath.Join(f.ws, "sock"))
			if err != nil {
				ciskip.Skipf(t, "cannot make a unix socket here: %v", err)
			}
			t.Cleanup(func() { l.Close() })
		},
	},
	// Names the file system or the guard must refuse.
	{name: "NUL byte", run: all(read("file.txt\x00../../secret.txt"), write("a\x00b"), mkdir("d\x00"))},
	{name: "very long name", run: all(write(strings.Repeat("n", 300)), read(strings.Repeat("n", 300)), mkdir(strings.Repeat("n", 300)))},
	{name: "very long path", run: all(read(strings.Repeat("../", 2000)+"secret.txt"), write(strings.Repeat("a/", 3000)+"../"+strings.Repeat("../", 3001)+"x"))},
}

func TestEscapeCorpus(t *testing.T) {
	if len(escapeCorpus) < 30 {
		t.Fatalf("only %d attacks", len(escapeCorpus))
	}
	for _, a := range escapeCorpus {
		t.Run(a.name, func(t *testing.T) {
			f := newFixture(t)
			plantLinks(t, f)
			if a.setup != nil {
				a.setup(t, f)
			}
			before := f.hashOutside(t)
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				b, err := a.run(f)
				done <- result{b, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the operation hung")
			}
			if after := f.hashOutside(t); after != before {
				t.Fatalf("something outside the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			f.noMarker(t, r.data)
			switch {
			case r.err != nil:
				var echo []string
				if a.echo != nil {
					echo = a.echo(f)
				}
				f.checkMessage(t, r.err, echo...)
				t.Logf("refused: %v", r.err)
			case !a.allowed:
				t.Fatalf("not refused (data %q)", r.data)
			}
			if a.check != nil {
				a.check(t, f)
			}
		})
	}
}

// Deleting an escaping link deletes the link, never what it points to; a walk does not descend through it.
func TestEscapeLinksHarmlessOps(t *testing.T) {
	f := newFixture(t)
	plantLinks(t, f)
	before := f.hashOutside(t)
	for _, p := range []string{"out_file", "out_dir/", "out_abs"} {
		if _, deleted, err := f.g.Remove(p, true); err != nil || !deleted {
			t.Fatalf("Remove(%q) = %v, %v", p, deleted, err)
		}
	}
	if _, fi, err := f.g.Lstat("root_link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat(root_link) = %v, %v", fi, err)
	}
	err := f.g.Walk(context.Background(), ".", WalkOptions{}, func(e *Entry) error {
		p := e.Path()
		if strings.Contains(p, "secret") || strings.HasPrefix(p, "root_link/") {
			t.Errorf("walk reached %s", p)
		}
		if e.Type.IsRegular() {
			_, b, err := f.g.ReadFile(p)
			if err != nil {
				t.Errorf("read %s during walk: %v", p, err)
			}
			f.noMarker(t, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.hashOutside(t) != before {
		t.Fatal("something outside the workspace changed")
	}
	// The tree still holds a folder with links out; deleting it removes the links, not their targets.
	if _, deleted, err := f.g.Remove("sub", true); err != nil || !deleted {
		t.Fatalf("Remove(sub) = %v, %v", deleted, err)
	}
	os.MkdirAll(filepath.Join(f.ws, "tree/a"), 0o755)
	f.link(t, "../../../outside", "tree/a/out")
	f.link(t, "/", "tree/root")
	if _, _, err := f.g.Remove("tree", true); err != nil {
		t.Fatalf("Remove(tree) = %v", err)
	}
	if f.hashOutside(t) != before {
		t.Fatal("a recursive delete of a folder holding links out changed something outside")
	}
}

// A hard link to a file outside, made on disk: os.Root cannot tell it from any other file (a hard link is the
// file). A read sees the outside content — a known limit, documented; the sandbox's command confinement is what
// keeps such links from being made. A write replaces the link (temp file + rename), so the outside file is
// never changed.
func TestHardLinkToOutside(t *testing.T) {
	f := newFixture(t)
	if err := os.Link(filepath.Join(f.base, "outside/hard.txt"), filepath.Join(f.ws, "hard")); err != nil {
		ciskip.Skipf(t, "cannot make a hard link here: %v", err)
	}
	before := f.hashOutside(t)
	_, b, err := f.g.ReadFile("hard")
	if err != nil || !strings.Contains(string(b), f.marker) {
		t.Fatalf("ReadFile(hard) = %q, %v: the documented limit changed; update docs/confinement-files.md", b, err)
	}
	if _, _, err := f.g.WriteFile("hard", []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	if f.hashOutside(t) != before {
		t.Fatal("writing a hard-linked file changed the file outside")
	}
	if fi, _ := os.Stat(filepath.Join(f.ws, "hard")); linkCount(fi) != 1 {
		t.Fatal("after the write the workspace file is still linked to the outside one")
	}
}

// The error for an escape names only what the client gave, never the real target of the link.
func TestEscapeMessageHidesTarget(t *testing.T) {
	f := newFixture(t)
	plantLinks(t, f)
	for _, p := range []string{"out_file", "out_abs", "chain1", "out_dir/secret.txt", "dangling_out"} {
		for _, op := range []func(*fixture) ([]byte, error){read(p), write(p)} {
			_, err := op(f)
			if !IsReason(err, ReasonOutside) {
				t.Errorf("%s: %v, want %q", p, err, ReasonOutside)
				continue
			}
			if strings.Contains(err.Error(), "outside/") || strings.Contains(err.Error(), f.base) {
				t.Errorf("%s: message shows the link's target: %q", p, err)
			}
		}
	}
}
