package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// protectedSeed is a project with a repository, a nested one and editor settings, as a person's folder has them.
var protectedSeed = map[string]string{
	".git/HEAD":                     "ref: refs/heads/main\n",
	".git/config":                   "[core]\n\tbare = false\n",
	".git/hooks/pre-commit.sample":  "#!/bin/sh\n",
	".git/objects/ab/cdef":          "blob",
	".git/worktrees/feature/config": "[core]\n",
	"sub/.git/config":               "[core]\n",
	"sub/.git/hooks/README":         "hooks\n",
	"sub/main.go":                   "package main\n",
	"a/.vscode/tasks.json":          "{}\n",
	".vscode/settings.json":         "{}\n",
	".envrc":                        "export X=1\n",
	"x/hooks/post-checkout":         "#!/bin/sh\necho planted\n",
	"plain/file.txt":                "plain\n",
	"file.txt":                      "hello\n",
}

// protectedGuard is a workspace holding protectedSeed, guarded with the given protection (the defaults when nil).
func protectedGuard(t *testing.T, p *Protection) *fixture {
	t.Helper()
	f := newFixture(t)
	for name, content := range protectedSeed {
		fp := filepath.Join(f.ws, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(fp), 0o755))
		must(t, os.WriteFile(fp, []byte(content), 0o644))
	}
	if p == nil {
		var err error
		if p, err = NewProtection(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Open(f.ws, Options{Protection: p})
	must(t, err)
	t.Cleanup(func() { g.Close() })
	f.g = g
	return f
}

// snapshot is every file under the workspace with its content, and every folder, as the host sees them.
func (f *fixture) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(f.ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.ws, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	must(t, err)
	return out
}

// wantProtected fails unless err is the protection's refusal, naming the rule and the flag, with no host path.
func (f *fixture) wantProtected(t *testing.T, what string, err error, inputs ...string) {
	t.Helper()
	if !IsReason(err, ReasonProtected) {
		t.Errorf("%s: %v, want a refusal for a protected project file", what, err)
		return
	}
	if !strings.Contains(err.Error(), "pattern ") || !strings.Contains(err.Error(), "-unprotect") {
		t.Errorf("%s: the message does not name the pattern and the flag: %v", what, err)
	}
	f.checkMessage(t, err, inputs...)
}

// protectedTargets are paths under every default pattern, at the top and deeper down, as a client would name them:
// the pattern itself and, for a folder, a file in it.
func protectedTargets() []string {
	var out []string
	for _, pat := range DefaultProtected {
		p := strings.ReplaceAll(pat, "*", "feature")
		for _, at := range []string{p, "sub/deeper/" + p} {
			out = append(out, at)
			switch pat {
			case ".git/hooks", ".git/modules", ".vscode", ".idea", ".cursor", ".claude", ".codex":
				out = append(out, at+"/evil")
			}
		}
	}
	return append(out, ".GIT/hooks/post-checkout", ".Git/Config", "a/.VSCode/tasks.json", "sub/.git/hooks/post-checkout")
}

// TestProtectedWriteAndMkdir: a write or a new folder at any protected path, at any depth and in any case, is
// refused and leaves the tree as it was; the same write elsewhere lands, and protected files still read.
func TestProtectedWriteAndMkdir(t *testing.T) {
	f := protectedGuard(t, nil)
	before := f.snapshot(t)
	for _, p := range protectedTargets() {
		_, _, err := f.g.WriteFile(p, []byte("#!/bin/sh\necho planted\n"))
		f.wantProtected(t, "write "+p, err, p)
		if err := f.g.CheckChange("edit", p); !IsReason(err, ReasonProtected) {
			t.Errorf("CheckChange(%q) = %v", p, err)
		}
		_, err = f.g.MkdirAll(p)
		f.wantProtected(t, "mkdir "+p, err, p)
	}
	if after := f.snapshot(t); !equalMaps(before, after) {
		t.Errorf("refused writes changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	// Positive controls: names that only look alike, the repository's own data, and any ordinary file.
	for _, p := range []string{".git/HEAD", ".git/objects/ab/new", ".git/hooksx", "hooks/post-checkout", "git/config",
		".vscode-test/x", "envrc", "sub/main.go", "new/deep/file.txt"} {
		if _, _, err := f.g.WriteFile(p, []byte("ok")); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
		if err := f.g.CheckChange("edit", p); err != nil {
			t.Errorf("CheckChange(%q) = %v", p, err)
		}
	}
	if _, err := f.g.MkdirAll(".git/objects/cd"); err != nil {
		t.Errorf("mkdir in .git/objects: %v", err)
	}
	for _, p := range []string{".git/config", ".git/hooks/pre-commit.sample", "a/.vscode/tasks.json", ".envrc"} {
		if _, b, err := f.g.ReadFile(p); err != nil || string(b) != protectedSeed[p] {
			t.Errorf("read %s = %q, %v; reading a protected file is allowed", p, b, err)
		}
	}
	if _, entries, err := f.g.ReadDir(".git/hooks"); err != nil || len(entries) != 1 {
		t.Errorf("listing .git/hooks: %v, %v", entries, err)
	}
}

// TestProtectedRemove: deleting a protected path, or a folder that holds one however deep, is refused and deletes
// nothing at all; a folder without one is deleted.
func TestProtectedRemove(t *testing.T) {
	f := protectedGuard(t, nil)
	must(t, os.MkdirAll(filepath.Join(f.ws, "empty/.git/hooks"), 0o755))
	for _, p := range []string{".GIT/hooks/post-checkout", "case/.Git/Hooks/pre-commit"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(f.ws, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(f.ws, p), []byte("x"), 0o755))
	}
	before := f.snapshot(t)
	for _, c := range []struct {
		p         string
		recursive bool
	}{
		{".git/config", false}, {".git/hooks/pre-commit.sample", false}, {".git/hooks", true}, {".git", true},
		{".envrc", false}, {"a/.vscode/tasks.json", false}, {"a/.vscode", true}, {"a", true}, {"sub", true},
		{"sub/.git", true}, {"empty/.git/hooks", false}, {"empty", true}, {".git/worktrees", true},
		{".GIT/hooks/post-checkout", false}, {"case", true}, // on macOS and Windows .GIT is .git
	} {
		_, _, err := f.g.Remove(c.p, c.recursive)
		f.wantProtected(t, "delete "+c.p, err, c.p)
	}
	if after := f.snapshot(t); !equalMaps(before, after) {
		t.Errorf("refused deletes changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	for _, p := range []string{".git/objects/ab/cdef", "x", "plain", "sub/main.go"} {
		if _, deleted, err := f.g.Remove(p, true); err != nil || !deleted {
			t.Errorf("delete %s: %v, %v", p, deleted, err)
		}
	}
}

// TestProtectedRename: a move is refused when its source is protected or holds a protected path, when its
// destination is protected, and when a folder would put a protected path in place at its destination.
func TestProtectedRename(t *testing.T) {
	f := protectedGuard(t, nil)
	before := f.snapshot(t)
	for _, c := range []struct {
		src, dst  string
		overwrite bool
	}{
		{".git/config", "config.bak", false},
		{".git/hooks", "old-hooks", false},
		{".git", "git-moved", false},
		{"sub", "sub-moved", false},
		{"a/.vscode/tasks.json", "tasks.json", false},
		{"a", "b", false},
		{"x/hooks/post-checkout", ".git/hooks/post-checkout", false},
		{"file.txt", ".git/config", true},
		{"file.txt", "sub/deeper/.git/hooks/pre-push", false},
		{"file.txt", ".envrc", true},
		{"file.txt", ".mcp.json", false},
		{"file.txt", ".cursor/mcp.json", false},
		{"x", "fresh/.git", false},         // x/hooks/post-checkout would land at fresh/.git/hooks/post-checkout
		{"x", "deep/er/.GIT", false},       // in any case
		{"plain", "p/.claude", false},      // the folder would become a protected one
		{"x/hooks", "q/.git/hooks", false}, // a protected destination made of an ordinary folder
	} {
		_, _, err := f.g.Rename(c.src, c.dst, c.overwrite)
		f.wantProtected(t, "move "+c.src+" to "+c.dst, err, c.src, c.dst)
	}
	if after := f.snapshot(t); !equalMaps(before, after) {
		t.Errorf("refused moves changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	// Positive controls: the same folder to an ordinary place, a file of the repository's data, a file beside.
	for _, c := range []struct{ src, dst string }{{"x", "y"}, {".git/objects/ab/cdef", ".git/objects/ab/moved"}, {"file.txt", "sub/file.txt"}} {
		if _, _, err := f.g.Rename(c.src, c.dst, false); err != nil {
			t.Errorf("move %s to %s: %v", c.src, c.dst, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "y/hooks/post-checkout")); err != nil || string(b) != protectedSeed["x/hooks/post-checkout"] {
		t.Errorf("after the move: %q, %v", b, err)
	}
}

// TestProtectedSymlinks: links a command made on disk do not let a write, a new folder, a move or a delete reach a protected path through them.
func TestProtectedSymlinks(t *testing.T) {
	f := protectedGuard(t, nil)
	f.link(t, ".git", "g")             // a folder link to the repository
	f.link(t, ".git/hooks", "h")       // a folder link to the hooks
	f.link(t, ".git/config", "cfg")    // a file link to the config
	f.link(t, "../.git/hooks", "d/hk") // a relative link from deeper down
	f.link(t, "plain", "p")            // positive control: a link to an ordinary folder
	f.link(t, "sub/.git/hooks/new", "dangling")
	before := f.snapshot(t)
	for _, c := range []struct {
		what string
		err  func() error
	}{
		{"write cfg", func() error { _, _, err := f.g.WriteFile("cfg", []byte("[core]\n\thooksPath = /tmp\n")); return err }},
		{"write g/config", func() error { _, _, err := f.g.WriteFile("g/config", []byte("x")); return err }},
		{"write g/hooks/post-checkout", func() error { _, _, err := f.g.WriteFile("g/hooks/post-checkout", []byte("x")); return err }},
		{"write h/post-checkout", func() error { _, _, err := f.g.WriteFile("h/post-checkout", []byte("x")); return err }},
		{"write d/hk/post-checkout", func() error { _, _, err := f.g.WriteFile("d/hk/post-checkout", []byte("x")); return err }},
		{"write dangling", func() error { _, _, err := f.g.WriteFile("dangling", []byte("x")); return err }},
		{"check cfg", func() error { return f.g.CheckChange("edit", "cfg") }},
		{"mkdir g/hooks/sub", func() error { _, err := f.g.MkdirAll("g/hooks/sub"); return err }},
		{"move into h", func() error { _, _, err := f.g.Rename("file.txt", "h/post-merge", false); return err }},
		{"move over g/config", func() error { _, _, err := f.g.Rename("file.txt", "g/config", true); return err }},
		{"move out of g", func() error { _, _, err := f.g.Rename("g/hooks", "stolen", false); return err }},
		{"move x to g/../fresh/.git", func() error { _, _, err := f.g.Rename("x", "p/.git", false); return err }},
		{"delete g/config", func() error { _, _, err := f.g.Remove("g/config", false); return err }},
		{"delete h/pre-commit.sample", func() error { _, _, err := f.g.Remove("h/pre-commit.sample", false); return err }},
		{"delete g/hooks", func() error { _, _, err := f.g.Remove("g/hooks", true); return err }},
	} {
		f.wantProtected(t, c.what, c.err())
	}
	if after := f.snapshot(t); !equalMaps(before, after) {
		t.Errorf("refused operations changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	// Positive controls: a link to an ordinary folder is written through; deleting a link to a protected
	// file deletes the link, not the file.
	if _, _, err := f.g.WriteFile("p/through.txt", []byte("ok")); err != nil {
		t.Errorf("write through p: %v", err)
	}
	if _, deleted, err := f.g.Remove("cfg", false); err != nil || !deleted {
		t.Errorf("delete the link cfg: %v, %v", deleted, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, ".git/config")); err != nil || string(b) != protectedSeed[".git/config"] {
		t.Errorf(".git/config after deleting a link to it: %q, %v", b, err)
	}
}

// TestProtectedHardLink: a hard link to .git/config made on the host (as a command could) is replaced by a write,
// not written through: the write's temporary file is renamed over the link's name, so .git/config keeps its
// content. Moving and deleting the link change only the link.
func TestProtectedHardLink(t *testing.T) {
	f := protectedGuard(t, nil)
	cfg := filepath.Join(f.ws, ".git/config")
	must(t, os.Link(cfg, filepath.Join(f.ws, "hard")))
	if _, b, err := f.g.ReadFile("hard"); err != nil || string(b) != protectedSeed[".git/config"] {
		t.Fatalf("the link reads %q, %v", b, err)
	}
	if _, _, err := f.g.WriteFile("hard", []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n")); err != nil {
		t.Fatalf("write the link: %v", err)
	}
	if b, _ := os.ReadFile(cfg); string(b) != protectedSeed[".git/config"] {
		t.Errorf(".git/config was written through a hard link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "hard")); !strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the write did not land on the link's name: %q", b)
	}
	must(t, os.Remove(filepath.Join(f.ws, "hard")))
	must(t, os.Link(cfg, filepath.Join(f.ws, "hard2")))
	if _, _, err := f.g.Rename("hard2", "hard3", false); err != nil {
		t.Errorf("move the link: %v", err)
	}
	if _, _, err := f.g.Remove("hard3", false); err != nil {
		t.Errorf("delete the link: %v", err)
	}
	if b, err := os.ReadFile(cfg); err != nil || string(b) != protectedSeed[".git/config"] {
		t.Errorf(".git/config after moving and deleting a hard link to it: %q, %v", b, err)
	}
}

// TestProtectionAdjusted: -unprotect lets what it removes be changed, -protect adds a pattern, and a guard without
// a Protection protects nothing.
func TestProtectionAdjusted(t *testing.T) {
	p, err := NewProtection([]string{"secrets/*.pem"}, []string{".vscode"})
	must(t, err)
	f := protectedGuard(t, p)
	if _, _, err := f.g.WriteFile("a/.vscode/tasks.json", []byte("{}")); err != nil {
		t.Errorf("write under an unprotected .vscode: %v", err)
	}
	_, _, err = f.g.WriteFile("x/secrets/key.pem", []byte("k"))
	f.wantProtected(t, "write of an added pattern", err)
	if _, _, err := f.g.WriteFile(".git/config", []byte("x")); !IsReason(err, ReasonProtected) {
		t.Errorf("the other defaults stay: %v", err)
	}
	none, err := Open(t.TempDir(), Options{})
	must(t, err)
	defer none.Close()
	if _, _, err := none.WriteFile(".git/hooks/post-checkout", []byte("x")); err != nil {
		t.Errorf("no Protection: %v", err)
	}
}

// TestProtectedDeepTree: the check of a deleted folder looks at every entry however deep, at a cost linear in the
// entries; a tree deeper than the walk cap is refused whole rather than deleted unchecked.
func TestProtectedDeepTree(t *testing.T) {
	f := protectedGuard(t, nil)
	deep := filepath.Join(f.ws, "t")
	for range 300 {
		deep = filepath.Join(deep, "d")
	}
	must(t, os.MkdirAll(filepath.Join(deep, ".git/hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(deep, ".git/hooks/post-checkout"), []byte("x"), 0o755))
	before := f.g.ResolvedNames()
	_, _, err := f.g.Remove("t", true)
	f.wantProtected(t, "delete of a deep tree", err)
	if cost := f.g.ResolvedNames() - before; cost > 10*300 {
		t.Errorf("checking 300 levels resolved %d names", cost)
	}
	if _, err := os.Stat(filepath.Join(deep, ".git/hooks/post-checkout")); err != nil {
		t.Errorf("the hook was deleted: %v", err)
	}
	// Positive control: without the protected folder the same tree goes.
	must(t, os.RemoveAll(filepath.Join(deep, ".git")))
	if _, deleted, err := f.g.Remove("t", true); err != nil || !deleted {
		t.Errorf("delete of the deep tree: %v, %v", deleted, err)
	}
	tooDeep := filepath.Join(f.ws, "u")
	for range DefaultMaxTreeDepth + 5 {
		tooDeep = filepath.Join(tooDeep, "d")
	}
	must(t, os.MkdirAll(tooDeep, 0o755))
	if _, _, err := f.g.Remove("u", true); !IsReason(err, ReasonTooDeep) || !strings.Contains(err.Error(), "protected project files") {
		t.Errorf("delete of a tree past the walk cap: %v", err)
	}
	if _, err := os.Stat(tooDeep); err != nil {
		t.Errorf("a tree too deep to check was deleted: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestProtectedSwapRace: a command swaps a folder for a symlink into .git and back, as fast as it can, while the
// guard writes a file in that folder, moves a file into it, or deletes a file in it. Each is made from handles proved
// to be the checked folders (writeFolder, renameChecked, removeChecked), so none ever lands in .git. Positive
// control: the same race against a guard with nothing protected does reach .git, so the swaps do steer operations
// that are not held to the rule (and they did steer this guard's path-based writes: 132 of 20,000 in 3 s).
func TestProtectedSwapRace(t *testing.T) {
	type race struct {
		name   string
		link   string               // what d becomes between swaps
		setup  func(ws string)      // before each operation
		op     func(g *Guard) error // the operation through d
		landed func(ws string) bool // whether it reached .git (and undoes it)
	}
	hook := func(ws string) bool {
		p := filepath.Join(ws, ".git/hooks/post-checkout")
		if _, err := os.Lstat(p); err != nil {
			return false
		}
		os.Remove(p)
		return true
	}
	races := []race{
		{"write", ".git/hooks", func(string) {}, func(g *Guard) error {
			_, _, err := g.WriteFile("d/post-checkout", []byte("#!/bin/sh\necho planted\n"))
			return err
		}, hook},
		{"move", ".git/hooks", func(ws string) { os.WriteFile(filepath.Join(ws, "m.sh"), []byte("#!/bin/sh\n"), 0o755) }, func(g *Guard) error {
			_, _, err := g.Rename("m.sh", "d/post-checkout", true)
			return err
		}, hook},
		{"delete", ".git", func(ws string) {
			os.WriteFile(filepath.Join(ws, "d.aside/config"), []byte("decoy"), 0o644)
			os.WriteFile(filepath.Join(ws, "d/config"), []byte("decoy"), 0o644)
		}, func(g *Guard) error {
			_, _, err := g.Remove("d/config", false)
			return err
		}, func(ws string) bool {
			p := filepath.Join(ws, ".git/config")
			if _, err := os.Lstat(p); err == nil {
				return false
			}
			os.WriteFile(p, []byte("[core]\n"), 0o644)
			return true
		}},
	}
	run := func(r race, p *Protection) (hits, done int) {
		f := newFixtureIn(t, ramDir(t))
		must(t, os.MkdirAll(filepath.Join(f.ws, ".git/hooks"), 0o755))
		must(t, os.WriteFile(filepath.Join(f.ws, ".git/config"), []byte("[core]\n"), 0o644))
		must(t, os.MkdirAll(filepath.Join(f.ws, "d"), 0o755))
		g, err := Open(f.ws, Options{Protection: p})
		must(t, err)
		defer g.Close()
		d, aside := filepath.Join(f.ws, "d"), filepath.Join(f.ws, "d.aside")
		var stop atomic.Bool
		swapped := make(chan struct{})
		go func() {
			defer close(swapped)
			for !stop.Load() {
				if os.Rename(d, aside) != nil {
					continue
				}
				os.Symlink(r.link, d)
				for range 5 {
					os.Lstat(d)
				}
				os.Remove(d) // the link, or a folder the guard made meanwhile (then the rename below retries)
				for range 100 {
					if os.Rename(aside, d) == nil {
						break
					}
					os.RemoveAll(d)
				}
			}
		}()
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			r.setup(f.ws)
			if r.op(g) == nil {
				done++
			}
			if r.landed(f.ws) {
				if hits++; p == nil && hits >= 3 {
					break // the control has shown what it must
				}
			}
		}
		stop.Store(true)
		<-swapped
		return hits, done
	}
	p, err := NewProtection(nil, nil)
	must(t, err)
	for _, r := range races {
		if hits, done := run(r, p); hits > 0 || done == 0 {
			t.Errorf("%s, protected: %d reached .git (%d succeeded)", r.name, hits, done)
		}
		if hits, _ := run(r, nil); hits == 0 {
			t.Errorf("%s, control: with nothing protected the swaps never steered one into .git; the race is not exercised", r.name)
		}
	}
}

// TestProtectedGitlink: a file or symlink named .git (a gitlink, "gitdir: PATH") would make git use PATH's hooks
// and config, which no pattern names, so none may be made or replaced while .git/config or .git/hooks is
// protected; a .git folder may (git init makes one, and its hooks and config are protected where it is). A
// .git/commondir, which points git at another folder's config and hooks, is protected by the list itself.
func TestProtectedGitlink(t *testing.T) {
	f := protectedGuard(t, nil)
	must(t, os.MkdirAll(filepath.Join(f.ws, "mod"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.ws, "mod/.git"), []byte("gitdir: ../.git/modules/mod\n"), 0o644)) // a submodule's
	must(t, os.WriteFile(filepath.Join(f.ws, "gitlink.txt"), []byte("gitdir: ../evil\n"), 0o644))
	before := f.snapshot(t)
	for _, c := range []struct {
		what string
		err  func() error
	}{
		{"write fresh/.git", func() error { _, _, err := f.g.WriteFile("fresh/.git", []byte("gitdir: ../evil\n")); return err }},
		{"write .GIT in a folder", func() error { _, _, err := f.g.WriteFile("plain/.GIT", []byte("gitdir: ../evil\n")); return err }},
		{"replace a submodule's gitlink", func() error { _, _, err := f.g.WriteFile("mod/.git", []byte("gitdir: ../evil\n")); return err }},
		{"edit a submodule's gitlink", func() error { return f.g.CheckChange("edit", "mod/.git") }},
		{"move a file to .git", func() error { _, _, err := f.g.Rename("gitlink.txt", "plain/.git", false); return err }},
		{"write .git/commondir", func() error { _, _, err := f.g.WriteFile("sub/.git/commondir", []byte("../../x\n")); return err }},
	} {
		f.wantProtected(t, c.what, c.err())
	}
	if after := f.snapshot(t); !equalMaps(before, after) {
		t.Errorf("refused gitlinks changed the tree:\n%s", strings.Join(diffKeys(before, after), "\n"))
	}
	// Positive controls: a .git folder is made and moved into place; a gitlink is read and deleted.
	if _, err := f.g.MkdirAll("newrepo/.git/objects"); err != nil {
		t.Errorf("mkdir newrepo/.git: %v", err)
	}
	if _, _, err := f.g.Rename("plain", "other/.git", false); err != nil {
		t.Errorf("move a plain folder to other/.git: %v", err)
	}
	if _, b, err := f.g.ReadFile("mod/.git"); err != nil || !strings.HasPrefix(string(b), "gitdir:") {
		t.Errorf("read mod/.git: %q, %v", b, err)
	}
	if _, deleted, err := f.g.Remove("mod/.git", false); err != nil || !deleted {
		t.Errorf("delete mod/.git: %v, %v", deleted, err)
	}
	// With git's files unprotected, the rule goes with them.
	p, err := NewProtection(nil, []string{".git/config", ".git/hooks"})
	must(t, err)
	u := protectedGuard(t, p)
	if _, _, err := u.g.WriteFile("fresh/.git", []byte("gitdir: ../evil\n")); err != nil {
		t.Errorf("gitlink with git's files unprotected: %v", err)
	}
}

func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, "changed or gone: "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "new: "+k)
		}
	}
	return out
}

// TestResolveOpenMatchesResolve: resolveOpen, which resolve and the protected operations use, follows every path as
// the reference implementation by paths (and os.Root) does — the same real path, the same "missing" tail, the same refusals — over the escape corpus's
// links and more, and ends on a handle of the folder it names.
func TestResolveOpenMatchesResolve(t *testing.T) {
	f := newFixture(t)
	plantLinks(t, f)
	f.link(t, "sub", "d1")
	f.link(t, "d1/deep", "d2")
	f.link(t, "../sub/deep", "sub/deep/back")
	f.link(t, "d2/../inner.txt", "via")
	for _, p := range []string{".", "file.txt", "sub", "sub/deep", "sub/deep/x.txt", "missing", "missing/a/b", "sub/missing",
		"d1", "d1/inner.txt", "d2", "d2/x.txt", "d2/../inner.txt", "via", "sub/deep/back/back/x.txt", "sub/up", "sub/deep/up2",
		"chain1", "chain2", "loop1", "out_file", "out_dir", "out_dir/x", "out_abs", "root_link", "dangling_out",
		"dangling_dir_out", "evil", "self", "self/self/file.txt", "self/sub/up", "ws_abs_link", "file.txt/x", "missing/../x",
		"sub/chain3", "d1/chain3"} {
		wr, wfi, werr := f.g.resolveByPath("t", p)
		gr, gfi, _, hp, release, gerr := f.g.resolveOpen("t", p)
		if (werr == nil) != (gerr == nil) || (werr != nil && reasonOf(werr) != reasonOf(gerr)) {
			t.Errorf("%s: resolve error %v, resolveOpen error %v", p, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		release()
		if wr != gr || (wfi == nil) != (gfi == nil) || (wfi != nil && !os.SameFile(wfi, gfi)) {
			t.Errorf("%s: resolve %q (%v), resolveOpen %q (%v)", p, wr, wfi != nil, gr, gfi != nil)
		}
		if gfi != nil && gfi.IsDir() && hp != gr {
			t.Errorf("%s: the handle is of %q, not of the folder %q", p, hp, gr)
		}
	}
}

func reasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return err.Error()
}

// TestProtectedDeepPathCost: with protection the checks of a write, a delete and a move cost a few lookups per name
// of the path, as os.Root's own resolution does, not the sum of the depths of its prefixes (a write 2,000 folders
// down resolved four million names, 25 s, with resolve).
func TestProtectedDeepPathCost(t *testing.T) {
	f := protectedGuard(t, nil)
	const depth = 2000
	dir := strings.TrimSuffix(strings.Repeat("d/", depth), "/")
	if _, err := f.g.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		op   func() error
	}{
		{"write", func() error { _, _, err := f.g.WriteFile(dir+"/f.txt", []byte("x")); return err }},
		{"move", func() error { _, _, err := f.g.Rename(dir+"/f.txt", dir+"/g.txt", false); return err }},
		{"delete", func() error { _, _, err := f.g.Remove(dir+"/g.txt", false); return err }},
		{"refused write", func() error {
			_, _, err := f.g.WriteFile(dir+"/.git/hooks/x", []byte("x"))
			if IsReason(err, ReasonProtected) {
				return nil
			}
			return err
		}},
	} {
		before := f.g.ResolvedNames()
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cost := f.g.ResolvedNames() - before; cost > 30*depth {
			t.Errorf("%s %d folders down resolved %d names", c.name, depth, cost)
		}
	}
}
