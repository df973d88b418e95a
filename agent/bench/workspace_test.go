package bench

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// treeHash fingerprints every path, mode and content under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, info.Mode(), info.Size())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func oneExercise(t testing.TB, lang, slug string) Exercise {
	t.Helper()
	exs, err := Discover(benchmarkDir(t), Filter{Languages: []string{lang}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs {
		if ex.Slug == slug {
			return ex
		}
	}
	t.Fatalf("%s/%s not found", lang, slug)
	return Exercise{}
}

func TestPrepareCopiesWithoutReferenceSolutions(t *testing.T) {
	// java/bowling has .approaches; go/alphametics has editor files; python/two-bucket is plain.
	for _, id := range [][2]string{{"java", "bowling"}, {"go", "alphametics"}, {"python", "two-bucket"}, {"javascript", "grep"}} {
		ex := oneExercise(t, id[0], id[1])
		before := treeHash(t, ex.Dir)
		ws, err := Prepare(ex, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(ws.Dir()) != ex.Slug {
			t.Errorf("%s: exercise folder is %q, want the slug", ex.ID(), filepath.Base(ws.Dir()))
		}
		err = filepath.WalkDir(ws.Root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if slices.Contains(hiddenDirs, d.Name()) {
				t.Errorf("%s: copied %s", ex.ID(), p)
			}
			if d.Type().IsRegular() {
				info, _ := d.Info()
				if info.Mode().Perm()&0o200 == 0 {
					t.Errorf("%s: %s is not writable", ex.ID(), p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(append([]string{}, ex.Solution...), ex.Test...) {
			if _, err := os.Stat(filepath.Join(ws.Dir(), f)); err != nil {
				t.Errorf("%s: %s not copied", ex.ID(), f)
			}
		}
		if _, err := os.Stat(filepath.Join(ws.Dir(), ".docs", "instructions.md")); err != nil {
			t.Errorf("%s: instructions not copied", ex.ID())
		}
		// Edit everything in the copy, then check the source did not change.
		for _, f := range ex.Solution {
			if err := os.WriteFile(filepath.Join(ws.Dir(), f), []byte("changed"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Prepare(ex, filepath.Dir(filepath.Dir(filepath.Dir(ws.Root)))); err != nil {
			t.Fatal(err)
		}
		if after := treeHash(t, ex.Dir); after != before {
			t.Errorf("%s: the source changed", ex.ID())
		}
	}
}

func TestPrepareActivatesTests(t *testing.T) {
	js := oneExercise(t, "javascript", "grep")
	ws, err := Prepare(js, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := os.ReadFile(filepath.Join(ws.Dir(), "grep.spec.js"))
	if strings.Contains(string(spec), "xit(") || strings.Contains(string(spec), "xtest(") || !strings.Contains(string(spec), "  it(") {
		t.Error("javascript xit/xtest not turned on")
	}
	java := oneExercise(t, "java", "bowling")
	ws, err = Prepare(java, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	test, _ := os.ReadFile(filepath.Join(ws.Dir(), java.Test[0]))
	if strings.Contains(string(test), "@Disabled(") || !strings.Contains(string(test), "@Test") {
		t.Error("java @Disabled not removed")
	}
}

func TestPrepareRefusesRunDirInsideSource(t *testing.T) {
	ex := oneExercise(t, "go", "bowling")
	if _, err := Prepare(ex, filepath.Join(ex.Dir, "run")); err == nil {
		t.Error("a run folder inside the benchmark was accepted")
	}
}

func TestRestoreUndoesTestTampering(t *testing.T) {
	ex := oneExercise(t, "python", "two-bucket")
	ws, err := Prepare(ex, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := ws.Dir()
	write := func(rel, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(ex.Test[0], "def test_nothing():\n    pass\n")
	write("conftest.py", "import pytest\n")
	write("helper.py", "X = 1\n")                             // a helper the model may keep
	write(ex.Solution[0], "def measure(*a):\n    return 1\n") // the model's solution stays
	write("../pytest.ini", "[pytest]\naddopts = -k nothing\n")
	write("__pycache__/two_bucket_test.cpython-311.pyc", "forged")
	changed, err := Restore(ex, ws)
	if err != nil {
		t.Fatal(err)
	}
	test, _ := os.ReadFile(filepath.Join(dir, ex.Test[0]))
	orig, _ := os.ReadFile(filepath.Join(ex.Dir, ex.Test[0]))
	if string(test) != string(orig) {
		t.Error("the test file was not restored")
	}
	for _, gone := range []string{"conftest.py", "../pytest.ini", "__pycache__"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s survived Restore", gone)
		}
	}
	for _, kept := range []string{"helper.py", ex.Solution[0]} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s was removed", kept)
		}
	}
	sol, _ := os.ReadFile(filepath.Join(dir, ex.Solution[0]))
	if !strings.Contains(string(sol), "return 1") {
		t.Error("Restore touched the solution")
	}
	for _, want := range []string{"two-bucket/" + ex.Test[0], "two-bucket/conftest.py", "two-bucket/__pycache__"} {
		if !slices.Contains(changed, want) {
			t.Errorf("changed list %v lacks %s", changed, want)
		}
	}
	again, err := Restore(ex, ws)
	if err != nil || len(again) != 0 {
		t.Errorf("second Restore changed %v (%v)", again, err)
	}
}

func TestRestoreDoesNotFollowPlantedSymlinks(t *testing.T) {
	ex := oneExercise(t, "rust", "acronym")
	ws, err := Prepare(ex, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	// The model replaces tests/ with a link out of the workspace, and the test file with a link to its solution.
	if err := os.RemoveAll(filepath.Join(ws.Dir(), "tests")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Dir(), "tests")); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ex, ws); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Restore wrote through the symlink: %v", entries)
	}
	info, err := os.Lstat(filepath.Join(ws.Dir(), "tests"))
	if err != nil || !info.IsDir() {
		t.Errorf("tests/ is not a real folder again: %v %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), ex.Test[0])); err != nil {
		t.Error("test file not restored")
	}
}
