package pathguard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixture is a workspace with a sentinel tree around it:
//
//	base/ws/            the workspace (advertised as /workspace)
//	base/ws_evil/       a sibling whose name starts with the workspace's (CVE-2025-53110)
//	base/outside/       secrets and a folder outside
//	base/secret.txt     a secret next to the workspace
//
// Every secret holds marker, so a read that escaped shows up in returned data.
type fixture struct {
	g      *Guard
	base   string // real path of the folder holding everything
	ws     string // real path of the workspace
	marker string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir())
}

// newFixtureIn builds the fixture in dir, an empty folder the caller owns.
func newFixtureIn(t testing.TB, dir string) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{base: base, ws: filepath.Join(base, "ws"), marker: "SECRET-" + randomTempName()[len(tempPrefix):]}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"ws/sub/deep", "ws_evil", "outside/dir"} {
		must(os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	for name, content := range map[string]string{
		"ws_evil/secret.txt":    f.marker + " ws_evil",
		"outside/secret.txt":    f.marker + " outside",
		"outside/dir/inner.txt": f.marker + " inner",
		"outside/hard.txt":      f.marker + " hard",
		"secret.txt":            f.marker + " base",
		"ws/file.txt":           "hello\n",
		"ws/sub/inner.txt":      "inner\n",
		"ws/sub/deep/x.txt":     "x\n",
	} {
		must(os.WriteFile(filepath.Join(base, filepath.FromSlash(name)), []byte(content), 0o644))
	}
	// The servers' configuration: the protected project files are the defaults, so every attack meets the code
	// paths a served workspace takes (writes from a checked folder handle among them).
	prot, err := NewProtection(nil, nil)
	must(err)
	g, err := Open(f.ws, Options{Protection: prot})
	must(err)
	t.Cleanup(func() { g.Close() })
	f.g = g
	return f
}

// link makes a symlink on disk inside the workspace, as a command run in the sandbox could.
func (f *fixture) link(t testing.TB, target, name string) {
	t.Helper()
	p := filepath.Join(f.ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// hashOutside fingerprints everything under base except the workspace: names, types, modes, link targets and
// contents. Any creation, change or removal outside shows as a different fingerprint.
func (f *fixture) hashOutside(t testing.TB) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(f.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == f.ws {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", strings.TrimPrefix(p, f.base), fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkMessage fails when err is not a *Error that names a reason, or when its message shows a host path outside
// the workspace (the workspace's own real path and the caller's own input may appear).
func (f *fixture) checkMessage(t testing.TB, err error, inputs ...string) {
	t.Helper()
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a *pathguard.Error", err, err)
	}
	if ge.Reason == "" {
		t.Fatalf("error %q has no reason", err)
	}
	msg := err.Error()
	for _, in := range inputs {
		msg = strings.ReplaceAll(msg, fmt.Sprintf("%q", printable(in)), "")
		msg = strings.ReplaceAll(msg, in, "")
	}
	msg = strings.ReplaceAll(msg, f.ws, "")
	if strings.Contains(msg, f.base) {
		t.Fatalf("error message shows a host path outside the workspace: %q", err)
	}
}

func (f *fixture) noMarker(t testing.TB, data []byte) {
	t.Helper()
	if strings.Contains(string(data), f.marker) {
		t.Fatalf("read returned a secret from outside the workspace: %q", data)
	}
}

// ramDir is an empty folder on a RAM disk when there is one (else on t.TempDir()): for tests whose many fsyncs
// and renames would otherwise measure the disk rather than the guard.
func ramDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "pathguard-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
