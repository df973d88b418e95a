package pathguard

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzGuard checks the guard's one invariant against real files: whatever the input, an operation either is
// refused or acts inside the workspace. Each input gets a fresh workspace full of escape symlinks (plantLinks),
// with the sentinel tree around it; the input is used as a path for Clean, Stat, ReadFile, ReadDir, WriteFile,
// MkdirAll, and, with the second string, as link and target for Symlink and as source and destination for
// Rename. After them: nothing outside changed, no secret was returned, every returned path is clean and
// relative, and every symlink that was not planted leads inside.
//
//	go test -run '^$' -fuzz FuzzGuard -fuzztime 3m ./pathguard/
func FuzzGuard(f *testing.F) {
	for _, seed := range [][2]string{
		{"../x", "file.txt"},
		{"a/../../x", "../outside/secret.txt"},
		{"/workspace_evil/x", "/workspace/file.txt"},
		{"/workspace/../etc/passwd", "/etc/passwd"},
		{"out_dir/new.txt", "out_file"},
		{"self/l", "../x"},
		{"up2", "sub/up"},
		{"d2", "sub/deep"},
		{"dangling_out", "chain1"},
		{"root_link/tmp/x", "loop1"},
		{"x\x00y", "a"},
		{"sub/deep/new", "self/../outside"},
	} {
		f.Add(seed[0], seed[1])
	}
	// Every input rebuilds the workspace five times and writes with fsync: on a RAM disk, when there is one, the
	// fuzzer spends its time on inputs rather than on the disk.
	dir := ramDir(f)
	fx := newFixtureIn(f, dir)
	before := fx.hashOutside(f)
	planted := map[string]bool{}
	f.Fuzz(func(t *testing.T, p, q string) {
		checkRel := func(op, rel string) {
			if rel == "" {
				return
			}
			if path.Clean(rel) != rel || path.IsAbs(rel) || escapes(rel) || strings.IndexByte(rel, 0) >= 0 {
				t.Fatalf("%s(%q, %q) returned the unclean or outside path %q", op, p, q, rel)
			}
		}
		// Each step starts from a fresh workspace, so one step cannot hide another (a write taking the name a
		// symlink would have used) and a failure reproduces from its input alone.
		steps := []func(g *Guard){
			func(g *Guard) {
				if rel, err := g.Clean(p); err == nil {
					checkRel("Clean", rel)
				} else {
					fx.checkMessage(t, err, p)
				}
				if rel, _, err := g.Stat(p); err == nil {
					checkRel("Stat", rel)
					real, err := filepath.EvalSymlinks(filepath.Join(fx.ws, rel))
					if err == nil && real != fx.ws && !strings.HasPrefix(real, fx.ws+"/") {
						t.Fatalf("Stat(%q) succeeded on %q, which the kernel resolves outside", p, rel)
					}
				}
				if _, b, err := g.ReadFile(p); err == nil {
					fx.noMarker(t, b)
				}
				if _, entries, err := g.ReadDir(p); err == nil {
					for _, e := range entries {
						if e.Name() == "hard.txt" || e.Name() == "ws_evil" || e.Name() == "outside" {
							t.Fatalf("ReadDir(%q) listed %q, which is outside", p, e.Name())
						}
					}
				}
			},
			func(g *Guard) {
				if rel, _, err := g.WriteFile(p, []byte("fuzz")); err == nil {
					checkRel("WriteFile", rel)
				} else {
					fx.checkMessage(t, err, p)
				}
			},
			func(g *Guard) {
				if rel, err := g.MkdirAll(p); err == nil {
					checkRel("MkdirAll", rel)
				}
			},
			func(g *Guard) {
				if rs, rd, err := g.Rename(q, p, true); err == nil {
					checkRel("Rename", rs)
					checkRel("Rename", rd)
				} else {
					fx.checkMessage(t, err, p, q)
				}
			},
		}
		for _, step := range steps {
			resetWorkspace(t, fx)
			if len(planted) == 0 {
				filepath.WalkDir(fx.ws, func(s string, d fs.DirEntry, err error) error {
					if err == nil && d.Type()&fs.ModeSymlink != 0 {
						planted[s] = true
					}
					return nil
				})
			}
			step(fx.g)
			if after := fx.hashOutside(t); after != before {
				t.Fatalf("input %q, %q changed something outside the workspace:\nbefore:\n%s\nafter:\n%s", p, q, before, after)
			}
			checkNewLinks(t, fx, planted, p, q)
		}
	})
}

// checkNewLinks fails when a symlink that was not planted leads out of the workspace, as the kernel would follow
// it: from the real folder that holds it.
func checkNewLinks(t *testing.T, fx *fixture, planted map[string]bool, p, q string) {
	filepath.WalkDir(fx.ws, func(s string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 || planted[s] {
			return nil
		}
		target, _ := os.Readlink(s)
		dir, err := filepath.EvalSymlinks(filepath.Dir(s))
		if err != nil {
			t.Fatalf("input %q, %q: link %s: %v", p, q, s, err)
		}
		dest := filepath.Join(dir, target)
		if filepath.IsAbs(target) || (dest != fx.ws && !strings.HasPrefix(dest, fx.ws+"/")) {
			t.Fatalf("input %q, %q left a symlink %s -> %s that leads out", p, q, strings.TrimPrefix(s, fx.ws), target)
		}
		return nil
	})
}

// resetWorkspace gives each fuzz input the same starting workspace, so a failure reproduces from its input alone.
func resetWorkspace(t testing.TB, f *fixture) {
	t.Helper()
	f.g.Close()
	if err := os.RemoveAll(f.ws); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(f.ws, "sub/deep"), 0o755)
	for name, content := range map[string]string{"file.txt": "hello\n", "sub/inner.txt": "inner\n", "sub/deep/x.txt": "x\n"} {
		os.WriteFile(filepath.Join(f.ws, name), []byte(content), 0o644)
	}
	plantLinks(t, f)
	g, err := Open(f.ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
}

// FuzzClean checks Clean alone, fast enough for millions of inputs: an accepted path is clean, relative, inside
// and free of NUL bytes, and it names the same place the input did — a relative input cleans to itself, an
// absolute one sits under the advertised root or the real path, whole elements compared.
//
//	go test -run '^$' -fuzz FuzzClean -fuzztime 1m ./pathguard/
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", ".", "..", "../x", "a/../../x", "/workspace", "/workspace_evil/x", "/workspace/../etc",
		"/workspacex", "//workspace//a", "/workspace/./../workspace/a", "a\x00b", "./a/./b/"} {
		f.Add(s)
	}
	g, err := Open(f.TempDir(), Options{AdvertisedRoot: "/workspace"})
	if err != nil {
		f.Fatal(err)
	}
	defer g.Close()
	real := g.Dir()
	for _, s := range []string{real, real + "/x", real + "_evil/x", real + "/../" + path.Base(real) + "_evil", real + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := g.Clean(p)
		if err != nil {
			if !IsReason(err, ReasonOutside) && !IsReason(err, ReasonInvalid) {
				t.Fatalf("Clean(%q) refused with %v", p, err)
			}
			if strings.IndexByte(err.Error(), 0) >= 0 {
				t.Fatalf("Clean(%q): message holds a NUL byte", p)
			}
			return
		}
		if rel == "" || path.Clean(rel) != rel || path.IsAbs(rel) || escapes(rel) || strings.IndexByte(rel, 0) >= 0 {
			t.Fatalf("Clean(%q) = %q: not clean, relative and inside", p, rel)
		}
		if !path.IsAbs(p) {
			if want := path.Clean(p); p != "" && want != rel {
				t.Fatalf("Clean(%q) = %q, want %q", p, rel, want)
			}
			return
		}
		c := path.Clean(p)
		for _, root := range []string{"/workspace", real} {
			if c == root && rel == "." || strings.HasPrefix(c, root+"/") && c[len(root)+1:] == rel {
				return
			}
		}
		t.Fatalf("Clean(%q) = %q, which is not where the input points", p, rel)
	})
}
